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

}  // namespace lockbench::sim
