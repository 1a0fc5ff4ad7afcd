// A lock file, locks/NAME.json: one lock configuration, the row NAME of the verdict table.
// It says how to make the lock (one of lockbench's algorithms with its parameters, or an
// adapter command), what it runs on and needs (the service, its nodes, Sentinel, its TTL's
// unit), what it offers (a fencing token, renewal on its own, its extend, how it releases),
// and its recorded outcomes, which the catalog's check compares against. It names no case:
// the harness composes the catalog, every case × every lock it applies to
// (sim/harness/compose.h).
//
//   {"description": "...", "algorithm": "external", "command": ["node", "adapter.js"],
//    "params": {...}, "service": "redis", "nodes": 5, "ttl_unit": "ms",
//    "offers": {"fencing": false, "checks_elapsed": true, "extend": ["replace"]},
//    "expected": {"gc-pause": "2 holders", "slow-holder": "any: its timer runs late"}}
//
// A relative path in it (the adapter's) resolves against the file's own folder, so that a
// team's lock file can sit beside its adapter anywhere. Parsed as strictly as a scenario: an
// unknown field, a wrong type, a TTL given in params, is one line naming the file and field.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/verdict.h"
#include "lockimpl/registry.h"
#include "sim/engine/scenario.h"
#include "sim/engine/service.h"

namespace lockbench {

// What a lock file records for a case or a failure class: a verdict every repetition must
// show, or "any" with the one-line reason its outcome is up to the machine.
struct RecordedOutcome {
    std::optional<Verdict> verdict;   // unset: "any"
    std::string any_reason;
    std::string text() const;         // as written: "2 holders", "any: ..."
};

// What a lock offers, which a case's predictions are stated by (case_file.h).
struct LockOffers {
    bool fencing = false;          // it hands out a fencing token
    bool renews = false;           // it renews its lease on its own while its process runs
    std::vector<std::string> extend;  // the renewals a worker may ask of it: "add", "replace"
    // How it releases: "token" (deletes only its own lock), "plain" (deletes whatever is
    // there: a plain DEL), "client-clock" (a plain DEL, sent only while its own clock says
    // the lock is live).
    std::string release = "token";
    std::string expiry = "server";    // whose clock decides the lock has expired: "server", "client"
    bool checks_elapsed = false;      // it refuses a lock whose TTL ran out during its acquire
    bool validity = false;            // it says how long a lock it hands out is valid (lockbench's own always do)
    bool replicated = false;          // a grant is acknowledged by a replica first (WAIT)
    // Its acquire asks before it takes: its first request only reads (a GET of the key, the
    // lock's parent znode, a lease grant, one node of several in turn), and the request that
    // takes the lock goes out only once that is answered.
    bool asks_first = false;
};

enum class Joins { all, named, none };

struct LockFile {
    std::string name;                    // the file's stem: its row
    std::string path;                    // as given, for messages
    std::filesystem::path dir;           // the file's folder, absolute: where its command runs
    std::string description;
    const AlgorithmInfo* algorithm = nullptr;   // a built-in, or external_algorithm()
    nlohmann::json params = nlohmann::json::object();  // as written: the case adds the TTL
    std::string ttl_param = "ttl_ms";    // which parameter is its TTL (reentrant's: lease_ms)
    std::vector<std::string> command;    // external: the adapter's argv
    Service service = Service::redis;
    int nodes = 1;
    bool sentinel = false;               // it can find a master through Sentinel (failover)
    bool needs_replica = false;          // "topology": "sentinel": it always runs on a master with a replica
    std::string pgbouncer;               // PgBouncer's pool mode in front of the server, if any (service.h: server_settings)
    // "server": the program its service's servers run, when not the one the service finds
    // itself (another version of it: etcd 3.7's, built by scripts/setup); absolute.
    std::filesystem::path server;
    bool check_lease_before_write = false;
    // "resource_check": "token": the store checks the lock's random token by check-and-set
    // (store.h), for a library that hands out no fencing token; false: the default check,
    // its fencing token where params.fence says the store checks one.
    bool token_checked = false;
    // The application's renewal of the lock (a worker's "renew" policy, scenario.h): the
    // period and T scale with the case's time like its other durations.
    std::optional<nlohmann::json> renew;
    bool whole_seconds = false;          // "ttl_unit": "s": it takes only whole seconds
    long long min_ttl_ms = 1;            // the least TTL it works with
    LockOffers offers;
    // Which cases of the catalog (the main job's matrix) it joins: every one that applies
    // (all), only those that name it in their "about" list (named: a version kept for one
    // known bug), or none (a lock judged only when asked for: `lockbench verdict`, or
    // `matrix --lock`). Asked for by name, a lock meets every case that applies.
    Joins joins = Joins::all;
    // "reference": true: its recorded row stands beside every lock's verdict page, the rows a
    // reader compares a library with (lockbench's token lock, Redlock, ZooKeeper and etcd,
    // fenced and not).
    bool reference = false;
    std::map<std::string, RecordedOutcome> expected;  // by case, case+variant or failure class
    nlohmann::json source;

    bool fenced() const;                 // the store checks its fencing token (params.fence)
    bool checked() const { return fenced() || token_checked; }  // the store checks one of its tokens
    std::string label() const { return name + " (" + path + ")"; }
};

// Throws ScenarioError (scenario.h: bad input) "<file>: <field>: <what was expected>".
LockFile load_lock_file(const std::filesystem::path& file);
LockFile parse_lock_file(const nlohmann::json& j, const std::filesystem::path& file);

// Every locks/*.json of `dir`, by name.
std::vector<LockFile> load_lock_folder(const std::filesystem::path& dir);

// The facts a case's "when" is matched against: the offers, the service, nodes, sentinel,
// check_lease_before_write, "fence" (the store checks its token: its fencing token, or its
// random one), "resource_check" (which: "fence" or "token"), "algorithm", "params" and "lock"
// (its name).
nlohmann::json lock_facts(const LockFile& lock);

// The outcome a lock records for a case (its variant first, then the case, then its failure
// class), if any.
const RecordedOutcome* recorded_outcome(const LockFile& lock, const std::string& case_name,
                                        const std::string& variant, const std::optional<std::string>& failure_class);

}  // namespace lockbench
