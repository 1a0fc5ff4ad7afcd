// A redis-server process owned by lockbench; see redis_node.h.
//
//   start() ── pick port ── spawn redis-server ──┬─ answers PING (from our pid) ─▶ ready
//                 ▲                              ├─ exited, log says "Address already in use"
//                 └──── another port / retry ────┘
//                                                └─ exited otherwise, or timed out ─▶ throw
#include "sim/live/redis_node.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr auto start_timeout = 5s;
constexpr auto ping_poll_interval = 5ms;
constexpr auto stop_timeout = 5s;
// How long a just-freed port may stay busy: restart() reaps the server, but any child it forked
// (an AOF rewrite) dies with the group a moment later and may still hold the socket.
constexpr auto same_port_retry_window = 2s;
constexpr int free_port_retries = 3;

// ---- Sockets --------------------------------------------------------------------------------

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) close(fd);
    }
};

sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

// ---- hiredis --------------------------------------------------------------------------------

using Context = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

// The text of a status or string reply; empty for anything else, errors included.
std::string reply_text(redisContext* c, const char* command) {
    Reply reply(static_cast<redisReply*>(redisCommand(c, command)), freeReplyObject);
    if (!reply) return {};
    if (reply->type != REDIS_REPLY_STATUS && reply->type != REDIS_REPLY_STRING) return {};
    return std::string(reply->str, reply->len);
}

}  // namespace

bool our_server_answers(int port, pid_t pid) {
    const timeval timeout{0, 200'000};
    Context c(redisConnectWithTimeout("127.0.0.1", port, timeout), redisFree);
    if (!c || c->err) return false;
    redisSetTimeout(c.get(), timeout);
    if (reply_text(c.get(), "PING") != "PONG") return false;  // LOADING while reading its AOF
    const std::string info = reply_text(c.get(), "INFO server");
    return info.find("process_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
}

bool RedisNode::asked_since_start() {
    // What a library sends on connecting (and lockbench's own PING and INFO) is no question; nor
    // is what Sentinel (its hello messages) or a replica (its sync) sends.
    static const std::set<std::string> setup = {"ping",   "info",      "hello",     "client",    "select", "auth",
                                                "echo",   "command",   "config",    "readonly",  "script", "cluster",
                                                "role",   "quit",      "publish",   "subscribe", "replconf", "psync",
                                                "sync"};
    const timeval timeout{0, 200'000};
    Context c(redisConnectWithTimeout("127.0.0.1", port_, timeout), redisFree);
    if (!c || c->err) return false;
    redisSetTimeout(c.get(), timeout);
    const std::string stats = reply_text(c.get(), "INFO commandstats");
    // Lines "cmdstat_<name>:calls=<n>,...", <name> possibly "<command>|<subcommand>".
    std::istringstream lines(stats);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("cmdstat_")) continue;
        const std::string name = line.substr(8, line.find_first_of(":|") - 8);
        if (!setup.contains(name)) return true;
    }
    return false;
}

namespace {

// ---- The log --------------------------------------------------------------------------------

std::uintmax_t size_or_zero(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : size;
}

// What this start attempt wrote: the log is appended to across restarts.
std::string read_from(const fs::path& path, std::uintmax_t offset) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The last `count` non-empty lines, joined by " | " so that an error stays one line.
std::string last_lines(const std::string& text, int count) {
    std::vector<std::string> lines;
    std::size_t end = text.size();
    while (end > 0 && static_cast<int>(lines.size()) < count) {
        const std::size_t newline = text.rfind('\n', end - 1);
        const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
        std::string line = text.substr(begin, end - begin);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        if (!line.empty()) lines.insert(lines.begin(), line.size() > 300 ? line.substr(0, 300) + "..." : line);
        end = newline == std::string::npos ? 0 : newline;
    }
    if (lines.empty()) return "(nothing logged)";
    std::string joined;
    for (const auto& l : lines) joined += (joined.empty() ? "" : " | ") + l;
    return joined;
}

std::string describe_status(std::optional<int> status) {
    if (!status) return "unknown status";
    if (WIFEXITED(*status)) return "exit code " + std::to_string(WEXITSTATUS(*status));
    if (WIFSIGNALED(*status)) return std::string("killed by ") + strsignal(WTERMSIG(*status));
    return "status " + std::to_string(*status);
}

bool is_data_file(const std::string& name) {
    // dump.rdb, appendonly.aof (redis < 7), appendonlydir/ (redis 7), temp-*.rdb/aof.
    return name == "dump.rdb" || name.starts_with("appendonly") || name.starts_with("temp-");
}


}  // namespace

std::string log_tail(const fs::path& log, int count) { return last_lines(read_from(log, 0), count); }

// ---- RedisNode ------------------------------------------------------------------------------

RedisNode::RedisNode(RedisNodeConfig config, std::filesystem::path dir)
    : config_(std::move(config)), dir_(config_.name.empty() ? dir : dir / config_.name) {
    start();
}

// process_'s own destructor SIGKILLs and reaps; no SHUTDOWN over the network here.
RedisNode::~RedisNode() = default;

void RedisNode::start() {
    if (running()) return;
    const std::string binary = redis_server_binary();
    fs::create_directories(dir_);
    if (port_ == 0 && !config_.port) return start_on_free_port(binary);
    if (port_ == 0) {
        if (port_in_use(*config_.port)) throw port_in_use_error(*config_.port);
        port_ = *config_.port;
    }
    start_on_known_port(binary);
}

// Another program can take the port between find_free_port() and redis binding it.
void RedisNode::start_on_free_port(const std::string& binary) {
    for (int attempt = 0; attempt <= free_port_retries; ++attempt) {
        port_ = find_free_port();
        if (launch(binary)) return;
    }
    const int last_port = std::exchange(port_, 0);
    throw std::runtime_error("redis node " + name() + ": every free port found was taken before " +
                             "redis-server could bind it (last " + std::to_string(last_port) + ")");
}

void RedisNode::start_on_known_port(const std::string& binary) {
    const auto deadline = std::chrono::steady_clock::now() + same_port_retry_window;
    while (!launch(binary)) {
        if (std::chrono::steady_clock::now() >= deadline) throw port_in_use_error(port_);
        std::this_thread::sleep_for(50ms);
    }
}

// Spawns redis-server on port_ and waits for it. True when it is ready; false when it could
// not bind the port; throws for any other failure.
bool RedisNode::launch(const std::string& binary) {
    const auto log_offset = size_or_zero(log_path());
    process_ = ChildProcess::spawn(spawn_options(binary));
    const auto deadline = std::chrono::steady_clock::now() + start_timeout;
    while (process_.running()) {
        if (our_server_answers(port_, process_.pid())) return true;
        if (std::chrono::steady_clock::now() >= deadline) {
            process_.kill_and_reap();
            throw start_failure("did not answer PING within 5 s", log_offset);
        }
        std::this_thread::sleep_for(ping_poll_interval);
    }
    if (read_from(log_path(), log_offset).find("Address already in use") != std::string::npos)
        return false;
    throw start_failure("exited during start-up (" + describe_status(process_.exit_status()) + ")",
                        log_offset);
}

SpawnOptions RedisNode::spawn_options(const std::string& binary) const {
    const bool aof = config_.persistence != Persistence::none;
    SpawnOptions opts;
    opts.argv = {binary,        "--port",     std::to_string(port_), "--bind",
                 "127.0.0.1",   "--dir",      dir_.string(),         "--daemonize",
                 "no",          "--logfile",  log_path().string(),   "--save",
                 "",            "--appendonly", aof ? "yes" : "no"};
    if (aof) {
        opts.argv.push_back("--appendfsync");
        opts.argv.push_back(config_.persistence == Persistence::aof_always ? "always" : "everysec");
    }
    for (const char* arg : {"--protected-mode", "yes", "--dbfilename", "dump.rdb"})
        opts.argv.push_back(arg);
    opts.argv.insert(opts.argv.end(), config_.extra_args.begin(), config_.extra_args.end());
    // Errors in the arguments go to stderr before the log file is open: keep them with the log.
    opts.stdout_path = opts.stderr_path = log_path().string();
    opts.extra_env = config_.extra_env;
    return opts;
}

std::runtime_error RedisNode::start_failure(const std::string& what,
                                            std::uintmax_t log_offset) const {
    // What the log said, not where it is: the log lives in the run's temporary folder, which
    // is gone by the time this message is read.
    const std::string tail = last_lines(read_from(log_path(), log_offset), 3);
    return std::runtime_error("redis node " + name() + " on port " + std::to_string(port_) + " " +
                              what + "; its log ended: " + tail);
}

PortInUse RedisNode::port_in_use_error(int port) const {
    return PortInUse("port " + std::to_string(port) +
                              " on 127.0.0.1 is already in use (node " + name() +
                              "); choose another or leave the port unset");
}

void RedisNode::stop() {
    if (!running()) return;
    process_.signal(SIGTERM);
    process_.signal(SIGCONT);  // a paused server would never see the SIGTERM
    if (!process_.wait_for(stop_timeout)) process_.kill_and_reap();
}

void RedisNode::kill() { process_.signal(SIGKILL); }
bool RedisNode::pause() { return process_.stop(); }  // in place once its every thread has stopped
void RedisNode::resume() { process_.signal(SIGCONT); }
bool RedisNode::running() { return process_.running(); }

void RedisNode::restart(bool keep_data) {
    process_.kill_and_reap();
    if (!keep_data && fs::exists(dir_)) {
        std::vector<fs::path> data;  // collected first: removing while iterating is unspecified
        for (const auto& entry : fs::directory_iterator(dir_))
            if (is_data_file(entry.path().filename().string())) data.push_back(entry.path());
        for (const auto& path : data) fs::remove_all(path);
    }
    start();
}

// ---- Free functions -------------------------------------------------------------------------

std::string redis_server_binary() {
    if (const char* configured = std::getenv("LOCKBENCH_REDIS_SERVER"); configured && *configured) {
        if (!is_executable_file(configured))
            throw std::runtime_error(std::string("LOCKBENCH_REDIS_SERVER=") + configured +
                                     ": no such executable");
        return configured;
    }
    if (auto found = find_on_path("redis-server")) return *found;
    throw std::runtime_error(
        "redis-server not found on PATH: run scripts/setup (or apt-get install redis-server)");
}

int find_free_port() {
    Fd sock{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    sockaddr_in addr = loopback(0);
    socklen_t len = sizeof addr;
    if (sock.fd < 0 || bind(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(sock.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error(std::string("cannot find a free port on 127.0.0.1: ") +
                                 std::strerror(errno));
    return ntohs(addr.sin_port);
}

// Binds the way redis-server does (SO_REUSEADDR): a listener on the port, on 127.0.0.1 or on
// any address, makes it fail; connections lingering in TIME_WAIT do not.
bool port_in_use(int port) {
    Fd sock{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (sock.fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int yes = 1;
    setsockopt(sock.fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const sockaddr_in addr = loopback(port);
    return bind(sock.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
           errno == EADDRINUSE;
}

// The lowest port the kernel hands out by itself (for bind to port 0, and as the source port
// of an outgoing connection); 32768 unless the machine says otherwise.
static int ephemeral_port_floor() {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0;
    return range >> low ? low : 32768;
}

std::vector<int> ports_below_ephemeral(int count) {
    const int floor = ephemeral_port_floor(), lowest = 10000;
    std::set<int> taken;
    std::mt19937 random(std::random_device{}());
    auto fresh = [&] {
        for (int attempt = 0; floor - lowest > 1000 && attempt < 1000; ++attempt) {
            const int p = std::uniform_int_distribution<int>(lowest, floor - 1)(random);
            if (!port_in_use(p) && taken.insert(p).second) return p;
        }
        for (;;)  // a machine whose ephemeral range leaves no room below it
            if (const int p = find_free_port(); taken.insert(p).second) return p;
    };
    std::vector<int> ports;
    for (int i = 0; i < count; ++i) ports.push_back(fresh());
    return ports;
}

}  // namespace lockbench
