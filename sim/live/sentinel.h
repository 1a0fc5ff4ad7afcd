// A master with one replica and its Sentinels (one by default), on loopback, for the
// failover cases.
//
//   clients ──(Sentinel: where is the master?)──► sentinel ×N ── monitor ──► repl proxy ──► master
//                                                                              ▲
//   replica ── REPLICAOF repl proxy ───────────────────────────────────────────┘
//
// The Sentinels and the replica know the master by the replication proxy's address, so
// holding that link keeps a write off the replica, and Sentinel never "fixes" the replica
// to point at the master directly (+fix-slave-config) around the proxy. Clients ask a
// Sentinel for the master and translate its answer through an address map to their own
// path (the master directly, not through the held replication link).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "process/process.h"
#include "sim/live/live_env.h"

namespace lockbench {

// The name under which Sentinel watches lock0 of topology "sentinel".
inline constexpr const char* kMasterName = "lockbench";

struct SentinelSettings {
    // Lower and Sentinel sees a live master as down: at 200 ms, on a machine busy starting
    // three Python clients beside other runs, it did so after the run's settling (below), and
    // its aborted failover held the real one back by 2 × failover_timeout_ms.
    long long down_after_ms = 500;
    long long failover_timeout_ms = 3000;
    // One Sentinel (quorum 1) elects itself: the failover cases are about what asynchronous
    // replication loses at the promotion, and with three Sentinels a split vote postpones
    // the promotion by 2 × failover_timeout_ms (seen in 1 of 10 repetitions on a busy
    // machine: no promotion within the 6 s run).
    int count = 1;
    int quorum = 1;
};

class SentinelGroup {
public:
    // Starts settings.count Sentinels watching `master_name` at `master` (the replication
    // proxy) and waits until each knows the master and the others (about 2 s when there are
    // several). Each on a port `pick_port` gives (unset: find_free_port()); one that finds its
    // port taken starts again on the next. Throws one clear line on failure.
    SentinelGroup(const std::string& master_name, Endpoint master, const std::filesystem::path& dir,
                  const SentinelSettings& settings, const std::function<int()>& pick_port = {});
    ~SentinelGroup() = default;
    SentinelGroup(SentinelGroup&&) = default;

    const std::vector<Endpoint>& endpoints() const { return endpoints_; }
    const std::string& master_name() const { return master_name_; }

private:
    std::string master_name_;
    std::vector<Endpoint> endpoints_;
    std::vector<ChildProcess> processes_;
};

// Records what one Sentinel announces about the failover, as it happens, so that the report
// can shade the window from "the master is down" to "the replica is promoted": subscribes
// to +sdown, +odown, -odown, +failover-end and +switch-master and appends one line per event
// to `log_path`: {"t_ns": CLOCK_MONOTONIC at receipt, "op": "sentinel", "event": "+odown",
// "detail": "master lockbench 127.0.0.1 40123"}. Stops (and joins) when destroyed.
class SentinelWatch {
public:
    SentinelWatch(Endpoint sentinel, const std::filesystem::path& log_path);
    ~SentinelWatch();
    SentinelWatch(const SentinelWatch&) = delete;
    SentinelWatch& operator=(const SentinelWatch&) = delete;

    // Events announced since the watch began.
    int heard() const { return heard_.load(); }

private:
    void loop(void* context);
    std::atomic<int> heard_{0};
    int log_fd_ = -1;
    int stop_fd_[2] = {-1, -1};
    std::thread thread_;
};

// Blocks (bounded) until the replica at `port` reports its link to the master up and a write
// on the master (`master_port`) is acknowledged by it.
void wait_for_replica_in_sync(int port, int master_port, std::chrono::milliseconds limit);

}  // namespace lockbench
