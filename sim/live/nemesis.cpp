#include "sim/live/nemesis.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sim/live/live_env.h"
#include "sim/live/redis_node.h"

namespace lockbench {

struct Nemesis::Armed {
    FaultSpec spec;
    int seen = 0;                 // reaches of its point so far
    std::vector<int> fired_on;    // clients it struck
    std::vector<int> held;        // gate: clients held now
    bool done = false;
};

struct Nemesis::Connection {
    int fd = -1;
    std::optional<int> client;
    std::string buffer;
};

struct Nemesis::Timer {
    enum class What { resume, release, fire, heal_links, restart };
    long long at_ns = 0;
    What what = What::resume;
    size_t fault = 0;
    int client = 0;
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
    : socket_path_(std::move(socket_path)) {
    for (auto& f : faults) faults_.push_back(Armed{std::move(f), 0, {}, {}, false});
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

std::vector<std::string> Nemesis::armed_points() const {
    std::vector<std::string> names;
    for (const auto& f : faults_)
        if (f.spec.point) names.push_back(point_name(*f.spec.point));
    std::ranges::sort(names);
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

bool Nemesis::skews_clients() const {
    return std::ranges::any_of(faults_, [](const Armed& f) { return f.spec.kind == FaultSpec::Kind::clock && !f.spec.node; });
}

bool Nemesis::skews_nodes() const {
    return std::ranges::any_of(faults_, [](const Armed& f) { return f.spec.kind == FaultSpec::Kind::clock && f.spec.node; });
}

void Nemesis::set_clocks(std::vector<ClockControl*> clients, std::vector<ClockControl*> nodes) {
    client_clocks_ = std::move(clients);
    node_clocks_ = std::move(nodes);
}

bool Nemesis::needs_proxies() const {
    return std::ranges::any_of(faults_, [](const Armed& f) {
        return f.spec.kind == FaultSpec::Kind::link && (!f.spec.link_nodes.empty() || f.spec.link_store);
    });
}

void Nemesis::set_world(ProxyHub* proxies, std::vector<RedisNode*> nodes) {
    proxies_ = proxies;
    nodes_ = std::move(nodes);
}

// Applies (or heals) a link fault on the paths it names: of every client, or of `client`.
void Nemesis::set_links(const FaultSpec& f, int client, bool heal) {
    const LinkFault fault = heal ? LinkFault::pass() : f.link;
    const auto apply = [&](LinkProxy* link) {
        if (!link) return;
        if (f.direction) link->set(*f.direction, fault);
        else link->set_both(fault);
    };
    if (f.link_replication && proxies_) apply(proxies_->find("repl"));  // one link, whoever the client
    for (int c = 0; c < static_cast<int>(pids_.size()); ++c) {
        if (!f.all_clients && c != client) continue;
        std::vector<std::string> names;
        for (int n : f.link_nodes) names.push_back("c" + std::to_string(c) + "-n" + std::to_string(n));
        if (f.link_store) names.push_back("c" + std::to_string(c) + "-store");
        for (const auto& name : names) apply(proxies_ ? proxies_->find(name) : nullptr);
    }
}

void Nemesis::start(std::vector<pid_t> clients, long long start_at_ns) {
    pids_ = std::move(clients);
    killed_.assign(pids_.size(), false);
    for (size_t i = 0; i < faults_.size(); ++i) {
        const auto& spec = faults_[i].spec;
        if (!spec.at_ms) continue;
        // A fault "at 0 ms" is in place before any client starts, not racing the first one.
        if (*spec.at_ms == 0) fire(faults_[i], spec.client.value_or(0));
        else timers_.push_back({start_at_ns + *spec.at_ms * 1000000, Timer::What::fire, i, spec.client.value_or(0)});
    }
    running_ = true;
    thread_ = std::thread([this] { loop(); });
}

void Nemesis::stop() {
    if (!thread_.joinable()) return;
    running_ = false;
    write_all(wake_fd_[1], "x", false);
    thread_.join();
    // Heal: whatever is still in force ends now.
    for (const Timer& t : timers_) {
        if (t.what == Timer::What::resume) {
            ::kill(-pids_[static_cast<size_t>(t.client)], SIGCONT);
            log("end", faults_[t.fault], t.client);
        } else if (t.what == Timer::What::release) {
            reply(t.client, "go\n");
        } else if (t.what == Timer::What::heal_links) {
            end_fault(t);
        }
    }
    if (proxies_) proxies_->heal_all();
    timers_.clear();
    for (auto& f : faults_) {
        for (int c : f.held) {
            reply(c, "go\n");
            log("end", f, c);
        }
        f.held.clear();
        const bool open_link = f.spec.kind == FaultSpec::Kind::link && !f.spec.duration_ms && !f.fired_on.empty();
        if (open_link) log("end", f, f.fired_on.front());  // healed by heal_all() below
    }
    for (auto& c : connections_)
        if (c.fd >= 0) ::close(c.fd);
    connections_.clear();
}

void Nemesis::loop() {
    while (running_) {
        std::vector<pollfd> fds{{wake_fd_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        for (const auto& c : connections_) fds.push_back({c.fd, POLLIN, 0});  // poll skips fd -1
        long long wait_ms = 100;
        const long long now = monotonic_ns();
        for (const Timer& t : timers_) wait_ms = std::min(wait_ms, std::max(0LL, (t.at_ns - now) / 1000000 + 1));
        ::poll(fds.data(), fds.size(), static_cast<int>(wait_ms));
        if (fds[0].revents) break;
        if (fds[1].revents & POLLIN) {
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) connections_.push_back({fd, std::nullopt, ""});
        }
        for (size_t i = 2; i < fds.size(); ++i) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            Connection& c = connections_[i - 2];
            char buf[512];
            const ssize_t n = ::read(c.fd, buf, sizeof buf);
            if (n <= 0) {
                // Gone (finished or killed): out of the poll set, and let go of any gate.
                ::close(c.fd);
                c.fd = -1;
                if (c.client) let_go(*c.client);
                continue;
            }
            c.buffer.append(buf, static_cast<size_t>(n));
            for (size_t nl; (nl = c.buffer.find('\n')) != std::string::npos;) {
                const std::string line = c.buffer.substr(0, nl);
                c.buffer.erase(0, nl + 1);
                on_line(c, line);
            }
        }
        run_timers(monotonic_ns());
    }
}

void Nemesis::on_line(Connection& c, const std::string& line) {
    if (line.rfind("hello ", 0) == 0) {
        c.client = std::stoi(line.substr(6));
    } else if (line.rfind("reach ", 0) == 0 && c.client) {
        if (const auto p = parse_point(line.substr(6))) on_reach(c, *p);
        else reply(*c.client, "go\n");
    }
}

// Every fault armed at this point counts the reach; those that are due fire, all of them in
// place before the client hears anything. A killed client hears nothing, a held one not yet.
void Nemesis::on_reach(Connection& c, Point p) {
    const int client = *c.client;
    std::vector<Armed*> due;
    bool still_armed = false;
    for (Armed& f : faults_) {
        if (f.done || f.spec.point != p || (f.spec.client && *f.spec.client != client)) continue;
        if (++f.seen >= f.spec.occurrence) due.push_back(&f);
    }
    bool answer = true;
    for (Armed* f : due) answer = fire(*f, client) && answer;
    for (const Armed& f : faults_)
        if (!f.done && f.spec.point == p && (!f.spec.client || *f.spec.client == client)) still_armed = true;
    if (answer) reply(client, still_armed ? "go\n" : "disarm\n");
}

// Puts the fault in place. Returns false when the client must not be answered now (killed,
// or held at a gate).
bool Nemesis::fire(Armed& f, int client) {
    const pid_t pid = pids_[static_cast<size_t>(client)];
    const size_t index = static_cast<size_t>(&f - faults_.data());
    const long long now = monotonic_ns();
    {
        std::lock_guard lock(mutex_);
        f.fired_on.push_back(client);
    }
    switch (f.spec.kind) {
        case FaultSpec::Kind::pause:
            ::kill(-pid, SIGSTOP);  // in place before the client may go on
            log("start", f, client);
            timers_.push_back({now + f.spec.duration_ms * 1000000, Timer::What::resume, index, client});
            f.done = true;
            break;
        case FaultSpec::Kind::kill:
            {
                // Marked first: the main thread may reap the client the moment it dies.
                std::lock_guard lock(mutex_);
                killed_[static_cast<size_t>(client)] = true;
            }
            ::kill(-pid, SIGKILL);
            log("start", f, client);
            f.done = true;
            return false;
        case FaultSpec::Kind::clock: {
            ClockControl* clock = f.spec.node ? node_clocks_.at(static_cast<size_t>(*f.spec.node))
                                              : client_clocks_.at(static_cast<size_t>(client));
            clock->jump(std::chrono::milliseconds(f.spec.jump_ms));
            if (f.spec.rate) clock->set_rate(*f.spec.rate);
            log("start", f, client);
            f.done = true;
            break;
        }
        case FaultSpec::Kind::link:
            set_links(f.spec, client, false);  // in place before the client may go on
            log("start", f, client);
            if (f.spec.duration_ms)
                timers_.push_back({now + f.spec.duration_ms * 1000000, Timer::What::heal_links, index, client});
            f.done = true;
            break;
        case FaultSpec::Kind::crash:
            nodes_.at(static_cast<size_t>(*f.spec.node))->kill();
            log("start", f, client);
            if (f.spec.restart_after_ms)
                timers_.push_back({now + *f.spec.restart_after_ms * 1000000, Timer::What::restart, index, client});
            f.done = true;
            break;
        case FaultSpec::Kind::gate:
            f.held.push_back(client);
            log("start", f, client);
            if (static_cast<int>(f.held.size()) < f.spec.count) return false;
            for (size_t i = 0; i < f.held.size(); ++i)
                timers_.push_back({now + static_cast<long long>(i) * f.spec.stagger_ms * 1000000,
                                   Timer::What::release, index, f.held[i]});
            f.held.clear();
            f.done = true;
            return false;  // the release timers answer them
    }
    return true;
}

void Nemesis::run_timers(long long now_ns) {
    std::vector<Timer> due;
    std::erase_if(timers_, [&](const Timer& t) {
        if (t.at_ns > now_ns) return false;
        due.push_back(t);
        return true;
    });
    for (const Timer& t : due) {
        Armed& f = faults_[t.fault];
        switch (t.what) {
            case Timer::What::resume:
                ::kill(-pids_[static_cast<size_t>(t.client)], SIGCONT);
                log("end", f, t.client);
                break;
            case Timer::What::release:
                reply(t.client, "go\n");
                log("end", f, t.client);
                break;
            case Timer::What::fire:
                if (!f.done) fire(f, t.client);
                break;
            case Timer::What::heal_links:
            case Timer::What::restart:
                end_fault(t);
                break;
        }
    }
}

void Nemesis::end_fault(const Timer& t) {
    Armed& f = faults_[t.fault];
    if (t.what == Timer::What::heal_links) {
        set_links(f.spec, t.client, true);
    } else {
        // keep_data: what the node's persistence kept (nothing, without AOF) comes back.
        try {
            nodes_.at(static_cast<size_t>(*f.spec.node))->restart(true);
        } catch (const std::exception&) {
            log("failed", f, t.client);  // recorded; the checker sees a node that stayed down
            return;
        }
    }
    log("end", f, t.client);
}

void Nemesis::reply(int client, const char* word) {
    for (const auto& c : connections_)
        if (c.client == client && c.fd >= 0) write_all(c.fd, word);
}

// A client that is gone cannot complete a gate: let the others it holds go on.
void Nemesis::let_go(int gone) {
    for (Armed& f : faults_) {
        if (std::erase(f.held, gone) == 0) continue;
        for (int c : f.held) {
            reply(c, "go\n");
            log("end", f, c);
        }
        f.held.clear();
        f.done = true;
    }
}

void Nemesis::log(const char* type, const Armed& f, int client) {
    std::string line = "{\"t_ns\":" + std::to_string(monotonic_ns()) + ",\"op\":\"fault\",\"type\":\"" + type +
                       "\",\"fault\":\"" + fault_kind_name(f.spec.kind) + "\",\"label\":\"" + f.spec.label() +
                       "\",\"client\":" + std::to_string(client) + "}\n";
    write_all(log_fd_, line, false);
}

bool Nemesis::killed(int client) const {
    std::lock_guard lock(mutex_);
    return client >= 0 && static_cast<size_t>(client) < killed_.size() && killed_[static_cast<size_t>(client)];
}

nlohmann::json Nemesis::report() const {
    std::lock_guard lock(mutex_);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : faults_)
        out.push_back({{"fault", fault_kind_name(f.spec.kind)}, {"label", f.spec.label()},
                       {"fired", f.fired_on.size()}, {"clients", f.fired_on}});
    return out;
}

long long Nemesis::injected() const {
    std::lock_guard lock(mutex_);
    long long n = 0;
    for (const auto& f : faults_) n += static_cast<long long>(f.fired_on.size());
    return n;
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
