#include "sim/live/adapter_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "process/stopped.h"
#include "sim/engine/clock.h"
#include "sim/live/external.h"
#include "sim/live/pool_socket.h"
#include "sim/live/server_home.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Idle adapters kept: of one kind, more than a case's clients times the repetitions side by
// side need; of all kinds, enough for a catalog's locks in turn. The oldest idle goes first.
constexpr size_t kIdlePerKey = 24;
constexpr size_t kIdleAll = 96;
// A retired adapter is reaped this long after its group was killed: until then its pid, and
// so its group's id, stays its own, and a run's nemesis still healing that group strikes no
// stranger.
constexpr long long kReapAfterNs = 30'000'000'000LL;
// Past this its stderr file is retired with it (the adapter's files are capped at 16 MiB).
constexpr std::uintmax_t kRetireStderrBytes = 8u << 20;

// A request and its answer on `a`'s connection; a discarded Json if the pool is gone.
Json ask(PooledAdapter& a, const Json& request) {
    std::string text;
    if (a.socket < 0 || !send_message(a.socket, request.dump()) || !receive_message(a.socket, text)) return Json(Json::value_t::discarded);
    return Json::parse(text, nullptr, false);
}

void close_connection(PooledAdapter& a) {
    if (a.socket >= 0) ::close(a.socket);
    a.socket = -1;
}

// Whether child `pid` has ended, and how (a wait status), without reaping it: until it is
// reaped its pid, and its group's id, stays its own.
std::optional<int> ended(pid_t pid) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
        return std::nullopt;
    return info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : info.si_status & 0x7f;
}

// Adapters of the same command in the same folder are alike: a run's params reach the
// adapter's file anew at each reset (a library version they choose among them).
std::string pool_key(const Json& take) {
    return Json::array({take.value("command", Json::array()), take.value("cwd", "")}).dump();
}

}  // namespace

std::optional<PooledAdapter> take_pooled_adapter(const AdapterSpec& spec, bool fresh_only) {
    PooledAdapter a;
    a.socket = connect_to_pool(spec.pool.string());
    if (a.socket < 0) return std::nullopt;
    const Json take = {{"take", {{"command", spec.command}, {"cwd", spec.cwd.string()}, {"env", spec.env}, {"fresh_only", fresh_only},
                                 {"stderr_to", spec.stderr_path.string()}}}};
    std::string text;
    std::vector<int> fds;
    if (!send_message(a.socket, take.dump()) || !receive_message(a.socket, text, &fds) || fds.size() != 2) {
        for (int f : fds) ::close(f);
        close_connection(a);
        return std::nullopt;
    }
    const Json r = Json::parse(text, nullptr, false);
    a.id = r.value("id", 0);
    a.pid = r.value("pid", -1);
    a.to = fds[0];
    a.from = fds[1];
    a.fresh = r.value("fresh", true);
    a.stderr_path = r.value("stderr", "");
    a.stderr_from = r.value("stderr_from", std::uintmax_t{0});
    return a;
}

void give_back_pooled_adapter(PooledAdapter& a, const std::string& run) {
    ask(a, {{"give", a.id}, {"run", run}});
    close_connection(a);
}

void drop_pooled_adapter(PooledAdapter& a, const char* refused) {
    ask(a, {{"drop", a.id}, {"refused", refused ? refused : ""}});
    close_connection(a);
}

std::optional<int> pooled_adapter_status(PooledAdapter& a, bool end) {
    const Json r = ask(a, {{"status", a.id}, {"end", end}});
    if (!r.is_object()) return SIGKILL;  // the pool is gone, and its adapters with it
    if (!r.contains("status")) return std::nullopt;
    return r.value("status", 0);
}

PoolRun::PoolRun(const std::string& run) {
    const char* pool = std::getenv(kAdapterPoolVar);
    if (!pool || !*pool) return;
    PooledAdapter a;  // only its connection: the same socket, a message of another kind
    a.socket = connect_to_pool(pool);
    if (a.socket < 0 || !ask(a, {{"run", run}}).is_object()) {
        close_connection(a);
        return;
    }
    socket_ = a.socket;
}

void PoolRun::end() {
    if (socket_ >= 0) ::close(socket_);
    socket_ = -1;
}

AdapterPool::AdapterPool(fs::path dir) : dir_(std::move(dir)), socket_path_(dir_ / "adapters.sock") {
    const std::string path = socket_path_.string();
    listen_fd_ = listen_on(path, "adapter pool");
    if (::pipe2(wake_, O_CLOEXEC) != 0) throw std::runtime_error("adapter pool: " + path + ": " + std::strerror(errno));
    ::setenv(kAdapterPoolVar, path.c_str(), 1);
    thread_ = std::thread([this] { loop(); });
}

AdapterPool::~AdapterPool() { end_all(); }

void AdapterPool::end_all() {
    if (!thread_.joinable()) return;
    ::unsetenv(kAdapterPoolVar);
    if (::write(wake_[1], "x", 1) < 0) {
    }
    thread_.join();
    for (auto& [id, a] : adapters_) {
        ::close(a.to);  // its stdin's end: its cue to exit; then its group is killed
        ::close(a.from);
        cpu_s_ = cpu_s_ + process_cpu_seconds(a.pid);
        ::kill(-a.pid, SIGKILL);
        ::waitpid(a.pid, nullptr, 0);
    }
    adapters_.clear();
    end_retiring(true);
    reap_retired(true);
    for (int c : connections_) ::close(c);
    connections_.clear();
    for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
    ::unlink(socket_path_.c_str());
}

void AdapterPool::loop() {
    for (;;) {
        std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        for (int c : connections_) fds.push_back({c, POLLIN, 0});
        const int r = ::poll(fds.data(), fds.size(), retiring_.empty() ? 1000 : 20);
        end_retiring(false);
        reap_retired(false);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || fds[0].revents) return;
        if (fds[1].revents & POLLIN) {
            const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) connections_.push_back(c);
        }
        for (size_t i = 2; i < fds.size(); ++i)
            if (fds[i].revents) on_message(fds[i].fd);
    }
}

void AdapterPool::on_message(int conn) {
    std::string text;
    if (receive_message(conn, text)) {
        handle(conn, text);
        return;
    }
    // Gone without giving back what it took (a client killed, a client that failed): ended,
    // what it wrote for that client's run copied into the run's file, as the client would have.
    std::vector<int> held;
    for (const auto& [id, a] : adapters_)
        if (a.owner == conn) held.push_back(id);
    for (int id : held) {
        copy_stderr(adapters_.at(id));
        retire(id);
    }
    // A run whose nemesis has stopped: what its clients gave back is free for another run.
    if (const auto run = runs_.find(conn); run != runs_.end()) {
        for (auto& [id, a] : adapters_)
            if (a.owner == kQuarantined && a.run == run->second) a.owner = -1;
        runs_.erase(run);
    }
    ::close(conn);
    std::erase(connections_, conn);
}

void AdapterPool::handle(int conn, const std::string& text) {
    const Json m = Json::parse(text, nullptr, false);
    if (!m.is_object()) return;
    if (m.contains("run") && !m.contains("give")) {  // a run's own connection, open until its nemesis has stopped
        runs_[conn] = m.value("run", "");
        send_message(conn, Json({{"ok", true}}).dump());
        return;
    }
    if (m.contains("take")) {
        const Json& take = m.at("take");
        const std::string key = pool_key(take);
        if (own_kinds_.contains(key)) {  // one of its kind said it cannot be kept
            send_message(conn, Json({{"own", true}}).dump());
            return;
        }
        Adapter* chosen = nullptr;
        if (!take.value("fresh_only", false))
            for (auto it = adapters_.begin(); it != adapters_.end() && !chosen;) {
                Adapter& a = it->second;
                ++it;
                if (a.owner != -1 || a.key != key) continue;
                std::error_code ec;
                if (ended(a.pid) || fs::file_size(a.err, ec) > kRetireStderrBytes) {
                    retire(a.id);  // ended while idle, or said too much: not handed out
                    continue;
                }
                chosen = &a;
            }
        const bool fresh = !chosen;
        if (fresh) {
            AdapterSpec spec;
            spec.command = take.value("command", std::vector<std::string>{});
            spec.cwd = take.value("cwd", "");
            spec.env = take.value("env", std::map<std::string, std::string>{});
            const int id = next_id_++;
            spec.stderr_path = dir_ / ("adapter-" + std::to_string(id) + ".stderr");
            try {
                if (spec.command.empty()) throw AdapterError("no command");
                const AdapterProcess p = start_adapter_process(spec, true);
                chosen = &adapters_[id];
                *chosen = Adapter{id, key, p.pid, p.to, p.from, spec.stderr_path};
                ++started_;
            } catch (const AdapterError& e) {
                send_message(conn, Json({{"error", e.what()}}).dump());
                return;
            }
        } else {
            ++reused_;
        }
        chosen->owner = conn;
        chosen->copy_to = take.value("stderr_to", "");
        if (!fresh) ::kill(-chosen->pid, SIGCONT);  // stopped while idle
        std::error_code ec;
        const std::uintmax_t from = fs::file_size(chosen->err, ec);
        chosen->copy_from = ec ? 0 : from;
        const Json reply = {{"id", chosen->id}, {"pid", chosen->pid}, {"fresh", fresh}, {"stderr", chosen->err.string()},
                            {"stderr_from", chosen->copy_from}};
        if (!send_message(conn, reply.dump(), {chosen->to, chosen->from})) retire(chosen->id);
        return;
    }
    const int id = m.contains("give") ? m.value("give", 0) : m.contains("drop") ? m.value("drop", 0) : m.value("status", 0);
    const auto it = adapters_.find(id);
    if (it == adapters_.end() || it->second.owner != conn) {
        send_message(conn, Json({{"ok", false}}).dump());
        return;
    }
    if (m.contains("give")) {
        // Idle once its run's nemesis has stopped: until then a fault on the client that gave
        // it back (or the heal) still signals its group, which must not be another run's.
        const std::string run = m.value("run", "");
        const bool run_going = std::ranges::any_of(runs_, [&](const auto& r) { return r.second == run; });
        it->second.owner = run_going ? kQuarantined : -1;
        it->second.run = run;
        it->second.idle_since = ++idle_clock_;
        // Idle, it holds nothing (the client had its library drop it) and is stopped: a timer
        // its library left running costs no CPU and reaches no server meanwhile.
        ::kill(-it->second.pid, SIGSTOP);
        const std::string kind = it->second.key;
        const auto oldest_idle = [&](bool of_kind) {  // (since, id), oldest first
            std::vector<std::pair<long long, int>> idle;
            for (const auto& [other, a] : adapters_)
                if (a.owner == -1 && (!of_kind || a.key == kind)) idle.emplace_back(a.idle_since, other);
            std::ranges::sort(idle);
            return idle;
        };
        for (const auto& [cap, of_kind] : {std::pair{kIdlePerKey, true}, std::pair{kIdleAll, false}}) {
            const auto idle = oldest_idle(of_kind);
            for (size_t i = 0; i + cap < idle.size(); ++i) retire(idle[i].second);
        }
        send_message(conn, Json({{"ok", true}}).dump());
    } else if (m.contains("drop")) {
        const std::string refused = m.value("refused", "");
        if (refused == "reset" || refused == "broken") ++refused_reset_;
        if (refused == "close") ++refused_close_;
        if (refused == "reset" || refused == "close") {
            // It says it cannot be kept: its kind is started by each client from now on. One
            // that refused the close ends as it would without a pool: its stdin's end, then
            // 500 ms to exit (its library's own clean-up), then killed.
            own_kinds_.insert(it->second.key);
            if (refused == "close") {
                Adapter a = it->second;
                adapters_.erase(it);
                ::close(a.to);
                ::close(a.from);
                ::kill(-a.pid, SIGCONT);
                retiring_.emplace_back(a.pid, monotonic_ns() + 500'000'000LL);
                send_message(conn, Json({{"ok", true}}).dump());
                return;
            }
        }
        retire(id);
        send_message(conn, Json({{"ok", true}}).dump());
    } else {
        // It closed its stdout: asked again until it has ended (the client waits, not the pool),
        // or killed when the client has waited enough; reaped later, as any retired.
        std::optional<int> status = ended(it->second.pid);
        if (!status && !m.value("end", false)) {
            send_message(conn, Json({{"running", true}}).dump());
            return;
        }
        retire(id);
        send_message(conn, Json({{"status", status.value_or(SIGKILL)}}).dump());
    }
}

void AdapterPool::retire(int id) {
    const auto it = adapters_.find(id);
    if (it == adapters_.end()) return;
    cpu_s_ = cpu_s_ + process_cpu_seconds(it->second.pid);
    ::kill(-it->second.pid, SIGKILL);
    ::close(it->second.to);
    ::close(it->second.from);
    retired_.emplace_back(it->second.pid, monotonic_ns());
    adapters_.erase(it);
}

void AdapterPool::copy_stderr(const Adapter& a) {
    if (a.copy_to.empty()) return;
    const std::string text = read_from(a.err, a.copy_from);
    if (!text.empty()) std::ofstream(a.copy_to, std::ios::app | std::ios::binary) << text;
}

void AdapterPool::end_retiring(bool all) {
    const long long now = monotonic_ns();
    std::erase_if(retiring_, [&](const std::pair<pid_t, long long>& r) {
        if (!all && !ended(r.first) && now < r.second) return false;
        cpu_s_ = cpu_s_ + process_cpu_seconds(r.first);
        ::kill(-r.first, SIGKILL);
        retired_.emplace_back(r.first, now);
        return true;
    });
}

void AdapterPool::reap_retired(bool all) {
    const long long now = monotonic_ns();
    std::erase_if(retired_, [&](const std::pair<pid_t, long long>& r) {
        if (!all && now - r.second < kReapAfterNs) return false;
        return ::waitpid(r.first, nullptr, all ? 0 : WNOHANG) != 0;
    });
}

}  // namespace lockbench
