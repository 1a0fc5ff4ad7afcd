// Schedule search in the simulator (`lockbench explore`): what nobody scripted.
//
//   scenario run ──draw(schedule seed)──► a variant: every fault's timing, length, target
//        │                                client / node / clock step drawn around the
//        │                                scenario's own values; the workload's stagger
//        ▼                                and seed drawn too
//   run_simulated ──► check ──violation?──► shrink: fewer clients, fewer faults, shorter
//                                          faults, a shorter run, while it still violates
//                                          ──► DIR/witness-<run>-<seed>.json: a scenario that
//                                              runs live or simulated as it is; beside it, its
//                                              simulated run as a results tree (for `report`)
//
// Schedule i's seed is derive_seed(S, i): `--replay SEED` rebuilds that very schedule, and
// the simulator makes it byte-identical.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/scenario.h"

namespace lockbench::sim {

struct ExploreOptions {
    std::filesystem::path scenario_file;
    std::vector<std::string> algorithms;  // runs by algorithm or name; all when empty
    long long schedules = 1000;           // per run
    std::uint64_t seed = 1;
    std::filesystem::path out;
    bool progress = true;
    bool stop_at_first = false;           // per run: stop drawing once one violates
};

// The scenario (one run: the variant) that schedule `seed` draws from run `run` of `source`.
nlohmann::json draw_schedule(const nlohmann::json& source, const std::string& run, std::uint64_t seed);

// Runs explore; writes OUT/explore.json and the witnesses; returns explore.json.
nlohmann::json explore(const ExploreOptions& opts);

// Runs one schedule (as explore drew it) into OUT with the usual run layout.
nlohmann::json replay(const ExploreOptions& opts, const std::string& run, std::uint64_t schedule_seed);

}  // namespace lockbench::sim
