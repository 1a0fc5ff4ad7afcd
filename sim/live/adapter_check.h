// `lockbench adapter-check` (and the first step of `lockbench verdict`): an external lock's
// adapter held to the protocol (docs/adapters.md: The protocol) before anything is run with it.
//
//   lockbench ── starts the lock's servers ──► `lockbench client SPEC` (check mode)
//                                                 ├─ adapter A (client 0) ─┐ each request, in
//                                                 └─ adapter B (client 1) ─┘ the order below
//
//   ready     both say ready; library, algorithm and fencing have their types
//   acquire   A gets the lock; every field of its answer has the protocol's type
//   held      B does not get it while A holds it
//   release   A lets it go (removed_on, if said, names lock nodes)
//   again     B gets it now; with a fencing token, a greater one than A's
//   extend    B extends it in each mode the lock file offers
//   unknown   an unknown op is answered {"ok": false, "error": ...}, and the adapter goes on
//   release   B lets it go
//   reset     B, told {"op": "reset"} (a run's end), answers ok true or false (it cannot be
//             kept: started anew for each run); if true, told {"op": "reset", "env": ...} it
//             answers ok naming the same library, then acquires and releases again
//
// One line per failure, naming the step and what came back. A second client that gets the lock
// while the first holds it is most often an adapter that ignores its library (a failure); for
// a lock whose file records that it does not exclude without any fault (session locks behind
// a pooler that pools by transaction) it is that lock's own failure: the line is a
// finding (is_finding), which the verdict goes on to measure, and the check carries on with
// both released.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/live/external.h"

namespace lockbench {

struct AdapterCheckPlan {
    std::vector<std::string> extend;   // the extend modes the lock file offers ("add", "replace")
    bool fencing = false;              // the lock file says it hands out fencing tokens
    int nodes = 1;                     // lock nodes (a removed_on or nodes index must name one)
    long long ttl_ms = 2000;
    std::string key;
    // The lock file records that it does not exclude even without a fault (its baseline is not
    // safe): a second grant is then a finding rather than a failure.
    bool excludes = true;
    // The lock nodes, where they are redis-servers: then the first holder's token must be where
    // its answer says (its "key", or lockbench's), as the TTL probe and, after a refused write,
    // the lock server's word on the holder (Lock::holds) read it. Null: not asked.
    Env* redis_nodes = nullptr;
};

// The failures and findings, one line each; none when the adapters speak the protocol and
// the lock excluded the second client.
std::vector<std::string> hold_to_protocol(ExternalLock& a, ExternalLock& b, const AdapterCheckPlan& plan);

// A line that reports what the lock did rather than a break of the protocol.
inline constexpr const char* kFindingPrefix = "finding: ";
inline bool is_finding(const std::string& line) { return line.starts_with(kFindingPrefix); }

}  // namespace lockbench
