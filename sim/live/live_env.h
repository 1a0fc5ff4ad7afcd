// The live implementation of the seam: hiredis on real sockets, real clocks, real sleeps.
//
//   LiveEnv ──command(i)──► hiredis context i ──TCP──► redis-server i
//           ──fan_out────► append to every context, flush all, then poll() every socket
//                          until each has a reply or its timeout passes (no threads)
//
// hiredis failures are mapped to Reply in one place (to_reply / fail_connection): a
// connect failure is an error (nothing was sent); a timeout or lost connection after
// sending is unknown, and the connection is dropped so the next command starts clean.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "faults/endpoint.h"
#include "lockimpl/env.h"
#include "sim/engine/clock.h"

struct redisContext;

namespace lockbench {

// Finds a node's current master through Redis Sentinel before each (re)connect. The
// Sentinels' answer ("host:port") is translated through `address_map` when it has an entry:
// a client's own path to that server.
struct SentinelDiscovery {
    std::vector<Endpoint> sentinels;
    std::string master_name;
    std::map<std::string, Endpoint> address_map;
};

// Holds a client's background tasks while a "task": "background" pause is in force
// (sim/live/background_control.h sets it on the nemesis's signal). A held task's sleep does
// not end and its commands wait; released, a sleep already over ends at once.
class BackgroundGate {
public:
    void hold();
    void release();
    void wait_released();
    // Waits while held; returns false (at once) if *stop is or becomes true.
    bool wait_released_unless_stopped(const bool& stop);
    // Sleeps for d, then on while held; returns false (at once) if *stop is or becomes true.
    // `stop` is guarded by this gate's mutex: set it through request_stop().
    bool sleep_unless_stopped(Duration d, const bool& stop);
    void request_stop(bool& stop);

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool held_ = false;
};

struct LiveEnvConfig {
    std::vector<Endpoint> nodes;
    Duration connect_timeout = std::chrono::milliseconds(200);
    std::uint64_t seed = 1;
    std::function<void(Point)> on_point;   // called on every reach(); may be empty
    std::map<int, SentinelDiscovery> discovery;  // nodes found through Sentinel, by index
    // The gate a background task's env and sleeps wait at; unset: one of the task's own.
    std::shared_ptr<BackgroundGate> background_gate;
    bool in_background = false;  // set by background(): this env's commands wait at the gate
    const bool* background_stop = nullptr;  // set by the task: its stop request ends that wait
};

class LiveEnv final : public Env {
public:
    explicit LiveEnv(LiveEnvConfig config);
    ~LiveEnv() override;
    LiveEnv(const LiveEnv&) = delete;
    LiveEnv& operator=(const LiveEnv&) = delete;

    int node_count() const override { return static_cast<int>(config_.nodes.size()); }
    Reply command(NodeId node, const Command& cmd, Duration timeout,
                  std::optional<Point> after_send) override;
    std::vector<Reply> fan_out(const Command& cmd, Duration timeout,
                               std::optional<Point> after_send) override;
    Instant now() override;
    long long wall_ms() override;
    void sleep(Duration d) override;
    std::uint64_t random() override { return rng_(); }
    void reach(Point p) override;
    std::unique_ptr<BackgroundTask> background(std::function<void(Env&, StopSignal&)> task) override;

private:
    struct Connection {
        redisContext* ctx = nullptr;
        Duration timeout{-1};   // the socket timeout last set, to skip needless setsockopt
    };

    // Connects node i if needed; returns an error message if it cannot.
    std::optional<std::string> ensure_connected(int i, Duration timeout);
    // A background task's env waits here while its gate is held; false if the task is stopped.
    bool background_released();
    std::optional<Endpoint> discover(const SentinelDiscovery& d, Duration timeout);
    bool send(int i, const Command& cmd, Reply& reply);
    Reply fail_connection(int i, Reply::Status status, std::string what);
    Reply read_one(int i, Reply reply);
    void await_replies(std::vector<Reply>& replies, std::vector<int> pending, Duration timeout);

    LiveEnvConfig config_;
    std::vector<Connection> connections_;
    std::mt19937_64 rng_;
};

}  // namespace lockbench
