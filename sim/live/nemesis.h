// The nemesis: the fault schedule of one run, carried out from the parent process.
//
//   client ──reach(point)──► "reach after_acquire\n" ──unix socket──► Nemesis thread
//     (blocks)                                                          │ fault armed here?
//                                                                       ├─ pause: SIGSTOP the client
//                                                                       ├─ kill:  SIGKILL the client
//                                                                       ├─ gate:  hold it until N
//                                                                       │         clients are held
//                                                                       ├─ clock: step or drift the
//                                                                       │         client's or a node's
//                                                                       │         wall clock (shim)
//                                                                       ├─ link:  blackhole / hold /
//                                                                       │         delay / reset the
//                                                                       │         client's proxied paths
//                                                                       └─ crash: SIGKILL a lock node,
//                                                                                 restart it later
//   client ◄──────────── "go\n" / "disarm\n" ◄──────────────────────────┘ (once the fault is in place)
//
// A client at an armed point waits for the answer, so a pause "right after acquiring"
// begins right there in every run: the SIGSTOP lands before the "go" is written, and the
// client reads it only when it is resumed. Faults can also fire at a time after the start.
// Which fault fires when, what it logs and what is healed at the end is the run's
// FaultSchedule (sim/engine/fault_schedule.h), the simulator's too; this class is its live
// actuator and the socket the clients report through. Every fault's start and end goes to
// nemesis.jsonl (CLOCK_MONOTONIC, as the histories), and stop() heals whatever is still in
// force: no client is left stopped or held.
#pragma once

#include <csignal>

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "faults/clock_control.h"
#include "faults/link_proxy.h"
#include "lockimpl/env.h"
#include "sim/engine/fault_actuator.h"
#include "sim/engine/fault_schedule.h"
#include "sim/engine/fault_spec.h"
#include "sim/live/live_env.h"
#include "sim/live/lock_service.h"

namespace lockbench {

class Nemesis final : private FaultActuator {
public:
    // Listens on `socket_path`; writes the fault log to `log_path`.
    Nemesis(std::vector<FaultSpec> faults, std::filesystem::path socket_path, std::filesystem::path log_path);
    ~Nemesis() override;
    Nemesis(const Nemesis&) = delete;
    Nemesis& operator=(const Nemesis&) = delete;

    // The workload's start_after, set before the clients ask for armed_points().
    void set_start_after(std::optional<StartAfter> s) { schedule_.set_start_after(s); }
    // Point names some fault is armed at: the clients report only these.
    std::vector<std::string> armed_points() const { return schedule_.armed_points(); }
    // Whether some clock fault aims at clients / at lock nodes: they then run under the shim.
    bool skews_clients() const;
    bool skews_nodes() const;
    // The clock controls of the clients and of the lock nodes, by index (before start()).
    void set_clocks(std::vector<ClockControl*> clients, std::vector<ClockControl*> nodes);
    // Whether some fault acts on links: the clients then reach every node through proxies.
    bool needs_proxies() const;
    // Whether some fault cuts the links between servers: they then reach each other through
    // proxies (ZooKeeper; sim/live/lock_service.h).
    bool needs_peer_proxies() const;
    // Whether some fault reaches a lock server itself: pauses, crashes or restarts it, shifts
    // its clock, stalls its disk or cuts its peer links. Such a run starts its own servers
    // rather than take kept ones (sim/live/server_pool.h).
    bool reaches_servers() const;
    // The proxies ("c<client>-n<node>", "c<client>-store", "repl", "s<i>-s<j>-…"), the lock
    // servers, and the service that says who leads (none for Redis), before start(). A node
    // restarted by a crash fault is started from the restart thread (a server takes a while
    // to come back, and the fault thread answers the clients at their points meanwhile), so
    // it dies with that thread at stop(): after the clients are done, when nodes are let go.
    void set_world(ProxyHub* proxies, std::vector<LockServer*> nodes, LockService* service = nullptr);
    // The protected store's port: a fault aimed at "holder" asks it who entered last.
    void set_store_port(int port) { store_port_ = port; }
    const std::filesystem::path& socket_path() const { return socket_path_; }

    // Starts the fault thread; clients[i] is client i's process id. Time-based faults count
    // from `start_at_ns` (CLOCK_MONOTONIC); `seed` seeds a repeating fault's draws.
    void start(std::vector<pid_t> clients, long long start_at_ns, std::uint64_t seed = 0);
    // Before start: for each client, the group its pooled adapter leads (0: none, its adapter
    // is in its own group), which a pause, a resume or a kill of the client reaches too.
    void set_adapter_groups(std::vector<pid_t> groups) { adapter_groups_ = std::move(groups); }
    // Heals every fault still in force (resumes paused clients, lets held ones go) and
    // stops the thread.
    void stop();

    bool killed(int client) const;
    // Per fault: its label and how often it fired, on which clients.
    nlohmann::json report() const;
    long long injected() const;
    std::vector<std::string> unmet() const;

private:
    struct Connection;
    void loop();
    int poll_timeout_ms() const;
    void read_from(Connection& c);
    void on_line(Connection& c, const std::string& line);
    void on_reach(int client, Point p);
    void reply(int client, const char* word);

    // The actuator: what the schedule orders, with signals, proxies, the clock shim, nodes.
    bool pause(int client) override;
    void resume(int client) override;
    void pause_background(int client) override { signal_background(client, SIGUSR1, "held"); }
    void resume_background(int client) override { signal_background(client, SIGUSR2, "released"); }
    void signal_background(int client, int signal, const std::string& ack);
    void kill(int client) override;
    void hold(int) override {}  // a client held at a gate is one not answered yet
    void let_go(int client) override { reply(client, "go\n"); }
    void step_clock(ClockOf clock, long long jump_ms) override;
    void drift_clock(ClockOf clock, double rate) override;
    void set_link(LinkPath path, std::optional<Direction> direction, const LinkFault& fault) override;
    HeldPath held_path(LinkPath path) override;
    void mark_requests() override;
    long long first_request(LinkPath path) override;
    void crash(int node) override;
    std::optional<bool> restart(int node) override;
    std::optional<bool> restarted(int node, bool wait) override;
    bool asked_since_restart(int node) override { return nodes_.at(static_cast<size_t>(node))->asked_since_start(); }
    void restart_loop();
    bool pause_node(int node) override;
    void resume_node(int node) override;
    void stall_disk(int node, bool stalled) override;
    int resolve_node(int node) override;
    bool has_leader() override;
    int node_count() const override { return static_cast<int>(nodes_.size()); }
    std::optional<int> current_holder() override;
    std::optional<Value> ask_store(const Command& command) override;
    void set_peer_link(int from, int to, std::optional<Direction> direction, const LinkFault& fault);
    LinkProxy* proxy_of(LinkPath path) const;  // a client's or the replication's; none without proxies
    ClockControl& clock_of(ClockOf clock) const;

    std::filesystem::path socket_path_;
    int log_fd_ = -1;
    int listen_fd_ = -1;
    int wake_fd_[2] = {-1, -1};      // stop() writes here to end the loop
    std::vector<pid_t> pids_;
    std::vector<pid_t> adapter_groups_;
    std::vector<pid_t> groups_of(int client) const;
    std::vector<ClockControl*> client_clocks_, node_clocks_;
    ProxyHub* proxies_ = nullptr;
    std::vector<LockServer*> nodes_;
    LockService* service_ = nullptr;
    int store_port_ = 0;
    std::unique_ptr<LiveEnv> store_env_;  // the connection ask_store() keeps to it
    std::vector<Connection> connections_;
    mutable std::mutex mutex_;       // guards the schedule: report() and killed() read it
    FaultSchedule schedule_;
    mutable std::mutex links_mutex_;
    std::vector<std::string> links_unmet_;  // peer link faults whose straight connections stayed up
    std::thread thread_;
    std::atomic<bool> running_{false};
    // Restarts, one at a time, on a thread of their own that lives until stop(): the nodes
    // asked for, and what became of each (true: back, false: failed).
    std::mutex restart_mutex_;
    std::condition_variable restart_cv_;
    std::deque<int> restarts_asked_;
    std::map<int, bool> restarts_done_;
    std::set<int> restarts_in_flight_;
    bool restart_stop_ = false;
    std::thread restart_thread_;
};

// The client's side: reports armed points and waits for the answer.
class PointGate {
public:
    // Connects to the nemesis; `armed` are the point names to report.
    PointGate(const std::string& socket_path, int client, const std::vector<std::string>& armed);
    ~PointGate();
    void reached(Point p);

private:
    int fd_ = -1;
    std::vector<std::string> armed_;
    std::string buffer_;
};

}  // namespace lockbench
