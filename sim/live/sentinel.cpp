#include "sim/live/sentinel.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;

void write_config(const std::filesystem::path& file, int port, const std::string& name, Endpoint master,
                  const std::filesystem::path& dir, const SentinelSettings& s) {
    std::ofstream out(file);
    out << "port " << port << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir.string() << "\n"
        << "logfile " << (dir / ("sentinel-" + std::to_string(port) + ".log")).string() << "\n"
        << "sentinel resolve-hostnames no\n"
        << "sentinel monitor " << name << " " << master.host << " " << master.port << " " << s.quorum << "\n"
        << "sentinel down-after-milliseconds " << name << " " << s.down_after_ms << "\n"
        << "sentinel failover-timeout " << name << " " << s.failover_timeout_ms << "\n"
        << "sentinel parallel-syncs " << name << " 1\n";
    if (!out) throw std::runtime_error(file.string() + ": cannot write the Sentinel configuration");
}

// True once the Sentinel on `port` names a master for `name` and knows the `others`
// Sentinels. They find each other through hello messages on the master (every 2 s): a
// Sentinel that has not met the others before the master dies cannot gather a quorum.
bool ready(int port, const std::string& name, size_t others_expected) {
    LiveEnv env({{{"127.0.0.1", port}}, 100ms});
    const Reply master = env.command(NodeId{0}, {"SENTINEL", "get-master-addr-by-name", name}, 200ms, std::nullopt);
    const Reply others = env.command(NodeId{0}, {"SENTINEL", "sentinels", name}, 200ms, std::nullopt);
    return master.ok() && master.value.elements.size() == 2 && others.ok() && others.value.elements.size() == others_expected;
}

// Another program can take a free port before the Sentinel binds it (side by side, another
// repetition's server, or a connection's source port: once in a catalog round of 442).
constexpr int kFreePortRetries = 3;

// True once the Sentinel just spawned answers on `port` as itself; false if it exited because
// the port was taken (it is reaped); throws if it exited for another reason or never answers.
bool answers(ChildProcess& sentinel, int port, const std::filesystem::path& log) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (sentinel.running()) {
        if (our_server_answers(port, sentinel.pid())) return true;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("redis Sentinel on port " + std::to_string(port) + " did not answer within 10 s; its log: " +
                                     log_tail(log));
        std::this_thread::sleep_for(5ms);
    }
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    if (text.find("Address already in use") != std::string::npos) return false;
    throw std::runtime_error("redis Sentinel on port " + std::to_string(port) + " exited during start-up; its log: " +
                             log_tail(log));
}

}  // namespace

SentinelGroup::SentinelGroup(const std::string& master_name, Endpoint master, const std::filesystem::path& dir,
                             const SentinelSettings& settings, const std::function<int()>& pick_port)
    : master_name_(master_name) {
    std::filesystem::create_directories(dir);
    const std::string binary = redis_server_binary();
    for (int i = 0; i < settings.count; ++i) {
        const auto conf = dir / ("sentinel-" + std::to_string(i) + ".conf");
        for (int attempt = 0;; ++attempt) {
            const int port = pick_port ? pick_port() : find_free_port();
            write_config(conf, port, master_name, master, dir, settings);
            ChildProcess sentinel = ChildProcess::spawn({{binary, conf.string(), "--sentinel"}, "", "", {}});
            const auto log = dir / ("sentinel-" + std::to_string(port) + ".log");
            if (answers(sentinel, port, log)) {
                processes_.push_back(std::move(sentinel));
                endpoints_.push_back({"127.0.0.1", port});
                break;
            }
            if (attempt == kFreePortRetries)
                throw std::runtime_error("redis Sentinel: every free port found was taken before it could bind it (last " +
                                         std::to_string(port) + ")");
        }
    }
    for (const Endpoint& e : endpoints_) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!ready(e.port, master_name, endpoints_.size() - 1)) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("redis Sentinel on port " + std::to_string(e.port) +
                                         " did not name the master and meet the others within 10 s; its log: " +
                                         log_tail(dir / ("sentinel-" + std::to_string(e.port) + ".log")));
            std::this_thread::sleep_for(10ms);
        }
    }
}

SentinelWatch::SentinelWatch(Endpoint sentinel, const std::filesystem::path& log_path) {
    const timeval timeout{1, 0};
    redisContext* c = redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, timeout);
    if (c == nullptr || c->err) {
        const std::string why = c ? c->errstr : "out of memory";
        redisFree(c);
        throw std::runtime_error("cannot watch the Sentinel on port " + std::to_string(sentinel.port) + ": " + why);
    }
    // One SUBSCRIBE; its seven confirmations arrive as replies the loop reads and skips.
    if (redisAppendCommand(c, "SUBSCRIBE +sdown -sdown +odown -odown +try-failover +failover-end +switch-master") != REDIS_OK) {
        redisFree(c);
        throw std::runtime_error("cannot subscribe to the Sentinel on port " + std::to_string(sentinel.port));
    }
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) {
            const std::string why = c->errstr;
            redisFree(c);
            throw std::runtime_error("cannot subscribe to the Sentinel on port " + std::to_string(sentinel.port) +
                                     ": " + why);
        }
    log_fd_ = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd_ < 0 || ::pipe2(stop_fd_, O_CLOEXEC) != 0) {
        const std::string why = std::strerror(errno);
        redisFree(c);
        if (log_fd_ >= 0) ::close(log_fd_);
        throw std::runtime_error(log_path.string() + ": " + why);
    }
    thread_ = std::thread([this, c] { loop(c); });
}

SentinelWatch::~SentinelWatch() {
    if (thread_.joinable()) {
        const char x = 1;
        [[maybe_unused]] const auto n = ::write(stop_fd_[1], &x, 1);
        thread_.join();
    }
    for (int fd : {log_fd_, stop_fd_[0], stop_fd_[1]})
        if (fd >= 0) ::close(fd);
}

void SentinelWatch::loop(void* context) {
    auto* c = static_cast<redisContext*>(context);
    for (;;) {
        pollfd fds[2] = {{c->fd, POLLIN, 0}, {stop_fd_[0], POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[1].revents) break;
        // A Sentinel that goes away (the run is ending) ends the watch; nothing to report.
        if (redisBufferRead(c) != REDIS_OK) break;
        const long long t_ns = monotonic_ns();
        void* r = nullptr;
        while (redisGetReplyFromReader(c, &r) == REDIS_OK && r != nullptr) {
            auto* reply = static_cast<redisReply*>(r);
            // ["message", channel, payload]
            if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
                reply->element[0]->type == REDIS_REPLY_STRING && std::strcmp(reply->element[0]->str, "message") == 0 &&
                reply->element[2]->type == REDIS_REPLY_STRING) {
                const nlohmann::json line = {{"t_ns", t_ns}, {"op", "sentinel"}, {"event", reply->element[1]->str},
                                             {"detail", reply->element[2]->str}};
                const std::string text = line.dump() + "\n";
                [[maybe_unused]] const auto n = ::write(log_fd_, text.data(), text.size());
                ++heard_;
            }
            freeReplyObject(reply);
        }
    }
    redisFree(c);
}

void wait_for_replica_in_sync(int port, int master_port, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    LiveEnv replica({{{"127.0.0.1", port}}, 100ms});
    while (std::chrono::steady_clock::now() < deadline) {
        const Reply r = replica.command(NodeId{0}, {"INFO", "replication"}, 200ms, std::nullopt);
        if (r.ok() && r.value.str.find("master_link_status:up") != std::string::npos) break;
        std::this_thread::sleep_for(10ms);
    }
    // A link that says up may not acknowledge yet: a WAIT right after the sync timed out for
    // most of a second in one run (every lock that WAITs refused meanwhile). The run starts
    // once a write on the master is acknowledged.
    LiveEnv master({{{"127.0.0.1", master_port}}, 100ms});
    while (std::chrono::steady_clock::now() < deadline) {
        const Reply set = master.command(NodeId{0}, {"SET", "lockbench:replica-ack", "1"}, 200ms, std::nullopt);
        const Reply acks = master.command(NodeId{0}, {"WAIT", "1", "100"}, 300ms, std::nullopt);
        if (set.ok() && acks.ok() && acks.value.integer >= 1) {
            master.command(NodeId{0}, {"DEL", "lockbench:replica-ack"}, 200ms, std::nullopt);
            return;
        }
    }
    throw std::runtime_error("the replica on port " + std::to_string(port) + " did not reach and acknowledge its master within " +
                             std::to_string(limit.count()) + " ms");
}

}  // namespace lockbench
