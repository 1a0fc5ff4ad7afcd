// A fault kind in one place, as Toxiproxy keeps one file per toxic: each kind is one file of
// sim/engine/kinds/, whose FaultKind entry holds all of it —
//
//   the fields it reads of its own, and what it may be given beside them (a node, a
//   duration, a repetition, a wait until another enters or a server leads);
//   its label, and the words the search's classes and coverage name it by;
//   which of its durations scale with a lock's lease;
//   where it cannot land (a lock, a service it cannot reach), and why;
//   what it does when it fires and when it ends, through FaultFiring: the schedule's side,
//   which drives both worlds' actuators (fault_actuator.h: live Nemesis, simulated SimNemesis);
//   what a world must set up for it (clock shims, proxies) and whether it loses messages;
//   what the search may draw of it (its shapes: discover.cpp).
//
// fault_kinds() lists them; nothing outside that folder switches on a kind
// (tests/layering_test.cpp holds the code to it; tests/compose_test.cpp the entries).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/fault_actuator.h"
#include "sim/engine/fault_spec.h"
#include "sim/engine/persistence.h"
#include "sim/engine/service.h"
#include "sim/engine/workload.h"

namespace lockbench {

class FaultSchedule;
namespace scenario_parse {
class Fields;
}

// One firing of one fault, as the schedule hands it to its kind: the world to act on, whom
// it struck, and the schedule's bookkeeping (its log line, how long it lasts, an end booked).
class FaultFiring {
public:
    FaultFiring(FaultSchedule& schedule, std::size_t fault, int client, long long now_ns,
                std::optional<int> occurrence = std::nullopt)
        : schedule_(schedule), fault_(fault), client_(client), now_ns_(now_ns), occurrence_(occurrence) {}

    const FaultSpec& spec() const;
    FaultActuator& world();
    int client() const { return client_; }
    int node() const;                   // the server its `node` named when it fired
    void log(const char* type);         // its "start", "end" or "failed" line in nemesis.jsonl
    void not_in_place(const std::string& why);  // the run is not as written: why
    // It is in force on its client (or node) from now: its end comes after its length
    // (duration_ms, or this occurrence's draw).
    void lasts();
    void restarts_after(long long after_ms);    // a crash: the node is started again then
    void ended();                       // no longer in force on its client (or node)
    void killed();                      // the client is marked dead before the world kills it
    void set_links(bool heal);          // a link fault's paths, set or healed
    bool gate();                        // a gate: holds the client (false: not answered now)

private:
    FaultSchedule& schedule_;
    std::size_t fault_;
    int client_;
    long long now_ns_;
    std::optional<int> occurrence_;
};

// What a fault needs of the world that runs it, asked before the run starts.
struct WorldNeeds {
    bool client_clocks = false;  // the clients run under the clock shim
    bool node_clocks = false;    // the lock servers do
    bool proxies = false;        // the clients' paths go through lockbench's proxies
    bool peer_proxies = false;   // the servers' paths to each other do
    bool stops_server = false;   // a lock server's process is stopped (the simulator has none)
    bool loses_messages = false; // a request may never be answered (a command times out)
    bool stalls_disk = false;    // a lock server's flushes to disk wait (the simulator has no disk)
    bool crashes_server = false; // a lock server is killed (and maybe restarted)
    long long delay_ms = 0;      // the longest a message is delayed
};

// Where a fault would land: the service its run locks on, whether the lock follows its master
// through Sentinel (a replica and a replication link), how many lock servers there are.
struct FaultLanding {
    Service service = Service::redis;
    bool sentinel = false;
    int nodes = 1;
    Persistence persistence = Persistence::none;  // of nodes that take it (ServiceInfo::node_options)
};

// How the search names a fault: its lock's time scale (nullopt: no comparison with it), its
// run's lock nodes, whether a restarted node keeps its data; `where` is " at POINT" or empty.
struct FaultWords {
    std::optional<long long> scale_ms;
    std::string scale_word = "the TTL";
    int nodes = 1;
    std::optional<bool> keeps_data;
    std::string where;
    // The search's coverage (live_search.cpp), not its classes: a link fault by its exact mode
    // and direction (a blackhole and a reset are one class, "cut", but each is covered apart).
    bool exact = false;
    // ", longer than the TTL": `v` against the scale, or nothing without one.
    std::string than(long long v, const char* more, const char* less) const;
};

// The search's draw (discover.cpp) as a kind's shapes use it: its random choices on the run's
// time scale, and the story it tells (which client, which nodes it was cut from).
class FaultDraw {
public:
    virtual ~FaultDraw() = default;
    virtual long long uniform(long long lo, long long hi) = 0;
    virtual bool chance(double p) = 0;
    virtual long long scaled(double lo, double hi) = 0;  // the lease × 2^u, u uniform in [lo, hi]
    virtual std::string pick(const std::vector<std::string>& among) = 0;
    virtual long long duration_ms() const = 0;           // the run's
    virtual int clients() const = 0;
    virtual long long within_run(const nlohmann::json& f, long long ms) const = 0;  // a length that ends within the run
    virtual int node() = 0;  // a lock node to strike (in a story, one its client was not cut from)
    virtual std::vector<int> cut_nodes(const nlohmann::json& f) = 0;  // the lock nodes a link cuts (a story keeps them)
};

// What a run offers the search beyond its points: how many clients, whether its client has a
// background task (a watchdog, a renewal timer), whether its lock follows a master through Sentinel.
struct SearchRun {
    int clients = 1;
    bool background = false;
    bool sentinel = false;
};

// One shape of a kind the search may draw ("watchdog pause", "node clock"): whether the run
// offers it, how its place is drawn (at a point only; a node fault, drawn mostly right after
// a client locked; a cut, drawn first in a story), then its own fields.
struct FaultShape {
    const char* name;
    bool (*offered)(const SearchRun& run) = nullptr;  // nullptr: every run
    bool needs_point = false;
    bool node_fault = false;
    bool cuts_nodes = false;
    void (*draw)(FaultDraw& d, nlohmann::json& f) = nullptr;
};

struct FaultKind {
    FaultSpec::Kind kind;
    const char* name;  // the "fault" field's value
    const char* noun;  // "a pause": how a message names it
    // What it may be given beside its own fields.
    bool aims_at_node = false;      // "node", read before its own fields
    bool reads_node = false;        // "node", read with its own fields (a link fault's "peers")
    bool lasts = false;             // "duration_ms"
    bool waits_for_another = false; // "until": "another-enters"
    bool waits_for_leader = false;  // "until": "leader"
    bool blocks_client = false;     // the client it strikes is not answered at once (killed, held)
    bool holds_clients = false;     // it holds clients where they are, alive (a gate)
    const char* no_repeat = nullptr;  // why it cannot repeat (every_ms); nullptr: it may
    // The fields only it reads: another kind given one is told which kinds read it.
    std::vector<const char*> own_fields;
    // Its own fields, read once the common ones are (where, when, whom, repetition, until).
    void (*parse)(scenario_parse::Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string& path) = nullptr;
    // The words after its name in its label, before where and when it fires.
    std::string (*label)(const FaultSpec& s) = nullptr;
    // Its own duration fields that scale with a lock's lease (beside the common ones).
    std::vector<const char*> lease_scaled;
    // Why it cannot land there (nullopt: it can): a case's cell does not apply (compose.cpp,
    // which also has the reasons every kind shares: a point the lock never passes, a node it
    // does not have), a run's file is refused (scenario.cpp).
    std::optional<std::string> (*why_not)(const FaultSpec& s, const FaultLanding& at) = nullptr;
    // It fires: false when the client must not be answered now (killed, held at a gate).
    bool (*fire)(FaultFiring& on) = nullptr;
    // Its end, when it lasts: booked by lasts(), or a wait "until" that is over.
    void (*end)(FaultFiring& on) = nullptr;
    // It stays in force when it has fired and nothing is pending (a stepped clock, a link set
    // for good, a node left down): the schedule is never spent.
    bool (*stays)(const FaultSpec& s) = nullptr;
    void (*needs)(const FaultSpec& s, WorldNeeds& n) = nullptr;
    // The search's words for it: its classes (discover.cpp) and its coverage (live_search.cpp).
    std::string (*words)(const nlohmann::json& f, const FaultWords& w) = nullptr;
    // What the search may draw of it (discover.cpp).
    std::vector<FaultShape> shapes;
};

const std::vector<const FaultKind*>& fault_kinds();
const FaultKind& fault_kind(FaultSpec::Kind kind);
const FaultKind* find_fault_kind(const std::string& name);
// "a pause, a link fault or a crash": the kinds for which `has` holds, as a message names them.
std::string kind_nouns(bool (*has)(const FaultKind&));
// Every fault of a run: what the world must set up for them.
WorldNeeds world_needs(const std::vector<FaultSpec>& faults);
// Whether a fault of these reaches a lock server itself: pauses, crashes or restarts it,
// shifts its clock, stalls its disk or cuts its peer links (what a server kept across
// repetitions may not take: sim/live/server_pool.h).
inline bool reaches_servers(const WorldNeeds& n) {
    return n.stops_server || n.crashes_server || n.node_clocks || n.stalls_disk || n.peer_proxies;
}

}  // namespace lockbench
