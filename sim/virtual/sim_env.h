// The simulated implementation of the seam: the same Env the live clients use, in virtual
// time, against modelled nodes, over modelled links.
//
//   algorithm ──► SimEnv ──request──► Link (client → node) ──► SimNode: ModelNode.execute
//                   ▲                   fate: pass/delay/hold/      at the node's own clock
//                   │                   blackhole/reset, FIFO
//                   └──── reply ◄────── Link (node → client) ◄──┘
//
// Every message takes a seeded one-way latency; a link never reorders. A fiber waiting for
// replies or a sleep resumes through the World; a paused process does not run (its replies
// wait for it, its timeouts are judged when it resumes, as a SIGSTOPped client's poll()
// would). Clocks: each process and node has a wall clock (offset, rate, jumps: the clock
// shim's formula); monotonic time is virtual time itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "faults/link_fault.h"
#include "lockimpl/env.h"
#include "sim/virtual/model_node.h"
#include "sim/virtual/world.h"

namespace lockbench::sim {

// The clock shim's formula: wall = epoch + t + offset + (t - anchor) * (rate - 1).
struct SimClock {
    long long offset_ns = 0;
    double rate = 1.0;
    VTime anchor = 0;
    static constexpr long long kEpochNs = 1'800'000'000'000'000'000LL;  // 2027-01-15, fixed

    long long wall_ns(VTime t) const;
    void jump(long long delta_ns) { offset_ns += delta_ns; }
    void set_rate(double r, VTime now);
};

struct SimNode {
    std::string name;
    ModelNode model;
    SimClock clock;
    bool up = true;
    std::uint64_t incarnation = 0;  // each crash ends one: what was in flight to it is lost
    bool keeps_data = false;  // persistence: AOF with fsync always
    long long wall_ms(VTime t) const { return clock.wall_ns(t) / 1'000'000; }
};

// One direction of one client's path to one node.
struct Link {
    LinkFault fault;
    VTime last_due = 0;
    std::vector<std::function<void()>> held;  // deliveries waiting for the hold to lift
    // What a start waits for when a client's replies are held (SimNemesis::held_path), in the
    // order of every message onto any link (Net's count): the last message onto it, the last
    // one it held, the count when it was last set to hold, and the first message onto it
    // since Net's mark_messages() (if above the mark).
    long long last = 0;
    long long last_held = 0;
    long long hold_from = 0;
    long long first = 0;
};

// A client process's path to one node: what the link faults act on.
struct Path {
    Link up;    // client → node
    Link down;  // node → client
};

// One connection of one env (a client, or its watchdog: each has its own, as live) to a node.
struct Conn {
    int client = 0;
    std::uint64_t connection = 0;  // a timeout, a reset or a lost node drops the connection
    bool connected = false;
    std::size_t physical = 0;      // the node reached, found (through Sentinel) on connecting
};

// A simulated client process: its clock, its fibers, whether it is paused or dead.
struct Process {
    int id = 0;
    SimClock clock;
    bool paused = false;
    bool dead = false;
    std::vector<Fiber*> fibers;
    std::vector<std::function<void()>> on_resume;
    bool background_paused = false;  // a "task": "background" pause: its background fibers wait
    std::vector<std::function<void()>> on_background_resume;
    std::mt19937_64 rng;
};

// Topology "sentinel": a master, its replica behind one replication link, and Sentinel's
// failover, modelled on what the live runs measured: the master is seen down (+sdown) 250 ms
// after it dies, agreed down (+odown) at 800 ms, the replica promoted (+switch-master) at
// 2 s. Writes reach the replica as the changed keys (absolute expiry, as Redis replicates
// SET PX), in order, over the link; WAIT counts the replica once it has acknowledged them.
struct ReplicaGroup {
    std::size_t master = 0, replica = 0;  // physical nodes; clients name the group by `master`'s index
    bool has_replica = true;              // false once the replica is promoted
    Link to_replica, to_master;           // the replication link: data down, acks up
    long long offset = 0, acked = 0;
    std::vector<std::pair<long long, std::function<void()>>> waiting;  // WAITs: offset, answer
    std::function<void(const std::string&, const std::string&)> log;  // Sentinel's announcements
};

// The network and the nodes of one simulated run.
class Net {
public:
    Net(World& world, VTime latency_min_ns, VTime latency_max_ns)
        : world_(world), latency_min_(latency_min_ns), latency_max_(latency_max_ns) {}

    World& world() { return world_; }
    SimNode& add_node(std::string name, bool keeps_data);
    SimNode& node(std::size_t i) { return *nodes_.at(i); }
    std::size_t node_count() const { return nodes_.size(); }
    Path& path(int client, std::size_t node) { return paths_[{client, node}]; }
    // A new env's own connections, over its client's paths.
    int new_channel(int client) {
        channels_.push_back(client);
        return static_cast<int>(channels_.size()) - 1;
    }
    Conn& conn(int channel, std::size_t node) {
        Conn& c = conns_[{channel, node}];
        c.client = channels_.at(static_cast<std::size_t>(channel));
        return c;
    }

    // Sets one direction's fault (or both) on a path; lifting a hold delivers what it held.
    void set_fault(int client, std::size_t node, std::optional<Direction> direction, const LinkFault& fault);
    // Begins the count Link::first is read against; first_since_mark() is a link's first
    // message since (0: none yet).
    void mark_messages() { mark_ = messages_; }
    long long first_since_mark(const Link& link) const { return link.first > mark_ ? link.first : 0; }
    // A node crashes: every connection to it is lost; without persistence, so is its data.
    void crash(std::size_t node);
    void restart(std::size_t node);

    // Sends `cmd` on `channel` to `node`; `done` gets the reply (or nothing, if it is lost).
    // Returns false if the node refuses the connection (down): nothing was sent. The command
    // is shared, not copied: a fan-out sends one to every node.
    bool send(int channel, std::size_t node, std::shared_ptr<const Command> cmd, std::function<void(Reply)> done);

    // Makes `master` (clients' name for the group) replicate to `replica`, under Sentinel.
    void add_replica(std::size_t master, std::size_t replica,
                     std::function<void(const std::string&, const std::string&)> sentinel_log);
    void set_replication_fault(std::optional<Direction> direction, const LinkFault& fault);

private:
    void travel(Link& link, std::function<void()> deliver);
    void set_link(Link& up, Link& down, std::optional<Direction> direction, const LinkFault& fault);
    VTime latency();
    std::size_t resolve(int client, std::size_t node);  // the physical node a path reaches
    ReplicaGroup* group_of_master(std::size_t physical);
    void replicate(ReplicaGroup& g);
    void wait_for_replica(ReplicaGroup& g, const Command& cmd, std::function<void(Value)> answer);
    void failover(ReplicaGroup& g, std::size_t crashed);

    World& world_;
    VTime latency_min_, latency_max_;
    long long messages_ = 0;  // onto any link, ever: the order Link::last and last_held are in
    long long mark_ = 0;      // messages_ at mark_messages()
    std::vector<std::unique_ptr<SimNode>> nodes_;
    std::map<std::pair<int, std::size_t>, Path> paths_;
    std::map<std::pair<int, std::size_t>, Conn> conns_;  // by (channel, node)
    std::vector<int> channels_;                          // channel → its client
    std::map<std::size_t, ReplicaGroup> groups_;  // by the clients' name for the group
};

class SimEnv final : public Env {
public:
    // `targets`: the Net nodes this env's NodeId 0.. address. `on_point` is the nemesis.
    SimEnv(Net& net, Process& process, std::vector<std::size_t> targets, std::function<void(Point)> on_point);

    int node_count() const override { return static_cast<int>(targets_.size()); }
    Reply command(NodeId node, const Command& cmd, Duration timeout, std::optional<Point> after_send) override;
    std::vector<Reply> fan_out(const Command& cmd, Duration timeout, std::optional<Point> after_send) override;
    Instant now() override { return Instant{Duration{net_.world().now()}}; }
    long long wall_ms() override { return process_.clock.wall_ns(net_.world().now()) / 1'000'000; }
    void sleep(Duration d) override;
    std::uint64_t random() override { return process_.rng(); }
    void reach(Point p) override;
    std::unique_ptr<BackgroundTask> background(std::function<void(Env&, StopSignal&)> task) override;

    // From the fiber: waits while its process is paused.
    static void run_if_paused(World& world, Process& process);
    // From a background fiber: waits while its process's background tasks are paused (and
    // the process itself). `token`, if given, is set to each wait's token, so that a stop
    // can wake it; `stopped` ends the wait.
    static void run_if_background_paused(World& world, Process& process, std::uint64_t* token = nullptr,
                                         const bool* stopped = nullptr);
    // This env belongs to a background task: its commands wait while the tasks are paused.
    // The task's `wait_token` and `stopped` let its stop end that wait (a stopped task's
    // command then answers unknown at once).
    void mark_background(std::uint64_t* wait_token = nullptr, const bool* stopped = nullptr) {
        background_ = true;
        wait_token_ = wait_token;
        stopped_ = stopped;
    }

private:
    // Sends `cmd` to each of `nodes` (this env's NodeIds) and waits for the replies.
    std::vector<Reply> exchange(const std::vector<int>& nodes, const Command& cmd, Duration timeout,
                                std::optional<Point> after_send);

    Net& net_;
    Process& process_;
    int channel_;
    std::vector<std::size_t> targets_;
    std::function<void(Point)> on_point_;
    bool background_ = false;
    std::uint64_t* wait_token_ = nullptr;
    const bool* stopped_ = nullptr;
};

}  // namespace lockbench::sim
