#include "sim/live/nemesis.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "faults/listeners.h"
#include "faults/priority.h"
#include "process/stopped.h"
#include "sim/engine/fault_kind.h"
#include "sim/engine/run_setup.h"
#include "sim/live/live_env.h"
#include "sim/live/redis_node.h"

namespace lockbench {

struct Nemesis::Connection {
    int fd = -1;
    std::optional<int> client;
    std::string buffer;
    bool background = false;  // the client's background channel: acknowledgements only
};

namespace {

sockaddr_un unix_address(const std::filesystem::path& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.string().size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + path.string());
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    return addr;
}

// send() on sockets with MSG_NOSIGNAL: a client that died must not take lockbench with it
// (SIGPIPE); plain write() on files.
void write_all(int fd, const std::string& text, bool socket = true) {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
        const ssize_t n = socket ? ::send(fd, p, left, MSG_NOSIGNAL) : ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the peer is gone (killed): nothing to tell it
        p += n;
        left -= static_cast<size_t>(n);
    }
}

}  // namespace

Nemesis::Nemesis(std::vector<FaultSpec> faults, std::filesystem::path socket_path, std::filesystem::path log_path)
    : socket_path_(std::move(socket_path)),
      schedule_(std::move(faults), *this, [this](const std::string& line) { write_all(log_fd_, line, false); }) {
    log_fd_ = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd_ < 0) throw std::runtime_error(log_path.string() + ": " + std::strerror(errno));
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un addr = unix_address(socket_path_);
    ::unlink(socket_path_.c_str());
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 64) != 0)
        throw std::runtime_error("nemesis socket " + socket_path_.string() + ": " + std::strerror(errno));
    if (::pipe2(wake_fd_, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
}

Nemesis::~Nemesis() {
    stop();
    for (int fd : {log_fd_, listen_fd_, wake_fd_[0], wake_fd_[1]})
        if (fd >= 0) ::close(fd);
    ::unlink(socket_path_.c_str());
}

bool Nemesis::skews_clients() const {
    return world_needs(schedule_.faults()).client_clocks;
}

bool Nemesis::skews_nodes() const {
    return world_needs(schedule_.faults()).node_clocks;
}

void Nemesis::set_clocks(std::vector<ClockControl*> clients, std::vector<ClockControl*> nodes) {
    client_clocks_ = std::move(clients);
    node_clocks_ = std::move(nodes);
}

bool Nemesis::needs_proxies() const {
    return world_needs(schedule_.faults()).proxies;
}

bool Nemesis::needs_peer_proxies() const {
    return world_needs(schedule_.faults()).peer_proxies;
}

bool Nemesis::reaches_servers() const {
    return lockbench::reaches_servers(world_needs(schedule_.faults()));
}

void Nemesis::set_world(ProxyHub* proxies, std::vector<LockServer*> nodes, LockService* service) {
    proxies_ = proxies;
    nodes_ = std::move(nodes);
    service_ = service;
}

void Nemesis::start(std::vector<pid_t> clients, long long start_at_ns, std::uint64_t seed) {
    pids_ = std::move(clients);
    {
        std::lock_guard lock(mutex_);
        schedule_.start(static_cast<int>(pids_.size()), start_at_ns, monotonic_ns(), seed);
    }
    running_ = true;
    restart_thread_ = std::thread([this] { restart_loop(); });
    thread_ = std::thread([this] { loop(); });
}

void Nemesis::stop() {
    if (!thread_.joinable()) return;
    running_ = false;
    write_all(wake_fd_[1], "x", false);
    thread_.join();
    {
        std::lock_guard lock(mutex_);
        schedule_.heal(monotonic_ns());  // waits for a node still coming back
    }
    {
        std::lock_guard lock(restart_mutex_);
        restart_stop_ = true;
        restart_cv_.notify_all();
    }
    if (restart_thread_.joinable()) restart_thread_.join();
    if (proxies_) proxies_->heal_all();  // every path passes again, whatever set it
    for (auto& c : connections_)
        if (c.fd >= 0) ::close(c.fd);
    connections_.clear();
}

void Nemesis::loop() {
    run_fault_thread_ahead();  // its timers on time on a loaded machine (it starts no process)
    while (running_) {
        std::vector<pollfd> fds{{wake_fd_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        for (const auto& c : connections_) fds.push_back({c.fd, POLLIN, 0});  // poll skips fd -1
        ::poll(fds.data(), fds.size(), poll_timeout_ms());
        if (fds[0].revents) break;
        if (fds[1].revents & POLLIN) {
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) connections_.push_back({fd, std::nullopt, ""});
        }
        for (size_t i = 2; i < fds.size(); ++i)
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(connections_[i - 2]);
        std::lock_guard lock(mutex_);
        schedule_.run_due(monotonic_ns());
    }
}

// Until the schedule's next timer is due, and at most 100 ms.
int Nemesis::poll_timeout_ms() const {
    std::lock_guard lock(mutex_);
    const auto next_ns = schedule_.next_due_ns();
    if (!next_ns) return 100;
    return static_cast<int>(std::min(100LL, std::max(0LL, (*next_ns - monotonic_ns()) / 1000000 + 1)));
}

void Nemesis::read_from(Connection& c) {
    char buf[512];
    const ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n <= 0) {
        // Gone (finished or killed): out of the poll set, and let go of any gate.
        ::close(c.fd);
        c.fd = -1;
        if (!c.client || c.background) return;
        std::lock_guard lock(mutex_);
        schedule_.client_gone(*c.client, monotonic_ns());
        return;
    }
    c.buffer.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = c.buffer.find('\n')) != std::string::npos;) {
        const std::string line = c.buffer.substr(0, nl);
        c.buffer.erase(0, nl + 1);
        on_line(c, line);
    }
}

void Nemesis::on_line(Connection& c, const std::string& line) {
    if (line.rfind("hello ", 0) == 0) {
        c.client = std::stoi(line.substr(6));
    } else if (line.rfind("background ", 0) == 0) {
        c.client = std::stoi(line.substr(11));
        c.background = true;
    } else if (line.rfind("reach ", 0) == 0 && c.client) {
        if (const auto p = parse_reported_point(line.substr(6))) on_reach(*c.client, *p);
        else reply(*c.client, "go\n");
    }
}

// The schedule puts every due fault in place before the client hears anything; a killed
// client hears nothing, a held one not yet.
void Nemesis::on_reach(int client, Point p) {
    std::lock_guard lock(mutex_);
    switch (schedule_.reach(client, p, monotonic_ns())) {
        case FaultSchedule::Answer::go: reply(client, "go\n"); break;
        case FaultSchedule::Answer::disarm: reply(client, "disarm\n"); break;
        case FaultSchedule::Answer::held:
        case FaultSchedule::Answer::killed: break;
    }
}

void Nemesis::reply(int client, const char* word) {
    for (const auto& c : connections_)
        if (c.client == client && !c.background && c.fd >= 0) write_all(c.fd, word);
}

// ---- the actuator -------------------------------------------------------------------------

// Signals go to the client's process group: an external adapter's children stop and die too.
// A pause is in place once every process of the group has stopped (process/stopped.h): kill()
// returns before, and a client answered "go" meanwhile would act before its pause.
// A client whose adapter came from the matrix's pool has two groups: its own and the
// adapter's (adapter_pool.h).
std::vector<pid_t> Nemesis::groups_of(int client) const {
    std::vector<pid_t> groups{pids_.at(static_cast<size_t>(client))};
    if (static_cast<size_t>(client) < adapter_groups_.size() && adapter_groups_[static_cast<size_t>(client)] > 0)
        groups.push_back(adapter_groups_[static_cast<size_t>(client)]);
    return groups;
}
bool Nemesis::pause(int client) {
    const std::vector<pid_t> groups = groups_of(client);
    for (const pid_t g : groups) ::kill(-g, SIGSTOP);
    bool stopped = true;
    for (const pid_t g : groups) stopped = wait_group_none_running(g, std::chrono::seconds(10)) && stopped;
    return stopped;
}
void Nemesis::resume(int client) {
    for (const pid_t g : groups_of(client)) ::kill(-g, SIGCONT);
}
void Nemesis::kill(int client) {
    for (const pid_t g : groups_of(client)) ::kill(-g, SIGKILL);
}

// Only the client process itself (its sigwait thread, background_control.h), not its group:
// an adapter's children would die of SIGUSR1. The schedule goes on once the client says the
// hold or the release is in place, or after kAckLimit (a client that is SIGSTOPped too, or
// gone, cannot answer; at at_ms 0 its channel is not read yet).
void Nemesis::signal_background(int client, int signal, const std::string& ack) {
    constexpr int kAckLimitMs = 2000;
    if (::kill(pids_.at(static_cast<size_t>(client)), signal) != 0) return;
    const auto channel = std::ranges::find_if(connections_, [&](const Connection& c) {
        return c.background && c.client == client && c.fd >= 0;
    });
    if (channel == connections_.end()) return;
    const long long deadline_ns = monotonic_ns() + kAckLimitMs * 1000000LL;
    for (;;) {
        const size_t nl = channel->buffer.find('\n');
        if (nl != std::string::npos) {
            const std::string line = channel->buffer.substr(0, nl);
            channel->buffer.erase(0, nl + 1);
            if (line == ack) return;
            continue;
        }
        pollfd fd{channel->fd, POLLIN, 0};
        const long long left_ms = (deadline_ns - monotonic_ns()) / 1000000;
        if (left_ms <= 0 || ::poll(&fd, 1, static_cast<int>(left_ms)) <= 0) return;
        char buf[64];
        const ssize_t n = ::read(channel->fd, buf, sizeof buf);
        if (n <= 0) return;
        channel->buffer.append(buf, static_cast<size_t>(n));
    }
}

ClockControl& Nemesis::clock_of(ClockOf clock) const {
    const auto& clocks = clock.whose == ClockOf::Whose::node ? node_clocks_ : client_clocks_;
    return *clocks.at(static_cast<size_t>(clock.index));
}

void Nemesis::step_clock(ClockOf clock, long long jump_ms) { clock_of(clock).jump(std::chrono::milliseconds(jump_ms)); }
void Nemesis::drift_clock(ClockOf clock, double rate) { clock_of(clock).set_rate(rate); }

// The proxies are named "c<client>-n<node>", "c<client>-store" and "repl"; without proxies
// (no fault names a path) there is nothing to set.
LinkProxy* Nemesis::proxy_of(LinkPath path) const {
    if (!proxies_) return nullptr;
    std::string name = "repl";
    if (path.to != LinkPath::To::replication) name = "c" + std::to_string(path.client) + "-";
    if (path.to == LinkPath::To::node) name += "n" + std::to_string(path.node);
    if (path.to == LinkPath::To::store) name += "store";
    return proxies_->find(name);
}

void Nemesis::set_link(LinkPath path, std::optional<Direction> direction, const LinkFault& fault) {
    if (!proxies_) return;
    if (path.to == LinkPath::To::peer) return set_peer_link(path.node, path.peer, direction, fault);
    LinkProxy* link = proxy_of(path);
    if (!link) return;
    if (direction) link->set(*direction, fault);
    else link->set_both(fault);
}

FaultActuator::HeldPath Nemesis::held_path(LinkPath path) {
    LinkProxy* link = path.to == LinkPath::To::node ? proxy_of(path) : nullptr;
    if (!link) return HeldPath::answered;
    const LinkProxy::HeldReplies held = link->held_replies();
    return held.answered ? HeldPath::answered : held.asked ? HeldPath::asked : HeldPath::quiet;
}

void Nemesis::mark_requests() {
    if (proxies_) proxies_->mark_requests();
}

long long Nemesis::first_request(LinkPath path) {
    LinkProxy* link = path.to == LinkPath::To::node ? proxy_of(path) : nullptr;
    return link ? link->first_request() : 0;
}

// The bytes from server `from` to server `to` go upstream through the proxies of the
// connections `from` opened ("s<from>-s<to>-…") and downstream through those `to` opened.
// A fault on them also ends the connections that go straight between the two servers, once
// the proxies carry it: a ZooKeeper server calls a peer with a lower id back at the election
// port that peer announced, its real one, so in a steady ensemble some election connections
// bypass the proxies. While the fault cuts or holds both directions, no new one forms (the
// call-back answers a connection that reached it through the proxy); under a delay, or a
// fault on one direction only, one may form again. Ending them failing makes the run not as
// written (unmet()).
void Nemesis::set_peer_link(int from, int to, std::optional<Direction> direction, const LinkFault& fault) {
    const auto set = [&](const std::string& prefix, bool flipped) {
        for (LinkProxy* link : proxies_->find_prefix(prefix)) {
            if (!direction) link->set_both(fault);
            else if (!flipped) link->set(*direction, fault);
            else link->set(*direction == Direction::upstream ? Direction::downstream : Direction::upstream, fault);
        }
    };
    set("s" + std::to_string(from) + "-s" + std::to_string(to) + "-", false);
    set("s" + std::to_string(to) + "-s" + std::to_string(from) + "-", true);
    if (fault.kind == LinkFault::Kind::pass) return;
    try {
        end_direct_connections(nodes_.at(static_cast<size_t>(from))->pid(), nodes_.at(static_cast<size_t>(to))->pid());
    } catch (const std::exception& e) {  // the link is not cut as written: the run is no evidence
        std::lock_guard lock(links_mutex_);
        links_unmet_.push_back("the peer link between servers " + std::to_string(from) + " and " + std::to_string(to) +
                               " was not cut: the connections straight between them stayed up (" + e.what() + ")");
    }
}

void Nemesis::crash(int node) {
    {
        // A node still coming back from the last crash (a repeating one) comes back first.
        std::unique_lock lock(restart_mutex_);
        restart_cv_.wait(lock, [&] { return !restarts_in_flight_.contains(node); });
    }
    nodes_.at(static_cast<size_t>(node))->kill();
}
bool Nemesis::pause_node(int node) { return nodes_.at(static_cast<size_t>(node))->pause(); }
void Nemesis::resume_node(int node) { nodes_.at(static_cast<size_t>(node))->resume(); }
// The node runs under the shim (the kind's needs: node_clocks), whose control file stalls it.
void Nemesis::stall_disk(int node, bool stalled) { node_clocks_.at(static_cast<size_t>(node))->stall_disk(stalled); }

// "leader" is whichever server says it leads when the fault fires; during an election none
// does, so it asks again for up to 5 s. "follower" is the first server that does not lead.
// Should no leader appear, the fault lands on server 0 and says so on stderr.
int Nemesis::resolve_node(int node) {
    if (node >= 0 || !service_) return std::max(node, 0);
    std::optional<int> leader;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!(leader = service_->leader()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!leader) {
        std::cerr << "lockbench: no server says it leads; the fault on the " << node_text(node) << " lands on server 0\n";
        return 0;
    }
    if (node == kLeaderNode) return *leader;
    return *leader == 0 ? 1 : 0;
}

// A run without a service (Redis nodes) has no leader to wait for: it says yes.
bool Nemesis::has_leader() { return !service_ || service_->leader().has_value(); }

// Asked of the store directly, not through a proxy: a link fault must not hide the answer.
// A store that does not answer within a second names no holder (the occurrence is skipped).
std::optional<int> Nemesis::current_holder() {
    const auto holder = ask_store(store_holder_command());
    return holder ? holder_from(*holder) : std::nullopt;
}

std::optional<Value> Nemesis::ask_store(const Command& command) {
    if (!store_port_) return std::nullopt;
    if (!store_env_) store_env_ = std::make_unique<LiveEnv>(LiveEnvConfig{{{"127.0.0.1", store_port_}}});
    const Reply r = store_env_->command(NodeId{0}, command, std::chrono::seconds(1), std::nullopt);
    return r.ok() ? std::optional(r.value) : std::nullopt;
}

// Asks the restart thread to start the node again; the schedule asks restarted() until it is.
std::optional<bool> Nemesis::restart(int node) {
    std::lock_guard lock(restart_mutex_);
    restarts_asked_.push_back(node);
    restarts_in_flight_.insert(node);
    restart_cv_.notify_all();
    return std::nullopt;
}

std::optional<bool> Nemesis::restarted(int node, bool wait) {
    std::unique_lock lock(restart_mutex_);
    if (wait) restart_cv_.wait(lock, [&] { return restarts_done_.contains(node) || restart_stop_; });
    const auto it = restarts_done_.find(node);
    if (it == restarts_done_.end()) return wait ? std::optional<bool>(false) : std::nullopt;
    const bool back = it->second;
    restarts_done_.erase(it);
    return back;
}

// keep_data: what the node's persistence kept (nothing, without AOF) comes back.
void Nemesis::restart_loop() {
    std::unique_lock lock(restart_mutex_);
    for (;;) {
        restart_cv_.wait(lock, [&] { return !restarts_asked_.empty() || restart_stop_; });
        if (restarts_asked_.empty()) return;
        const int node = restarts_asked_.front();
        restarts_asked_.pop_front();
        lock.unlock();
        bool back = true;
        try {
            nodes_.at(static_cast<size_t>(node))->restart(true);
        } catch (const std::exception& e) {
            std::cerr << "lockbench: " << e.what() << "\n";  // the fault log says "failed"; this says why
            back = false;
        }
        lock.lock();
        restarts_done_[node] = back;
        restarts_in_flight_.erase(node);
        restart_cv_.notify_all();
    }
}

bool Nemesis::killed(int client) const {
    std::lock_guard lock(mutex_);
    return schedule_.killed(client);
}

nlohmann::json Nemesis::report() const {
    std::lock_guard lock(mutex_);
    return schedule_.report();
}

std::vector<std::string> Nemesis::unmet() const {
    std::vector<std::string> out;
    {
        std::lock_guard lock(mutex_);
        out = schedule_.unmet();
    }
    std::lock_guard lock(links_mutex_);
    out.insert(out.end(), links_unmet_.begin(), links_unmet_.end());
    return out;
}

long long Nemesis::injected() const {
    std::lock_guard lock(mutex_);
    return schedule_.injected();
}

// ---- the client's side -------------------------------------------------------------------

PointGate::PointGate(const std::string& socket_path, int client, const std::vector<std::string>& armed)
    : armed_(armed) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un addr = unix_address(socket_path);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("cannot reach the nemesis at " + socket_path + ": " + std::strerror(errno));
    write_all(fd_, "hello " + std::to_string(client) + "\n");
}

PointGate::~PointGate() {
    if (fd_ >= 0) ::close(fd_);
}

void PointGate::reached(Point p) {
    const std::string name = point_name(p);
    if (std::ranges::find(armed_, name) == armed_.end()) return;
    write_all(fd_, "reach " + name + "\n");
    // Blocks until the nemesis has put its fault in place (a SIGSTOP lands before this
    // answer can be read).
    while (buffer_.find('\n') == std::string::npos) {
        char buf[64];
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the nemesis is gone: go on
        buffer_.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = buffer_.substr(0, buffer_.find('\n'));
    buffer_.erase(0, buffer_.find('\n') + 1);
    if (answer == "disarm") std::erase(armed_, name);
}

}  // namespace lockbench
