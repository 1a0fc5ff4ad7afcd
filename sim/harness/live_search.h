// A live search for what breaks one lock (`lockbench verdict LOCK --discover SECONDS`): for
// the locks the simulator cannot model (every library, ZooKeeper's, etcd's), fault schedules
// drawn from the fault vocabulary, run against the live lock, short, one or two faults each.
//
//   the search's own case (no lock named: 4 clients, 1.5 s, TTL 300 ms, client 0 first),
//   composed with LOCK as every case is (its time, its nodes, the points it passes)
//     ──► candidates, most likely first:
//           1. the classes the simulator finds on the lockbench algorithm LOCK is most like
//              (a one-node Redis lease: token-lua; a quorum of Redis nodes: redlock; ...),
//              searched for a few seconds on the same case, their faults aimed by role
//              (promote.h), most schedules first
//           2. the literature's classes, from the vocabulary: a pause past the lease, held
//              replies, a held write, a node's clock and a client's, an empty restart
//           3. schedules of up to two faults drawn as `explore --budget 2` draws them
//     ──► each run live once; a violation (2 holders, or unsafe) whose class is new is
//         shrunk live (each fault alone), replayed twice more, and kept as a witness that
//         replays: OUT/discover/witness-N.json (`lockbench run` runs it as it is)
//     ──► OUT/discover/discover.json and verdict.json's "discovered" and "discover":
//           discovered: [{class, failure_class, faults, witness, first_found_s,
//                         repetitions_violating, repetitions, source, schedules}]
//           discover:   {seconds, wall_s, schedules_tried, not_applicable, model,
//                        coverage: [{fault, point, target, tried, violated}]}
//
// A search bounded by wall time finds what it reaches; its coverage says what it tried.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/case_file.h"
#include "sim/engine/lock_file.h"

namespace lockbench::sim {

struct LiveSearchOptions {
    std::filesystem::path out;        // the search writes OUT/discover/
    double seconds = 300;             // wall time for the whole search
    std::string self_exe;
    std::filesystem::path project_dir;
    std::uint64_t seed = 1;
    int confirm = 2;                  // replays of a new class's witness
    bool progress = true;
};

// The search's case: no faults, its workload in the lock's time once composed.
nlohmann::json search_case();

// The lockbench algorithm (a lock of `own`) the simulator stands in for `lock` with, or none.
const LockFile* model_of(const LockFile& lock, const std::vector<LockFile>& own);

// Runs the search; writes OUT/discover/ and returns {"discovered": [...], "discover": {...}}.
nlohmann::json live_search(const LockFile& lock, const std::vector<CaseFile>& catalog, const std::vector<LockFile>& locks,
                           const LiveSearchOptions& opts);

}  // namespace lockbench::sim
