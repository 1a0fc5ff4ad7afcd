// The servers a run's clients lock on: Redis nodes (the default), or the servers of another
// service (sim/engine/service.h). lockbench starts them itself, on 127.0.0.1 only, in the run's temporary
// folder, and nothing they start outlives it (process/process.h). The nemesis reaches every
// one of them the same way: kill and restart, pause and resume, and, where a service has
// one, ask which server leads now.
//
//   run ── service "redis" ─► RedisNode ×N  (sim/live/redis_node.h)
//       ── any other ─────────► start_service ─► that service's own file of sim/live/
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/service.h"

namespace lockbench {

class ProxyHub;

// One server process: what a fault can do to it.
class LockServer {
public:
    virtual ~LockServer() = default;
    virtual const std::string& name() const = 0;  // "lock0", "zk1", "etcd2": names its folder and errors
    virtual int port() const = 0;                 // where clients connect, on 127.0.0.1
    virtual pid_t pid() const = 0;
    // SIGKILL, nothing written on the way out; returns at once. A process can take a while to
    // die, and the nemesis that crashes it must go on answering clients meanwhile (once, under
    // load, a crash held a client 695 ms while waiting for its server): restart() and the
    // destructor reap it.
    virtual void kill() = 0;
    // Starts it again on the same ports and returns once it answers; keep_data=false removes
    // its data first (a Redis node without persistence). Throws std::runtime_error if it
    // does not come back.
    virtual void restart(bool keep_data) = 0;
    // Whether a client (not lockbench) has asked it anything since it last started: after a
    // restart, the moment the clients' libraries are back with it. A server that cannot tell
    // says yes.
    virtual bool asked_since_start() { return true; }
    // SIGSTOP; returns once every thread of it has stopped, false if one still ran after 10 s
    // (the pause is not in place: the run is not as written).
    virtual bool pause() = 0;
    virtual void resume() = 0;                    // SIGCONT
    virtual std::filesystem::path log_path() const = 0;
    // Where this run's part of that log begins: 0 but for a server kept across repetitions
    // (sim/live/server_pool.h), whose log holds the runs before.
    virtual std::uintmax_t log_from() const { return 0; }
};

struct ServiceConfig {
    int size = 1;                               // servers: 1, or an ensemble of 3 (or 5)
    std::filesystem::path dir;                  // each server's folder goes under it
    // Per server (empty, or one entry per server): "NAME=value" added to its environment,
    // the clock shim's LD_PRELOAD among them.
    std::vector<std::vector<std::string>> env;
    // When set, the links between servers go through proxies of this hub, so that a link
    // fault can cut them (ZooKeeper only: etcd's peer URLs must be the same cluster-wide).
    // Proxy names: "s<i>-s<j>-<what>" carries the connections server i opens to server j.
    ProxyHub* peer_proxies = nullptr;
    // Settings given to the server, for a service that takes them (ServiceInfo::server_settings),
    // and the pool mode of the pooler in front of it (ServiceInfo::pooler; empty: none).
    std::map<std::string, std::string> settings;
    std::string pgbouncer;
    // The program its servers run, for a service that takes one (ServiceInfo::server_program);
    // empty: the one it finds itself.
    std::filesystem::path program;
    // The run's lease (its ttl_ms), for a service whose servers keep it themselves (Hazelcast:
    // its CP sessions last as long as the members are configured to let them).
    long long lease_ms = 0;
    // To be kept across repetitions (sim/live/server_pool.h): once up, each server's state as
    // new is recorded for LockService::wipe() to compare with.
    bool kept = false;
};

// A running service: its servers, by index, and who leads.
class LockService {
public:
    virtual ~LockService() = default;
    virtual std::vector<LockServer*> servers() = 0;
    // The index of the server that says it leads right now, asked of the servers
    // themselves; none while no server does (an election in progress, or a service without
    // a leader).
    virtual std::optional<int> leader() = 0;
    // What a client's adapter needs besides the servers' addresses ("NAME" → value, added to
    // its environment): a database server's user, password and database.
    virtual std::map<std::string, std::string> client_env() const { return {}; }
    // For a service kept across repetitions (sim/live/server_pool.h), once a run is over:
    // removes what its clients left (keys, znodes, sessions, locks) and proves, by asking the
    // servers themselves, that each is as it was right after its start. Nothing when proved;
    // else why not, and the service is not used again. A service that cannot is never kept.
    virtual std::optional<std::string> wipe() { return std::string("this service cannot be wiped"); }
};

// For a kept service's record of its state as new and a wipe's proof: asks server 0, then 1,
// ... whether `settled(i)` (it answered, and as asked), asking the same one again every
// `every` until it is; the first one not settled by `deadline`, none when every one was.
std::optional<std::size_t> first_unsettled(std::size_t count, std::chrono::steady_clock::time_point deadline,
                                           std::chrono::milliseconds every, const std::function<bool(std::size_t)>& settled);

// Each returns once every server answers and (for an ensemble) a leader is elected. Throws
// std::runtime_error with one line: the server's program missing (names scripts/setup),
// or a server that did not come up in time (quotes the end of its log).
// The one a run's service names (not Redis, whose nodes a run starts itself): each service's
// own file of sim/live/ defines its start, which lock_service.cpp alone names.
std::unique_ptr<LockService> start_service(Service service, const ServiceConfig& config);

// Whether a run's servers of `service` may be kept across repetitions: it can wipe them
// (LockService::wipe) and a run that did not start them can ask them who leads (below).
bool keepable(Service service);
// Which of the servers on `ports` says it leads, asked as that service's own leader() asks:
// for servers a run did not start. Only for a keepable service.
std::optional<int> ask_leader(Service service, const std::vector<int>& ports);

}  // namespace lockbench
