// A fault as a scenario states it: what happens, and when (at a point the client reaches, or
// at a time after the start). What each kind reads, says and does is its own file's
// (sim/engine/kinds/, fault_kind.h); one schedule decides when each fires (fault_schedule.h);
// both worlds carry it out (sim/live/nemesis.h, sim/virtual/sim_nemesis.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "faults/link_fault.h"
#include "lockimpl/env.h"
#include "sim/engine/workload.h"

namespace lockbench {

// A fault's `node` by role rather than index, resolved when the fault fires.
constexpr int kLeaderNode = -1;
constexpr int kFollowerNode = -2;
// "leader", "follower" or the index.
std::string node_text(int node);

struct FaultSpec {
    enum class Kind { pause, kill, gate, clock, link, crash, disk_stall };
    Kind kind = Kind::pause;
    std::optional<Point> point;      // armed at a point, fires on the Nth reach ...
    int occurrence = 1;
    std::optional<long long> at_ms;  // ... or at this time after the clients start
    std::optional<int> client;       // only this client (required with at_ms)
    long long duration_ms = 0;       // pause: how long the client stays stopped
    // pause ("task": "background"): only the client's background tasks (a watchdog, a
    // renewal timer) stop; the client itself works on.
    bool background = false;
    int count = 2;                   // gate: how many clients it holds before letting go
    long long stagger_ms = 0;        // gate: lets them go one by one, this far apart
    // "until": "another-enters", forcing "another client takes the lock meanwhile": a gate
    // holds its one client at the point until another client has entered a section since (the
    // protected store's log says so); a pause or a link fault lasts duration_ms, then on until
    // another client has entered since. Each at most max_ms in all, a bound that begins to count
    // only once no crashed node is still coming back (not yet asked anything by a client:
    // fault_schedule.cpp, start_counting and asked_outcome).
    bool until_another_enters = false;
    // "until": "leader", a gate only: holds the client that reaches its point (one) until a
    // server of the service says it leads (FaultActuator::has_leader), at most max_ms
    // counted as above. Its bound is not an outcome: no leader means the case did not happen.
    bool until_leader = false;
    long long max_ms = 0;
    // "lease_live": the story needs the held client's lease live when another enters (a node
    // that forgot the lock, not a lease that ran out): an enter after its TTL makes the run
    // not as written (as_written.h).
    bool lease_live = false;
    // "taken_first": the story needs the held client's first request, the one the fault holds
    // the answer to, to have taken the lock: another client granted it within the TTL of the
    // held client's asking, while the held acquire was not granted, shows the held request did
    // not (an acquire that reads the key before it writes it, and writes only once that read's
    // answer is back), and makes the run not as written (as_written.h).
    bool taken_first = false;
    // "keep_holder_ms". With "until": once another client has entered and the fault ends,
    // that client stays in its section (held at its before_release) until this fault's client
    // has entered too (the store's log says so) or its acquire has failed (it is back at
    // before_acquire): the forced form of "its late answer meets a lock someone holds".
    // Without "until", on a fault that lasts (a disk stall): the first client whose enter lands
    // in the store after the fault's end is held there, inside its section (the point entered),
    // until another client has entered too or every other client's acquire in flight at the
    // fault's end has answered (back at before_acquire, in line, or gone): the forced form of
    // "two late answers, given together, meet". At most this long (counted from the fault's
    // end without "until"): the bound (or the holder gone, or nobody inside) makes the run not
    // as written (as_written.h). The case keeps it below the TTL less an acquire, so that the
    // kept holder's lease is still live (as_written.cpp checks it).
    long long keep_holder_ms = 0;
    long long jump_ms = 0;           // clock: step the wall clock by this much (negative: back)
    std::optional<double> rate;      // clock: then let it run this many seconds per second
    // clock: a lock node's clock rather than a client's; crash: the node; pause: a lock
    // server rather than a client; link with `link_peers`: the server cut off from its peers.
    // An index, or kLeaderNode / kFollowerNode: whichever server leads (or the first that
    // does not) when the fault fires, asked of the service (ZooKeeper, etcd).
    std::optional<int> node;
    LinkFault link;                  // link: what happens to the bytes
    std::optional<Direction> direction;  // link: one direction, or both when unset
    std::vector<int> link_nodes;     // link: the lock nodes whose paths it affects
    // link: "nodes": "all", every lock node of the run (a case names no lock, so it cannot
    // count them); the run's parser fills link_nodes in.
    bool link_all_nodes = false;
    bool link_store = false;         // link: the path to the protected store too
    bool link_replication = false;   // link: the master→replica link (topology "sentinel")
    bool all_clients = false;        // link: every client's paths, not only the one at the point
    bool link_peers = false;         // link: the paths between `node` and every other server
    std::optional<long long> restart_after_ms;  // crash: restart then (unset: stays down)
    // The repeating nemesis: fires at at_ms (unset: one interval in), then again after each
    // interval drawn from `every_ms`, until `until_ms` (the clients' duration unless set).
    // Each occurrence aims at `client`, a client drawn at random, or the current holder; a
    // pause or a link lasts a draw from `duration_drawn_ms` when set, else duration_ms.
    enum class Target { named, random, holder };
    std::optional<Distribution> every_ms;
    std::optional<long long> until_ms;
    Target target = Target::named;
    std::optional<Distribution> duration_drawn_ms;
    std::optional<long long> ends_by_ms;  // a drawn length is cut to end by then (the clients' duration)
    bool repeats() const { return every_ms.has_value(); }

    // keep_holder_ms without "until": the first to enter after the fault's end is kept, at the
    // point `entered` its worker then reaches.
    bool keeps_after_end() const { return keep_holder_ms && !until_another_enters; }
    std::string label() const;       // "pause 600 ms at after_acquire #1"
};

const char* fault_kind_name(FaultSpec::Kind k);
// "500 ms", "100..300 ms", "mean 400 ms": a drawn length as a label says it.
std::string describe_ms(const Distribution& d);
std::optional<Point> parse_point(const std::string& name);
// A point a client reports to the nemesis: a fault's, or in_line (its library queued it).
std::optional<Point> parse_reported_point(const std::string& name);

}  // namespace lockbench
