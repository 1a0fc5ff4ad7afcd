// The scenario engine for live runs:
//
//   lockbench run ──► per run: start lock nodes + store (redis-server, fresh)
//                      ├─► spawn N client processes: `lockbench client SPEC`
//                      │      each: LiveEnv(lock nodes) + LiveEnv(store) + Lock + worker
//                      │            → history/client-N.jsonl
//                      ├─► wait for them, read the store's log → store.jsonl, run.json
//                      └─► checker → one entry of summary.json
//
// Clients are separate processes so that a fault can later pause one (SIGSTOP) or skew its
// clock without touching the others.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario.h"

namespace lockbench {

struct RunOptions {
    std::filesystem::path out;
    std::optional<std::uint64_t> seed;   // overrides the scenario's
    std::string self_exe;                // this binary, to start clients (and the adapter check) with
    bool progress = true;                // one line per run on stderr
    std::filesystem::path project_dir;   // where an external adapter's command runs
    bool simulated = false;              // --backend sim: virtual time, modelled nodes (sim_run.h)
};

// Runs every run of the scenario and makes OUT hold summary.json, scenario.json and
// runs/<name>/: built whole beside OUT and switched in in one atomic step (results_folder.h),
// so that OUT holds the old results or the new ones at every instant. Returns the summary.
// Throws std::runtime_error on a failure to run (not on a violation: that is a result), or
// when OUT holds anything but a run's results; then OUT is left as it was. The caller holds
// OUT's lock (or a lock above it).
nlohmann::json run_scenario(const Scenario& s, const RunOptions& opts);

// The runs recorded under DIR, checked again (nothing is written).
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

// Writes `text` to `path` through a temporary file (a name no other writer uses) and a
// rename: readers see the old file or the whole new one, never half of it.
void write_atomically(const std::filesystem::path& path, const std::string& text);

// The `lockbench client SPEC` entry point; returns the process exit code: 0, or
// kAdapterFailed when its external lock's adapter broke the protocol (the one-line reason
// is the last line of its stderr and of its history).
constexpr int kAdapterFailed = 3;
int client_main(const std::filesystem::path& spec_file);

// The table printed after run and check.
std::string format_table(const nlohmann::json& summary);

// Exit status for a summary: 0 when every expectation held, 1 otherwise.
int expectations_exit_code(const nlohmann::json& summary);

}  // namespace lockbench
