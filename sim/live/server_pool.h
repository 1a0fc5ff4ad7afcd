// Servers that live across repetitions (issue 44): a matrix keeps a run's ensemble for the next
// run of the same service and shape, wiped and proved wiped, instead of starting it anew
// (ZooKeeper's JVMs, etcd's members, PostgreSQL with its PgBouncer: lock_service.h, keepable).
//
//   matrix ── ServerPool (a socket in the matrix's temporary folder, LOCKBENCH_SERVER_POOL)
//               │  starts services on threads of its own (their processes die with them)
//   run ────────┤  take {service, size, settings, ...}  ──►  an idle one alike, else a new one
//               │                                       ◄──  its servers: name, port, pid, log,
//               │                                            where this run's part of the log
//               │                                            begins; the clients' environment
//               │  the connection closed (the run over: its nemesis stopped, its clients
//               │  reaped)  ──►  LockService::wipe(): what the run left removed, and each server
//               │               asked whether it is as it was right after its start; kept
//               │               idle if so, ended if not (the reason counted)
//
// Only a run none of whose faults reaches a server takes one (a server paused, crashed or
// restarted, its clock shifted, its disk stalled or its peer links cut change what it is: such
// a run starts its own, as does a run with no pool, or with LOCKBENCH_FRESH_SERVERS=1), and
// only a service that can wipe itself (lock_service.h: keepable).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/live/lock_service.h"

namespace lockbench {

// The environment variable that names the pool's socket to the processes a matrix starts.
inline constexpr const char* kServerPoolVar = "LOCKBENCH_SERVER_POOL";

// The service `config` asks for, kept by the matrix's pool: its servers take no fault, and it
// goes back to the pool when destroyed. nullptr when there is no pool, the service is not
// keepable, or the pool could not give one (the run then starts its own).
std::unique_ptr<LockService> take_kept_service(Service service, const ServiceConfig& config);

class ServerPool {
public:
    // Listens on dir/servers.sock and sets LOCKBENCH_SERVER_POOL in this process's
    // environment, which every process it starts from here on inherits.
    explicit ServerPool(std::filesystem::path dir);
    ~ServerPool();  // end_all()
    // Unsets the variable, waits for the runs' connections to end, ends every service.
    void end_all();
    ServerPool(const ServerPool&) = delete;
    ServerPool& operator=(const ServerPool&) = delete;

    int started() const { return started_; }    // services it started
    int reused() const { return reused_; }      // times a wiped one served another run
    int not_kept() const { return not_kept_; }  // wipes that failed: those ended
    int idle() const;                           // wiped, and waiting for a run
    // Why the first wipes that failed did (at most five), for the matrix's last line.
    std::vector<std::string> reasons() const;
    // The CPU seconds of the servers it has ended: the runs' timing.json counts only what
    // each run reaped, and no run reaps a kept server.
    double cpu_seconds() const { return cpu_s_; }

private:
    struct Kept {
        std::string key;
        std::unique_ptr<LockService> service;
    };
    void accept_loop();
    void serve(int conn);
    // Runs `job` on a thread that starts services (their processes die with that thread, which
    // lives until the pool ends).
    void on_starter(std::function<void()> job);
    void end(std::unique_ptr<LockService> service);  // its CPU counted, its processes ended

    std::filesystem::path dir_;
    std::filesystem::path socket_path_;
    int listen_fd_ = -1;
    int wake_[2] = {-1, -1};
    std::thread acceptor_;
    std::vector<std::thread> starters_;
    mutable std::mutex mutex_;
    std::condition_variable jobs_ready_;
    std::deque<std::function<void()>> jobs_;
    bool ending_ = false;
    struct Run {
        std::thread thread;                       // one per run's connection
        std::shared_ptr<std::atomic<bool>> over;  // its thread is done: join it
    };
    std::vector<Run> runs_;
    std::vector<int> connections_;
    std::vector<Kept> idle_;
    std::vector<std::string> reasons_;
    int next_id_ = 1;
    std::atomic<int> started_{0};
    std::atomic<int> reused_{0};
    std::atomic<int> not_kept_{0};
    std::atomic<double> cpu_s_{0};
};

}  // namespace lockbench
