// Scenario files: what to run (topology, algorithms and their parameters, workload) and what
// should come out. Parsed strictly: an unknown field, a wrong type or an unknown algorithm
// is one error naming the file, the field path and what was expected. README.md documents
// every field.
#pragma once

#include <filesystem>
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

// "sections_completed >= 24": a run's figure compared with a number.
struct Expectation {
    std::string metric;   // an expectable metric of the metric table (analysis/metrics.h)
    std::string op;       // ==, !=, <, <=, >, >=
    double value = 0;
    bool holds(double actual) const;
    std::string text() const;
};

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
    std::vector<Expectation> expect;
    Persistence persistence = Persistence::none;   // of the lock nodes
    bool check_lease_before_write = false;          // the worker checks its lease's validity first
    std::optional<RenewSpec> renew;                 // the worker renews each lease while held
    ResourceCheck resource_check = ResourceCheck::fence;  // what the protected store refuses (store.h)
    bool sentinel = false;             // topology "sentinel": lock0 with a replica and Sentinels
    std::vector<std::string> command;  // "algorithm": "external": the adapter's argv
    std::vector<FaultSpec> faults;     // the scenario's, unless the run names its own
    nlohmann::json faults_source = nlohmann::json::array();
};

struct Scenario {
    std::string name;
    std::string description;
    std::string path;
    // Which column of the cross-library verdict table the scenario's runs fill (README:
    // Scenario format); one of failure_classes(). Unset for a scenario outside the table.
    std::optional<std::string> failure_class;
    std::uint64_t seed = 1;
    std::string lock_key = "lockbench:lock";
    long long command_timeout_ms = 200;
    long long connect_timeout_ms = 200;
    long long store_timeout_ms = 1000; // a client's wait for the protected store's answer
    std::optional<int> base_port;      // lock nodes on base_port.., the store after them
    WorkloadSpec workload;
    std::vector<RunSpec> runs;
    nlohmann::json source;             // the file as read, recorded beside the results
    // What `lockbench explore` leaves as written ("faults.0.at_ms", "faults.*.client",
    // "workload.start_stagger_ms", "seed"); everything else it draws around the file's values.
    std::vector<std::string> explore_fixed;
};

// The "algorithm" "external": a third-party lock library in an adapter process
// (sim/live/external.h); its declared parameters (ttl_ms, fence).
const AlgorithmInfo& external_algorithm();

// The values "failure_class" may take, in the order of the verdict table's columns.
const std::vector<std::string>& failure_classes();

// Throws ScenarioError("<file>: <field.path>: <what was expected>").
Scenario load_scenario(const std::filesystem::path& file);
Scenario parse_scenario(const nlohmann::json& j, const std::string& file);

// Keeps the runs whose algorithm or name is in `names` (all when empty). Throws
// ScenarioError for a name that matches nothing.
void select_runs(Scenario& s, const std::vector<std::string>& names);

}  // namespace lockbench
