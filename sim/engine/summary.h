// One run's entry in summary.json, from its record (run.json) and the checker's result.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/run_summary.h"
#include "sim/engine/run_record.h"

namespace lockbench {

// The run's entry, from its record (run.json) and what the checker found in its histories.
RunSummary run_summary(const RunRecord& record, const CheckResult& result, const RunHistory& h);

// Every figure of `recomputed` (a run's entry as the checker gives it now) that `stored`
// (the entry summary.json holds) does not hold, one line each: "safety.lost_updates:
// summary.json has 25, the histories give 24". Arrays (witnesses, windows) are one figure.
std::vector<std::string> figure_differences(const nlohmann::json& stored, const nlohmann::json& recomputed);

// The table printed after run and check, from a summary.json's runs and skipped runs; its
// columns are the metric table's (analysis/metrics.h) and the acquire latency.
std::string format_table(const nlohmann::json& summary);

// The exit status when every run that happened as written held its expectations but some run
// did not happen as written (as_written.h): no evidence, which CI must not take for a pass.
inline constexpr int kNotForcedExit = 3;

// Exit status for a summary: 1 when an expectation of a run that happened as written did not
// hold, else kNotForcedExit when a run did not happen as written, else 0.
int expectations_exit_code(const nlohmann::json& summary);

}  // namespace lockbench
