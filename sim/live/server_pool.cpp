#include "sim/live/server_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "process/stopped.h"
#include "sim/live/pool_socket.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Idle services kept: of one shape, as many as runs of it go side by side; in all, few (a
// ZooKeeper server is a JVM of up to 128 MB that ticks every 100 ms while idle).
constexpr size_t kIdlePerKey = 4;
constexpr size_t kIdleAll = 8;
constexpr size_t kReasonsKept = 5;
// Services start side by side on this many threads, each living until the pool ends.
constexpr int kStarters = 4;

// Services alike: the same service, size, settings, program, lease and pooler.
std::string shape_key(const Json& take) {
    return Json::array({take.value("service", ""), take.value("size", 0), take.value("settings", Json::object()),
                        take.value("program", ""), take.value("lease_ms", 0LL), take.value("pgbouncer", "")})
        .dump();
}

// A server the run did not start: it answers on its port and takes no fault (a run whose faults
// reach a server starts its own).
class KeptServer final : public LockServer {
public:
    KeptServer(std::string name, int port, pid_t pid, fs::path log, std::uintmax_t log_from)
        : name_(std::move(name)), port_(port), pid_(pid), log_(std::move(log)), log_from_(log_from) {}
    const std::string& name() const override { return name_; }
    int port() const override { return port_; }
    pid_t pid() const override { return pid_; }
    void kill() override { refuse("killed"); }
    void restart(bool) override { refuse("restarted"); }
    bool pause() override { refuse("paused"); }
    void resume() override { refuse("resumed"); }
    fs::path log_path() const override { return log_; }
    std::uintmax_t log_from() const override { return log_from_; }

private:
    [[noreturn]] void refuse(const char* what) const {
        throw std::logic_error("server " + name_ + " is kept across repetitions and may not be " + what +
                               ": a run whose faults reach a server starts its own");
    }
    std::string name_;
    int port_;
    pid_t pid_;
    fs::path log_;
    std::uintmax_t log_from_;
};

// A run's view of a kept service; its connection to the pool closes with it, which gives the
// service back.
class KeptService final : public LockService {
public:
    KeptService(Service service, int socket, const Json& description) : service_(service), socket_(socket) {
        for (const Json& s : description.at("servers")) {
            servers_.push_back(std::make_unique<KeptServer>(s.at("name"), s.at("port"), s.at("pid"),
                                                            s.at("log").get<std::string>(), s.at("log_from")));
            ports_.push_back(s.at("port"));
        }
        client_env_ = description.value("client_env", std::map<std::string, std::string>{});
    }
    ~KeptService() override { ::close(socket_); }
    std::vector<LockServer*> servers() override {
        std::vector<LockServer*> out;
        for (auto& s : servers_) out.push_back(s.get());
        return out;
    }
    std::optional<int> leader() override { return ask_leader(service_, ports_); }
    std::map<std::string, std::string> client_env() const override { return client_env_; }

private:
    Service service_;
    int socket_;
    std::vector<std::unique_ptr<KeptServer>> servers_;
    std::vector<int> ports_;
    std::map<std::string, std::string> client_env_;
};

// Resumes every server of an idle service and, for one with a leader, waits until one leads
// again (at most 10 s): stopped together, its servers may have to sync again once they run.
bool wake(LockService& service, bool has_leader) {
    for (LockServer* s : service.servers()) s->resume();
    if (!has_leader) return true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!service.leader()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// A wipe that throws (a program it runs that cannot start, an answer of another shape) is a
// wipe that failed: the service is ended, never an exception out of a pool thread.
std::optional<std::string> wipe_of(LockService& service) {
    try {
        return service.wipe();
    } catch (const std::exception& e) {
        return std::string("the wipe failed: ") + e.what();
    }
}

Json describe(LockService& service) {
    Json servers = Json::array();
    for (const LockServer* s : service.servers()) {
        std::error_code ec;
        const std::uintmax_t size = fs::file_size(s->log_path(), ec);
        servers.push_back({{"name", s->name()}, {"port", s->port()}, {"pid", s->pid()}, {"log", s->log_path().string()},
                           {"log_from", ec ? 0 : size}});
    }
    return {{"servers", servers}, {"client_env", service.client_env()}};
}

}  // namespace

std::unique_ptr<LockService> take_kept_service(Service service, const ServiceConfig& config) {
    // A pool that does not answer within this long (a start that hangs) is left: the run starts
    // its own. A ZooKeeper start may take up to a minute on a busy machine.
    constexpr timeval kAnswerWithin{90, 0};
    const char* pool = std::getenv(kServerPoolVar);
    if (!pool || !*pool || !keepable(service) || config.peer_proxies) return nullptr;
    for (const auto& env : config.env)
        if (!env.empty()) return nullptr;  // a shifted clock, or another thing of its own
    const int socket = connect_to_pool(pool);
    if (socket < 0) return nullptr;
    ::setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &kAnswerWithin, sizeof kAnswerWithin);
    const Json take = {{"service", service_name(service)}, {"size", config.size}, {"settings", config.settings},
                       {"program", config.program.string()}, {"lease_ms", config.lease_ms}, {"pgbouncer", config.pgbouncer}};
    std::string text;
    if (!send_message(socket, take.dump()) || !receive_message(socket, text)) {
        ::close(socket);
        return nullptr;
    }
    const Json answer = Json::parse(text, nullptr, false);
    if (!answer.is_object() || !answer.contains("servers")) {
        ::close(socket);
        return nullptr;
    }
    return std::make_unique<KeptService>(service, socket, answer);
}

ServerPool::ServerPool(fs::path dir) : dir_(std::move(dir)), socket_path_(dir_ / "servers.sock") {
    listen_fd_ = listen_on(socket_path_.string(), "server pool");
    if (::pipe2(wake_, O_CLOEXEC) != 0) throw std::runtime_error("server pool: " + std::string(std::strerror(errno)));
    ::setenv(kServerPoolVar, socket_path_.c_str(), 1);  // before any thread of ours can spawn
    for (int i = 0; i < kStarters; ++i)
        starters_.emplace_back([this] {
            for (;;) {
                std::function<void()> job;
                {
                    std::unique_lock lock(mutex_);
                    jobs_ready_.wait(lock, [&] { return ending_ || !jobs_.empty(); });
                    if (jobs_.empty()) return;
                    job = std::move(jobs_.front());
                    jobs_.pop_front();
                }
                job();
            }
        });
    acceptor_ = std::thread([this] { accept_loop(); });
}

ServerPool::~ServerPool() { end_all(); }

void ServerPool::end_all() {
    if (!acceptor_.joinable()) return;
    if (::write(wake_[1], "x", 1) < 0) {
    }
    acceptor_.join();
    // The runs are over when a matrix ends: a connection still open is ended, and what it held
    // is ended too, unwiped.
    {
        std::lock_guard lock(mutex_);
        ending_ = true;
        for (int c : connections_) ::shutdown(c, SHUT_RDWR);
    }
    std::vector<Run> runs;
    {
        std::lock_guard lock(mutex_);
        runs.swap(runs_);
    }
    for (auto& r : runs) r.thread.join();
    std::vector<Kept> idle;
    {
        std::lock_guard lock(mutex_);
        idle.swap(idle_);
    }
    // Ended before the threads that started them exit: that exit kills them (PR_SET_PDEATHSIG)
    // before their CPU is read.
    for (auto& k : idle) end(std::move(k.service));
    jobs_ready_.notify_all();
    for (auto& t : starters_) t.join();
    starters_.clear();
    ::unsetenv(kServerPoolVar);
    for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
    ::unlink(socket_path_.c_str());
}

int ServerPool::idle() const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(idle_.size());
}

std::vector<std::string> ServerPool::reasons() const {
    std::lock_guard lock(mutex_);
    return reasons_;
}

void ServerPool::accept_loop() {
    for (;;) {
        pollfd fds[2] = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        const int r = ::poll(fds, 2, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || fds[0].revents) return;
        const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        std::lock_guard lock(mutex_);
        // The threads of runs that are over, joined: a matrix serves thousands of runs.
        std::erase_if(runs_, [](Run& r) {
            if (!*r.over) return false;
            r.thread.join();
            return true;
        });
        auto over = std::make_shared<std::atomic<bool>>(false);
        try {
            runs_.push_back({std::thread([this, c, over] {
                                 try {
                                     serve(c);
                                 } catch (const std::exception&) {
                                     // A take it could not read, or a service that failed as it
                                     // ended: that run starts its own; the matrix goes on.
                                 }
                                 *over = true;
                             }),
                             over});
            connections_.push_back(c);
        } catch (const std::system_error&) {
            ::close(c);  // no thread for it: the run starts its own
        }
    }
}

void ServerPool::on_starter(std::function<void()> job) {
    std::promise<void> done;
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back([&] {
            try {
                job();
                done.set_value();
            } catch (...) {
                done.set_exception(std::current_exception());
            }
        });
    }
    jobs_ready_.notify_one();
    done.get_future().get();
}

void ServerPool::end(std::unique_ptr<LockService> service) {
    if (!service) return;
    double cpu = 0;
    for (const LockServer* s : service->servers()) cpu += process_cpu_seconds(s->pid());
    cpu_s_.fetch_add(cpu);
    service.reset();
}

// One run: its take answered, then, once its connection ends, what it had wiped and kept or ended.
void ServerPool::serve(int conn) {
    const auto forget = [&] {
        std::lock_guard lock(mutex_);
        std::erase(connections_, conn);
        ::close(conn);
    };
    std::string text;
    const Json take = receive_message(conn, text) ? Json::parse(text, nullptr, false) : Json();
    std::optional<Service> service;
    std::string key;
    ServiceConfig config;
    try {  // a take of another shape than take_kept_service's is answered with nothing
        service = take.is_object() ? parse_service(take.value("service", "")) : std::nullopt;
        key = shape_key(take);
        config.size = take.value("size", 1);
        config.settings = take.value("settings", std::map<std::string, std::string>{});
        config.program = take.value("program", "");
        config.lease_ms = take.value("lease_ms", 0LL);
        config.pgbouncer = take.value("pgbouncer", "");
        config.kept = true;
    } catch (const Json::exception&) {
        service.reset();
    }
    if (!service) return forget();
    std::unique_ptr<LockService> kept;
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            const auto it = std::find_if(idle_.begin(), idle_.end(), [&](const Kept& k) { return k.key == key; });
            if (it == idle_.end()) break;
            kept = std::move(it->service);
            idle_.erase(it);
        }
        // Woken (it waited stopped), and proved again right before it serves: nothing has
        // reached it while it waited, and its servers have found each other again.
        if (wake(*kept, service_info(*service).has_leader) && !wipe_of(*kept)) {
            ++reused_;
            break;
        }
        end(std::move(kept));
    }
    if (!kept) {
        {
            std::lock_guard lock(mutex_);
            config.dir = dir_ / (std::string(service_name(*service)) + "-" + std::to_string(next_id_++));
        }
        try {
            on_starter([&] { kept = start_service(*service, config); });
            ++started_;
        } catch (const std::exception& e) {
            send_message(conn, Json({{"error", e.what()}}).dump());
            return forget();
        }
    }
    if (!send_message(conn, describe(*kept).dump())) {
        end(std::move(kept));
        return forget();
    }
    while (receive_message(conn, text)) {
    }
    forget();
    {
        std::lock_guard lock(mutex_);
        if (ending_) return end(std::move(kept));
    }
    if (const auto why = wipe_of(*kept)) {
        ++not_kept_;
        {
            std::lock_guard lock(mutex_);
            if (reasons_.size() < kReasonsKept) reasons_.push_back(*why);
        }
        return end(std::move(kept));
    }
    // Stopped while it waits (SIGSTOP): an idle ensemble's JVMs would otherwise tick (every
    // 100 ms, its servers pinging each other) for minutes between the runs that use it, which
    // cost more CPU than the starts it saves.
    for (LockServer* s : kept->servers())
        if (!s->pause()) return end(std::move(kept));
    std::unique_ptr<LockService> oldest;
    {
        std::lock_guard lock(mutex_);
        if (ending_) {
            oldest = std::move(kept);
        } else {
            idle_.push_back({key, std::move(kept)});
            const auto alike = std::count_if(idle_.begin(), idle_.end(), [&](const Kept& k) { return k.key == key; });
            if (static_cast<size_t>(alike) > kIdlePerKey) {
                const auto first = std::find_if(idle_.begin(), idle_.end(), [&](const Kept& k) { return k.key == key; });
                oldest = std::move(first->service);
                idle_.erase(first);
            } else if (idle_.size() > kIdleAll) {
                oldest = std::move(idle_.front().service);
                idle_.erase(idle_.begin());
            }
        }
    }
    end(std::move(oldest));
}

}  // namespace lockbench
