// One scenario run in the simulator (`lockbench run --backend sim`): the same workers, lock
// code, store scripts and fault vocabulary as a live run, in virtual time, written to the
// same run folder (history/, store.jsonl, nemesis.jsonl) for the same checker.
//
//   World (seed) ── fibers: client i ── run_worker(SimEnv locks, SimEnv store, lock, Recorder)
//        │                                   │ reach(point)
//        │                                   ▼
//        └── SimNemesis (sim_nemesis.h): the run's FaultSchedule, the live Nemesis's, carried
//            out in the world: pause / kill a process, gate, clock jump or rate on a client or
//            node, link faults on a client's paths, node crash and restart
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/history.h"
#include "sim/engine/run_setup.h"
#include "sim/engine/scenario.h"

namespace lockbench::sim {

// Why this run cannot be simulated, if it cannot: an external library runs in another
// process, in real time; AOF everysec's loss of the last second is not modelled.
std::optional<std::string> unsupported(const RunSpec& run);

// Runs `run` of `s` with `seed` into `run_dir` (history/, store.jsonl, nemesis.jsonl); `started`
// is called first, as run_live calls it (sim/live/live_run.h).
RunOutcome run_simulated(const Scenario& s, const RunSpec& run, std::uint64_t seed,
                         const std::filesystem::path& run_dir, const std::function<void()>& started = {});

// What check() (analysis/checker.h) finds in one simulated run: its three safety counts.
struct SimVerdict {
    long long mutual_exclusion_violations = 0, stale_writes_accepted = 0, lost_updates = 0;
    bool stopped_early = false;
    long long sim_events = 0;
};

// The same run as run_simulated, checked in memory: no files, no JSON text (the histories go
// straight into a RunHistory, the store's log is read off the model). Safe to call from
// several threads at once: each call has its own world. With `stop_early`, the run ends once
// its faults are spent and a quiet window has passed (sim_run.cpp: early_stop_window_ns):
// which of the three counts are above 0 is the full run's, but the counts may be lower.
SimVerdict simulate_verdict(const Scenario& s, const RunSpec& run, std::uint64_t seed, bool stop_early = true);

}  // namespace lockbench::sim
