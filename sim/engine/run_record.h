// A run's record, run.json: what ran (the run, its parameters, seed and workload) and what
// its world reported (faults, the store's final counter, clients whose adapter broke).
// Converted to and from JSON here and nowhere else.
//
//   a world ──► RunOutcome ──► run_record() (run_setup.h) ──► RunRecord ──► to_json ──► run.json
//   run.json ──► run_record_from_json ──► run_summary() (summary.h), recheck
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/run_summary.h"
#include "sim/engine/scenario.h"

namespace lockbench {

struct RunRecord : RunIdentity {
    std::string scenario;
    std::string lock_key;
    std::vector<Expectation> expect;
    nlohmann::json workload = nlohmann::json::object();  // the scenario's "workload", as written
    long long command_timeout_ms = 0;
    long long connect_timeout_ms = 0;
    nlohmann::json renew;                      // the run's renewal policy (RenewSpec), null if none
    std::vector<ClientFailure> clients_failed;
    std::optional<std::size_t> sim_events;     // the simulator's: events it ran ("backend": "sim")
    nlohmann::json faults = nlohmann::json::array();     // per fault: label, fired, clients
    long long faults_injected = 0;
    std::vector<std::string> unmet;            // what did not happen as the case wrote it (FaultSchedule::unmet)
    long long final_counter = 0;
};

nlohmann::json to_json(const RunRecord& r);
// A record as to_json writes it; name, algorithm, params, nodes, clients and seed are required
// (nlohmann::json's exception names the first missing), the rest default as an older record
// that lacks them means.
RunRecord run_record_from_json(const nlohmann::json& j);

}  // namespace lockbench
