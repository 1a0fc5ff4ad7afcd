// A case file, scenarios/NAME.json: one fault story about no particular lock. It holds the
// workload and the faults, the failure class it belongs to, what a lock needs for the case to
// apply, the TTL its durations are written for, and what it expects of every lock it runs:
// the checks that say the case happened ("expect") and the literature's prediction, stated
// by what a lock offers ("predict"). The harness runs it against every lock it applies to
// (sim/harness/compose.h).
//
//   {"name": "gc-pause", "failure_class": "gc-pause", "ttl_ms": 300,
//    "workload": {...}, "faults": [{"fault": "pause", "point": "before_write", ...}],
//    "expect": {"faults_injected": "== 1"},
//    "predict": [{"when": {"fence": false}, "verdict": "2 holders"},
//                {"when": {"fence": true}, "verdict": "stale write refused"}],
//    "remedy": "a fencing token the resource checks"}
//
// A case names no lock, with one exception: a case that reproduces one library's known bug
// is about that library by nature and names the locks it is about ("about"), and its
// predictions may name them too ("when": {"lock": NAME}).
//
// A case may hold variants besides itself (their own faults, TTL, renewal, store check or
// persistence, and expectations), each run against every lock it applies to, as "LOCK@VARIANT". A scenario
// file with "runs" (the explicit format, scenario.h) is not a case: it runs as it is.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/verdict.h"
#include "sim/engine/scenario.h"
#include "sim/engine/service.h"

namespace lockbench {

// The literature's prediction for the locks whose facts (lock_file.h: lock_facts) match
// `when`: a verdict, and figures.
struct PredictRule {
    nlohmann::json when = nlohmann::json::object();   // fact → value, or an array of values (any of)
    std::optional<Verdict> verdict;
    nlohmann::json expect = nlohmann::json::object(); // metric → comparison, as a run's "expect"
    std::string why;                                  // one line: what the literature says
};

// What a lock must be or have for the case to apply. Every other need follows from the
// case's faults (a point the lock must pass, a node it must have, a clock the shim can move:
// compose.cpp).
struct CaseNeeds {
    std::vector<Service> services;   // empty: any
    std::optional<int> nodes;        // exactly this many lock nodes
    bool sentinel = false;           // a master it finds through Sentinel (the run gets the topology)
    bool lone_node = false;          // "topology": "plain": a lock on lone nodes, not on a master with a replica
    bool fence = false;              // a fencing token the store checks
    bool unreplicated = false;       // a lock the master grants alone, not one that WAITs for a replica
    bool takes_first = false;        // a lock whose acquire's first request takes it (not offers.asks_first)
};

struct CaseVariant {
    std::string name;                         // "" for a case without variants
    std::string description;
    std::optional<long long> ttl_ms;          // the case's unless given
    std::optional<nlohmann::json> faults;
    std::optional<nlohmann::json> renew;      // a worker's renewal policy
    std::optional<std::string> resource_check;
    std::optional<std::string> persistence;   // of Redis lock nodes
    std::optional<nlohmann::json> server_settings;  // a server's, where its service takes them ("idle_session_timeout": "2s")
    nlohmann::json expect = nlohmann::json::object();
    std::vector<PredictRule> predict;
};

struct CaseFile {
    std::string name;
    std::string path;
    std::string description;
    std::optional<std::string> failure_class;
    std::string remedy;                       // what would have prevented an unsafe outcome
    long long ttl_ms = 0;                     // the TTL every lock is given; the durations are written for it
    // "scale": "durations" (the default): for a lock that cannot take ttl_ms (whole seconds, a
    // least TTL), every duration of the case scales with the TTL; "ttl": only the TTL is raised
    // (a case whose timing does not depend on it).
    bool scale_durations = true;
    CaseNeeds needs;
    int ensemble = 0;                         // servers of a replicated service (ZooKeeper, etcd); 0: the lock's
    std::vector<std::string> about;           // the locks a known-bug case is about
    nlohmann::json params = nlohmann::json::object();  // *_ms parameters, for each lock that declares them
    bool probe_key_ttl = false;               // external locks: read the key's TTL after each acquire
    bool alone = false;                       // runs with no other repetition beside it (Scenario::alone)
    nlohmann::json discovered;                // a promoted case's provenance (promote.h); null for a written one
    nlohmann::json expect = nlohmann::json::object();  // every lock's: the checks that the case happened
    std::vector<PredictRule> predict;
    // The case itself (named "", with the case's expect and predict), then its variants (each
    // with its own expect and predict where it gives them, else the case's).
    std::vector<CaseVariant> variants;
    nlohmann::json source;                    // as read
};

// A file of the catalog's new kind: an object without "runs".
bool is_case_file(const nlohmann::json& j);

// Throws ScenarioError naming the file and the field.
CaseFile parse_case_file(const nlohmann::json& j, const std::string& file);
CaseFile load_case_file(const std::filesystem::path& file);

// A case's faults name lock nodes by role, so that one story fits locks of any size: a link
// fault's "nodes" may be "one", "minority" (the most a quorum survives: (n-1)/2), "majority"
// (a bare one: n/2+1) or "all", each the lowest-numbered nodes; a crash's or a clock's "node"
// may be "locked": the last node, which such a cut leaves to the client, so one it locked.
// The faults with the roles made indices for a lock of `nodes` nodes (as it runs the case).
nlohmann::json with_node_roles(const nlohmann::json& faults, int nodes);
// Why a lock of `nodes` nodes cannot take the roles (a minority of fewer than three is none).
std::optional<std::string> node_roles_why_not(const nlohmann::json& faults, int nodes);

// Whether `facts` (lock_facts) match a rule's "when".
bool matches(const nlohmann::json& when, const nlohmann::json& facts);

// A case's variant as every file, command and page spells it: "CASE+VARIANT", or CASE for its
// default variant (a lock file's "expected" key, `lockbench list`, `verdict`, the report).
std::string variant_label(const std::string& case_name, const std::string& variant);
// A lock's run in a variant of a case: "LOCK", or "LOCK@VARIANT" (its cell's folder, the
// stripe of its row in the report).
std::string run_name(const std::string& lock, const std::string& variant);

}  // namespace lockbench
