// A redis-server process that lockbench starts, owns and stops.
//
// Bound to 127.0.0.1 only, on a free port (or the one given), in its own directory under the
// run's temporary folder, no persistence unless asked. start() returns once the server answers
// PING. Nothing it starts outlives lockbench (see process/process.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "process/process.h"
#include "sim/engine/persistence.h"
#include "sim/live/lock_service.h"

namespace lockbench {

// A port asked for (a scenario's base_port) that another process holds.
struct PortInUse : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct RedisNodeConfig {
    std::string name;                      // "lock0", "store": names the folder and errors
    std::optional<int> port;               // none: a free port is found
    Persistence persistence = Persistence::none;
    std::vector<std::string> extra_args;   // more "--name value" pairs for redis-server
    std::vector<std::string> extra_env;    // "NAME=value" for its environment (the clock shim)
};

class RedisNode final : public LockServer {
public:
    // Throws std::runtime_error with one clear line: redis-server missing (names the fix:
    // scripts/setup or apt-get install redis-server), port in use (names the port), or the
    // server did not answer PING within the start timeout (quotes the last lines of its log).
    RedisNode(RedisNodeConfig config, std::filesystem::path dir);
    ~RedisNode() override;
    RedisNode(RedisNode&&) noexcept = default;
    RedisNode& operator=(RedisNode&&) noexcept = default;

    void start();
    void stop();                      // SHUTDOWN NOSAVE via SIGTERM; waits for exit
    void kill() override;             // SIGKILL, no chance to write anything
    bool pause() override;            // SIGSTOP, in place when it returns true
    void resume() override;           // SIGCONT
    // Starts it again on the same port; keep_data=false removes its data files first.
    void restart(bool keep_data) override;
    bool running();
    // Its INFO commandstats count a command other than a connection's set-up (PING, INFO,
    // HELLO, CLIENT, SELECT, ...): a client asked it for a lock, a key, a script's run.
    bool asked_since_start() override;

    int port() const override { return port_; }
    const std::string& name() const override { return config_.name; }
    const std::filesystem::path& dir() const { return dir_; }
    std::filesystem::path log_path() const override { return dir_ / "redis.log"; }
    pid_t pid() const override { return process_.pid(); }

private:
    void start_on_free_port(const std::string& binary);
    void start_on_known_port(const std::string& binary);
    bool launch(const std::string& binary);
    SpawnOptions spawn_options(const std::string& binary) const;
    std::runtime_error start_failure(const std::string& what, std::uintmax_t log_offset) const;
    PortInUse port_in_use_error(int port) const;

    RedisNodeConfig config_;
    std::filesystem::path dir_;
    int port_ = 0;
    ChildProcess process_;
};

// The path of the redis-server binary: $LOCKBENCH_REDIS_SERVER if set, else PATH lookup.
// Throws one clear line if there is none.
std::string redis_server_binary();

// The last `count` non-empty lines of a server's log file, joined by " | ": an error that
// quotes it stays one line and outlives the run's temporary folder.
std::string log_tail(const std::filesystem::path& log, int count = 3);

// True once the redis-server (or Sentinel) on 127.0.0.1:port answers PING and is process
// `pid`: if another program took the port first, its answer must not count as ours.
bool our_server_answers(int port, pid_t pid);

// A TCP port on 127.0.0.1 that nothing listens on right now (another program may take it
// before the caller binds it: an outgoing connection's source port comes from the same range).
int find_free_port();
// True if something already listens on 127.0.0.1:port.
bool port_in_use(int port);
// `count` distinct ports, free now and below the ephemeral range, for servers that bind some of
// their ports late (a ZooKeeper leader's quorum port) or again on a restart: an outgoing
// connection on the machine (the servers' own, the proxies') may meanwhile be given any port of
// that range, and one taken that way would keep the server from binding it.
std::vector<int> ports_below_ephemeral(int count);

}  // namespace lockbench
