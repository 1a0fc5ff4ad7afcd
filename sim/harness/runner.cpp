#include "sim/harness/runner.h"

#include <fstream>
#include <iostream>

#include "analysis/report_data.h"
#include "sim/engine/run_setup.h"
#include "sim/engine/summary.h"
#include "sim/harness/recheck.h"
#include "sim/harness/results_folder.h"
#include "sim/live/live_run.h"
#include "sim/live/phase_clock.h"
#include "sim/live/redis_node.h"
#include "sim/virtual/sim_run.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

// The run's record, run.json, from what its world reported.
RunRecord record_run(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                     const RunOutcome& outcome) {
    RunRecord record = run_record(s, run, seed, outcome);
    write_atomically(run_dir / "run.json", to_json(record).dump(2) + "\n");
    return record;
}

// A run just made: checked, with what the report draws written beside its histories.
RunSummary check_new_run(const fs::path& run_dir, const RunRecord& record) {
    CheckedRun checked = check_run(run_dir, record);
    write_atomically(run_dir / kSectionsFile, checked.sections.dump() + "\n");
    return std::move(checked.summary);
}

bool announce(const RunOptions& opts, size_t i, size_t n, const RunSpec& run) {
    if (!opts.progress) return false;
    std::cerr << "lockbench: [" << i + 1 << "/" << n << "] " << run.name << ": " << run.workload.clients
              << " clients for " << run.workload.duration_ms << " ms on " << run.nodes
              << " " << service_info(run.service).server
              << (run.nodes == 1 ? "" : "s") << " ..." << std::flush;
    return true;
}


}  // namespace

namespace {

// A run folder holds a run's results and nothing else: publishing replaces it as a whole.
void check_run_folder(const fs::path& out) {
    if (!fs::exists(out)) return;
    if (!fs::is_directory(out)) throw std::runtime_error(out.string() + ": exists and is not a folder; choose another --out");
    for (const auto& e : fs::directory_iterator(out)) {
        const std::string name = e.path().filename().string();
        const bool ours = name == "summary.json" || name == "scenario.json" || name == "runs" || name == kLockFileName ||
                          name.starts_with(".incomplete.") || name.find(".tmp.") != std::string::npos;
        if (!ours)
            throw std::runtime_error(out.string() + ": holds " + name + ", which is not part of a lockbench run's results " +
                                     "(a run replaces the whole folder); choose another --out");
    }
}

struct RunsDone {
    std::vector<RunSummary> runs;
    nlohmann::json skipped = nlohmann::json::array();  // runs the simulator cannot run
};

// Runs every run of the scenario into STAGING/runs/<name>/ and checks it.
RunsDone run_each(const Scenario& s, const RunOptions& opts, std::uint64_t seed, const fs::path& staging,
                  const fs::path& tmp) {
    RunsDone done;
    bool line_open = false;  // a progress line awaits its ending
    try {
        for (size_t i = 0; i < s.runs.size(); ++i) {
            const RunSpec& run = s.runs[i];
            const fs::path run_dir = staging / "runs" / run.name;
            const auto started = [&] { line_open = announce(opts, i, s.runs.size(), run); };
            if (opts.simulated) {
                if (const auto why = sim::unsupported(run)) {
                    if (opts.progress) std::cerr << "lockbench: [" << i + 1 << "/" << s.runs.size() << "] " << run.name
                                                 << ": skipped: " << *why << "\n";
                    done.skipped.push_back({{"name", run.name}, {"why", *why}});
                    continue;
                }
                const RunOutcome outcome = sim::run_simulated(s, run, seed, run_dir, started);
                done.runs.push_back(check_new_run(run_dir, record_run(s, run, seed, run_dir, outcome)));
            } else {
                // Where its time went (timing.json, scripts/profile): the run's own phases, then
                // stopping its servers and clients, then the check with its files.
                PhaseClock clock;
                const LiveRunOptions live{opts.self_exe, opts.project_dir, &clock, opts.adapter_preflight};
                const RunOutcome outcome = run_live(s, run, seed, run_dir, tmp, live, started);
                clock.mark("teardown");
                done.runs.push_back(check_new_run(run_dir, record_run(s, run, seed, run_dir, outcome)));
                clock.mark("check");
                write_atomically(run_dir / kTimingFile, clock.to_json().dump(2) + "\n");
            }
            if (line_open) {
                const RunSummary& r = done.runs.back();
                const auto v = static_cast<long long>(r.metric("mutual_exclusion_violations"));
                std::cerr << " " << static_cast<long long>(r.metric("sections_completed")) << " sections, " << v
                          << (v == 1 ? " violation\n" : " violations\n");
            }
            line_open = false;
        }
    } catch (...) {
        if (line_open) std::cerr << " failed\n";
        throw;
    }
    return done;
}

}  // namespace

// The new results are built whole in a staging folder beside OUT and switched in at once
// (results_folder.h): at every instant OUT holds the old results or the new ones.
nlohmann::json run_scenario(const Scenario& s, const RunOptions& opts) {
    if (!opts.simulated) redis_server_binary();  // fails here, in one line, before anything is written
    check_run_folder(opts.out);
    const std::uint64_t seed = opts.seed.value_or(s.seed);
    const fs::path tmp = make_run_temp_dir();  // first: a TMPDIR that cannot hold it fails before anything is written
    fs::path staging;
    RunsDone done;
    try {
        staging = make_staging(opts.out);
        fs::create_directories(staging / "runs");  // even when every run is skipped
        done = run_each(s, opts, seed, staging, tmp);
    } catch (...) {
        std::error_code ec;
        if (!staging.empty()) fs::remove_all(staging, ec);
        fs::remove_all(tmp, ec);
        throw;
    }
    fs::remove_all(tmp);
    nlohmann::json runs = nlohmann::json::array();
    for (const RunSummary& r : done.runs) runs.push_back(to_json(r));
    nlohmann::json summary = {{"scenario", s.name}, {"scenario_file", s.path}, {"seed", seed}, {"runs", runs}};
    if (opts.simulated) {
        summary["backend"] = "sim";
        summary["skipped"] = done.skipped;
    }
    write_atomically(staging / "scenario.json", s.source.dump(2) + "\n");
    write_atomically(staging / "summary.json", summary.dump(2) + "\n");
    replace_folder(staging, opts.out);
    return summary;
}

}  // namespace lockbench
