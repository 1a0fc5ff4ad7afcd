// One run's entry in summary.json, from its record (run.json) and the checker's result.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/checker.h"

namespace lockbench {

// `record` is the run's run.json: name, algorithm, params, nodes, seed, clients, expect.
nlohmann::json run_summary(const nlohmann::json& record, const CheckResult& result, const RunHistory& h);

}  // namespace lockbench
