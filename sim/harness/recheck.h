// `lockbench check DIR`: the runs recorded under DIR, checked again from their histories and
// store logs (nothing is written).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/run_summary.h"
#include "sim/engine/run_record.h"

namespace lockbench {

// One run folder through the checker: its summary entry (from run.json's record) and what the
// report draws (analysis/report_data.h), which a run writes as runs/NAME/sections.json.
struct CheckedRun {
    RunSummary summary;
    nlohmann::json sections;
};
CheckedRun check_run(const std::filesystem::path& run_dir, const RunRecord& record);

// True when every run summary.json names under DIR was checked by this build's checker from
// the files the run has now, and summary.json holds the figures it gave (each run's
// sections.json records all three): then the checker need not run again. False on anything
// else (another checker, a changed file, a figure that differs, damage), for recheck to judge.
bool checked_as_recorded(const std::filesystem::path& dir);

struct Recheck {
    nlohmann::json summary;                // as the checker sees the runs now
    std::vector<std::string> differences;  // "DIR/summary.json: run R: FIGURE: ...", one a figure
    // Each run's derived files, as a run writes them (runs/NAME/sections.json), for write_derived.
    std::vector<std::pair<std::filesystem::path, nlohmann::json>> derived;
};

// Throws one line naming the file (and line) of anything damaged: summary.json, a run.json,
// a history or a store log that a genuine run could not have written (analysis/record_check.h).
Recheck recheck(const std::filesystem::path& dir);

// Writes what a recheck derived (`lockbench check --write`): the files the report reads,
// rebuilt from the histories and store logs of a folder an older lockbench wrote.
void write_derived(const Recheck& r);

}  // namespace lockbench
