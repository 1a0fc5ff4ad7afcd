// What a world can do to itself when the fault schedule (sim/engine/fault_schedule.h) says so.
// The schedule decides which fault fires when and logs it; each world only carries it out:
//
//   FaultSchedule ──pause/kill/hold/clock/link/crash──► FaultActuator
//                                                         ├─ Nemesis (sim/live/nemesis.h): signals,
//                                                         │  ProxyHub, ClockControl, RedisNode
//                                                         └─ SimNemesis (sim/virtual/sim_nemesis.h):
//                                                            World, Net, Process
//
// A fault kind's file (sim/engine/kinds/, fault_kind.h) says which of these it calls; a new
// kind adds a method here only when it asks the worlds for something new.
#pragma once

#include <optional>
#include <stdexcept>

#include "faults/link_fault.h"
#include "lockimpl/env.h"

namespace lockbench {

// One path a link fault acts on: client `client` to lock node `node`, client `client` to the
// protected store, the master→replica link (topology "sentinel"), whoever the client, or
// the links between server `node` and server `peer` of an ensemble (upstream: from `node`).
struct LinkPath {
    enum class To { node, store, replication, peer };
    To to = To::node;
    int client = 0;
    int node = 0;  // To::node and To::peer
    int peer = 0;  // To::peer only

    friend bool operator==(const LinkPath&, const LinkPath&) = default;
};

// Whose wall clock a clock fault moves: a client's or a lock node's.
struct ClockOf {
    enum class Whose { client, node };
    Whose whose = Whose::client;
    int index = 0;

    friend bool operator==(const ClockOf&, const ClockOf&) = default;
};

class FaultActuator {
public:
    virtual ~FaultActuator() = default;

    // The client stops where it is (SIGSTOP, or its fibers stop being scheduled) until resumed;
    // returns once it has. False: it still ran at the bound (the pause is not in place, and
    // the run is not as written).
    virtual bool pause(int client) = 0;
    virtual void resume(int client) = 0;
    // Only the client's background tasks (Env::background) stop: a held task neither sleeps
    // to completion nor sends commands; resumed, a sleep already over ends at once. The
    // client itself runs on. Returns once the hold is in place.
    virtual void pause_background(int client) = 0;
    virtual void resume_background(int client) = 0;
    // The client dies for good. In the simulator, when the client itself reached the point,
    // this call does not return: its fiber unwinds. The schedule calls it last.
    virtual void kill(int client) = 0;
    // Gate: the client, which is waiting at a point, is kept there until let go.
    virtual void hold(int client) = 0;
    virtual void let_go(int client) = 0;
    // Steps the clock by jump_ms (negative: back), then lets it run at `rate` seconds per second.
    virtual void step_clock(ClockOf clock, long long jump_ms) = 0;
    virtual void drift_clock(ClockOf clock, double rate) = 0;
    // Sets one path's link fault, in one direction or both; LinkFault::pass() heals it.
    virtual void set_link(LinkPath path, std::optional<Direction> direction, const LinkFault& fault) = 0;
    // A lock node dies (its connections lost, its data too without persistence) and comes back.
    virtual void crash(int node) = 0;
    // Starts the crashed node again. true: it is back; false: it could not be started (it
    // stays down); nullopt: it is starting, and restarted() says when it is back. Meanwhile
    // the schedule goes on: a live node can take a while, and the clients must not wait for
    // it at their points.
    virtual std::optional<bool> restart(int node) = 0;
    // After a restart that said nullopt: nullopt while the node starts, then as restart()
    // would have said. With `wait`, blocks until it says.
    virtual std::optional<bool> restarted(int /*node*/, bool /*wait*/) { return true; }
    // Whether a client has asked the restarted node anything since it came back (its library
    // reconnected): the event a wait's bound counts from. A world that cannot tell says yes.
    virtual bool asked_since_restart(int /*node*/) { return true; }
    // On a client's path to a lock node whose replies a link fault holds, since the hold was
    // set: `quiet` while the client has sent nothing on it, `asked` once it has, `answered`
    // once bytes of the node's answer wait in the hold (the request reached the node). What a
    // start waits for when its client's replies are held (workload.start_after). A world that
    // cannot tell says answered.
    enum class HeldPath { quiet, asked, answered };
    virtual HeldPath held_path(LinkPath /*path*/) { return HeldPath::answered; }
    // The order requests reach the lock nodes in, one order over every client's path:
    // mark_requests() begins it (again), and first_request() numbers a node path's first
    // request since then (0: none yet). A request from one client numbered below another's on
    // the same node reached that node first (live, the proxy read it first; the simulator
    // numbers a message as it is sent). A request is any bytes the client sent. What tells a
    // start whose client's replies are held that another client overtook it on a node it had
    // not yet sent to. A world that cannot tell numbers nothing.
    virtual void mark_requests() {}
    virtual long long first_request(LinkPath /*path*/) { return 0; }
    // A lock server stops where it is (SIGSTOP) until resumed; its connections stay open. As
    // pause(): false if it still ran at the bound.
    virtual bool pause_node(int node) = 0;
    virtual void resume_node(int node) = 0;
    // A lock server's flushes to disk (fsync, fdatasync) wait while stalled, as on a stalled
    // disk; everything else it does goes on. Only the live world has a disk: a run that needs
    // one (WorldNeeds::stalls_disk) is refused by the simulator before it starts.
    virtual void stall_disk(int /*node*/, bool /*stalled*/) { throw std::logic_error("this world has no disk to stall"); }
    // The index a fault's `node` names now: an index as it is; kLeaderNode or kFollowerNode
    // asked of the service when the fault fires (fault_spec.h).
    virtual int resolve_node(int node) = 0;
    // Whether a server of the service says it leads now (asked of the servers themselves):
    // what a gate "until": "leader" waits for.
    virtual bool has_leader() = 0;
    // How many lock servers there are (a peer link fault cuts one from all the others).
    virtual int node_count() const = 0;
    // The client inside its section now (the protected store's log ends with its enter),
    // asked when a fault aimed at "holder" fires; none while nobody is.
    virtual std::optional<int> current_holder() = 0;
    // The protected store's answer to a command (nullopt: it did not answer within a second),
    // asked directly as current_holder() asks: a fault that lasts until another client enters
    // reads the store's log.
    virtual std::optional<Value> ask_store(const Command& command) = 0;
};

}  // namespace lockbench
