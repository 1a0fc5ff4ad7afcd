// Schedule search in the simulator (`lockbench explore`): what nobody scripted.
//
//   scenario run ──draw(schedule seed)──► a variant: around the scenario's faults (their timing,
//        │                                length, target, the stagger and seed drawn anew), or
//        │                                with --budget N composed from the whole fault
//        │                                vocabulary (discover.h)
//        ▼
//   simulate (every core, over schedule indices) ──► check ──violation?──► shrink: fewer
//        clients, fewer faults, shorter faults, a shorter run, while it still violates
//        ──► its failure class (discover.h); a new class's witness: DIR/witness-<run>-<seed>.json,
//            a scenario that runs live or simulated as it is, and beside it its simulated run
//            as a results tree (for `report`)
//
// Schedule i's seed is derive_seed(S, i): `--replay SEED` rebuilds that very schedule, and
// the simulator makes it byte-identical. Schedules run in parallel but are judged in index
// order, so that with --schedules the same seed gives the same explore.json (timing fields
// aside) on any number of cores, and a shard I/N takes the indices equal to I modulo N.
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
    // The file as a scenario of the explicit format: a case composed with the catalog's locks
    // (compose.h; the simulator runs lockbench's own). Unset: the file as it is.
    std::optional<nlohmann::json> source;
    std::vector<std::string> algorithms;  // runs by algorithm or name; all when empty
    long long schedules = 1000;           // per run
    std::uint64_t seed = 1;
    std::filesystem::path out;
    bool progress = true;
    bool stop_at_first = false;           // per run: stop drawing once one violates
    int budget = 0;                       // > 0: compose schedules of up to this many faults
    std::optional<double> seconds;        // bounds the whole search (all runs) by wall time
    int jobs = 0;                         // threads; 0: one per core
    int shard_index = 0, shard_count = 1; // this shard runs the indices equal to I modulo N
    int max_shrinks = 256;                // per run: violations shrunk to find their class
};

// The scenario with only run `name`, its faults made its own (the scenario's, unless it
// names its own), so that a schedule can change them.
nlohmann::json one_run_scenario(const nlohmann::json& source, const Scenario& parsed, const std::string& name);

// The scenario (one run: the variant) that schedule `seed` draws from run `run` of `source`.
nlohmann::json draw_schedule(const nlohmann::json& source, const std::string& run, std::uint64_t seed);

// The scenario explore searches: opts.source, or the file.
nlohmann::json explore_source(const ExploreOptions& opts);

// A one-run scenario simulated in memory: what it violated ("mutual_exclusion_violations",
// "stale_writes_accepted", "lost_updates"; a fenced run only the last two), "" when it held,
// "invalid" when the scenario rules refuse it.
std::string simulated_violation(const nlohmann::json& scenario, std::uint64_t seed);

// Runs explore; writes OUT/explore.json and the witnesses; returns explore.json.
nlohmann::json explore(const ExploreOptions& opts);

// Schedule `seed` of run `run` as the options draw it (around the faults, or from the budget).
nlohmann::json draw_for(const ExploreOptions& opts, const nlohmann::json& source, const std::string& run,
                        std::uint64_t seed);

// Orders explore.json's lists (classes, violations, violating schedules) by run name, then
// schedule index: the order of one search, whether it ran whole or in shards.
void sort_by_run_and_schedule(nlohmann::json& list);

// Merges the explore.json of shards of one search (`explore --shard I/N`) into `out`, witnesses
// copied beside it; returns the merged explore.json.
nlohmann::json merge_explore(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out);

// Runs one schedule (as explore drew it) into OUT with the usual run layout.
nlohmann::json replay(const ExploreOptions& opts, const std::string& run, std::uint64_t schedule_seed);

}  // namespace lockbench::sim
