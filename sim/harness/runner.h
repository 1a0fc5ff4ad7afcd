// `lockbench run`: every run of a scenario, in the live world (sim/live/live_run.h) or the
// virtual one (sim/virtual/sim_run.h), each checked, into one results folder:
//
//   OUT/summary.json      one entry a run: the checker's figures and the expectations
//   OUT/scenario.json     the scenario as read
//   OUT/runs/<name>/      run.json, history/client-N.jsonl, store.jsonl, nemesis.jsonl
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/scenario.h"

namespace lockbench {

// A live run's wall time by phase, beside its histories (runner.cpp: write_timing).
inline constexpr const char* kTimingFile = "timing.json";

struct RunOptions {
    std::filesystem::path out;
    std::optional<std::uint64_t> seed;   // overrides the scenario's
    std::string self_exe;                // this binary, to start clients (and the adapter check) with
    bool progress = true;                // one line per run on stderr
    std::filesystem::path project_dir;   // where an external adapter's command runs
    bool simulated = false;              // --backend sim: virtual time, modelled nodes (sim_run.h)
    bool adapter_preflight = true;       // LiveRunOptions::preflight
};

// Runs every run of the scenario and makes OUT hold summary.json, scenario.json and
// runs/<name>/: built whole beside OUT and switched in in one atomic step (results_folder.h),
// so that OUT holds the old results or the new ones at every instant. Returns the summary.
// Throws std::runtime_error on a failure to run (not on a violation: that is a result), or
// when OUT holds anything but a run's results; then OUT is left as it was. The caller holds
// OUT's lock (or a lock above it).
nlohmann::json run_scenario(const Scenario& s, const RunOptions& opts);

}  // namespace lockbench
