// Scenario files: what to run (topology, algorithms and their parameters, workload) and what
// should come out. Parsed strictly: an unknown field, a wrong type or an unknown algorithm
// is one error naming the file, the field path and what was expected. docs/files.md documents
// every field.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockimpl/registry.h"
#include "sim/engine/fault_spec.h"
#include "sim/engine/persistence.h"
#include "sim/engine/service.h"
#include "sim/engine/store.h"
#include "sim/engine/workload.h"

namespace lockbench {

struct ScenarioError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "sections_completed >= 24": a run's figure compared with a number; or "verdict == 2 holders":
// the run's verdict (analysis/verdict.h) is that word.
struct Expectation {
    std::string metric;   // an expectable metric of the metric table (analysis/metrics.h), or "verdict"
    std::string op;       // ==, !=, <, <=, >, >=; only == for the verdict
    double value = 0;
    std::optional<std::string> word;   // the verdict's word
    bool holds(double actual) const;
    std::string text() const;
};

// How long a client waits: for a lock node's reply, a connection, the protected store.
struct ClientTimeouts {
    long long command_ms = 200;
    long long connect_ms = 200;
    long long store_ms = 1000;         // a client's wait for the protected store's answer
};

// One run: everything it needs, resolved. A run of a case × lock cell (sim/harness/compose.h)
// has its own workload and timeouts (a case scaled for a whole-second lock); a run written in
// a scenario file has the scenario's.
struct RunSpec {
    std::string name;                  // unique in the scenario
    // The row of the report's library table its verdicts go in, when not its name (a case's
    // variant of a library's run, e.g. "redis-lock+clock-back" in the "redis-lock" row).
    std::optional<std::string> table_row;
    const AlgorithmInfo* algorithm = nullptr;
    Params params;
    Service service = Service::redis;  // what the lock nodes are: redis-servers, or the servers of
                                       // a ZooKeeper or etcd service (external adapters only)
    int nodes = 1;                     // lock nodes, or the service's servers (1, 3 or 5)
    // A service that takes them only (service.h: server_settings): settings the server starts
    // with ("idle_session_timeout" → "2s"), and
    // PgBouncer's pool mode in front of it ("transaction", "session"; empty: none).
    std::map<std::string, std::string> server_settings;
    std::string pgbouncer;
    // The program the service's servers run, when not the one it finds itself (a service that
    // takes one only, service.h: server_program); absolute.
    std::filesystem::path server;
    std::vector<Expectation> expect;
    Persistence persistence = Persistence::none;   // of the lock nodes
    bool check_lease_before_write = false;          // the worker checks its lease's validity first
    std::optional<RenewSpec> renew;                 // the worker renews each lease while held
    ResourceCheck resource_check = ResourceCheck::fence;  // what the protected store refuses (store.h)
    bool sentinel = false;             // topology "sentinel": lock0 with a replica and Sentinels
    std::vector<std::string> command;  // "algorithm": "external": the adapter's argv
    std::filesystem::path cwd;         // where the adapter's command runs; empty: the project's folder
    std::vector<FaultSpec> faults;     // the scenario's, unless the run names its own
    nlohmann::json faults_source = nlohmann::json::array();
    WorkloadSpec workload;             // the scenario's, unless the run gives its own
    nlohmann::json workload_source = nlohmann::json::object();  // as written, for run.json
    ClientTimeouts timeouts;           // the scenario's "client", unless the run gives its own
    std::optional<std::string> lock;   // the lock file it tests (its row of the verdict table)
    std::optional<std::string> lock_file;  // that file's path, for messages
    std::optional<std::string> variant;    // the case's variant, if any
    // The run as written, with the scenario's workload, client and faults filled in where it
    // gives none of its own: a run that stands alone (parse_standalone_run), which is what a
    // live client process is handed.
    nlohmann::json source = nlohmann::json::object();
};

struct Scenario {
    std::string name;
    std::string description;
    std::string path;
    // Which column of the cross-library verdict table the scenario's runs fill (docs/files.md:
    // `failure_class`); one of failure_classes(). Unset for a scenario outside the table.
    std::optional<std::string> failure_class;
    std::uint64_t seed = 1;
    std::string lock_key = "lockbench:lock";
    ClientTimeouts timeouts;           // every run's, unless it gives its own
    std::optional<int> base_port;      // lock nodes on base_port.., the store after them
    WorkloadSpec workload;             // every run's, unless it gives its own
    std::vector<RunSpec> runs;
    nlohmann::json source;             // the file as read, recorded beside the results
    // What `lockbench explore` leaves as written ("faults.0.at_ms", "faults.*.client",
    // "workload.start_stagger_ms", "seed"); everything else it draws around the file's values.
    std::vector<std::string> explore_fixed;
    // Its outcome depends on timing the machine's load could shift (a timer's lateness, not a
    // forced order): `matrix --jobs N` runs it with no other repetition beside it.
    bool alone = false;
};

// The "algorithm" "external": a third-party lock library in an adapter process
// (sim/live/external.h); its declared parameters (ttl_ms, fence).
const AlgorithmInfo& external_algorithm();

// The named points a run of `algorithm` passes, in the order a lock cycle passes them: every
// worker passes the generic ones; a built-in algorithm's acquire adds its own (lockimpl/).
std::vector<std::string> points_reached(const AlgorithmInfo& algorithm, const nlohmann::json& params);

// A column of the verdict table: the value "failure_class" takes, and its heading there.
struct FailureClass {
    std::string code, heading;
};
// Every class, in the order of the verdict table's columns: defined here only (the report
// reads them from report/facts.json, which `lockbench list --json` writes).
const std::vector<FailureClass>& failure_class_table();
// Their codes alone, in that order.
const std::vector<std::string>& failure_classes();

// Throws ScenarioError("<file>: <field.path>: <what was expected>").
Scenario load_scenario(const std::filesystem::path& file);
// A JSON input file (a scenario, a case, a lock file: `kind`, for messages) read as
// json_input.h reads one: a regular file of at most 1 MiB, nested at most 64 levels, no key
// twice; throws ScenarioError.
nlohmann::json read_input_json(const std::filesystem::path& file, const std::string& kind = "scenario file");
// A run's `source` (RunSpec::source), parsed again on its own: a live client's run.
RunSpec parse_standalone_run(const nlohmann::json& run, const std::string& what);
Scenario parse_scenario(const nlohmann::json& j, const std::string& file);

// Keeps the runs whose algorithm, lock or name is in `names` (all when empty). Throws
// ScenarioError for a name that matches nothing.
void select_runs(Scenario& s, const std::vector<std::string>& names);

}  // namespace lockbench
