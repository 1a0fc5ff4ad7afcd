// Did the run's story happen as its case wrote it? A verdict is evidence only of a story that
// happened: a fault that did not fire, a precondition event that never came (the restarted
// node answering, the others having tried since), an adapter that never started, or a holder
// whose lease had ended before the forced event when the story needs it live: each is
// something outside the lock that did not happen, and the run is no evidence either way
// (Jepsen's "unknown"). What the lock did once the story happened (a wait's bound reached
// after its precondition held, nobody else able to enter) is an outcome and always counts.
//
//   preconditions ── the case's expectations on faults_injected: whether its faults fired
//   the schedule ─── FaultSchedule::unmet(): the start, restarts, waits that never counted,
//                    pauses that did not stop their target
//   the windows ──── each wait a bound ended: did another client try to acquire meanwhile?
//   the lease ────── a wait with "lease_live": did the other enter within the holder's TTL?
//   the first take ─ a wait with "taken_first": was nobody else granted the lock within the
//                    TTL of the held client's asking, unless the held acquire was granted too?
//   the keep ─────── keep_holder_ms: did the kept-for client answer while the holder was kept?
//   the adapters ─── a client that failed with nothing in its history never started
#pragma once

#include <string>
#include <vector>

#include "analysis/history.h"
#include "analysis/run_summary.h"
#include "sim/engine/run_record.h"

namespace lockbench {

// An expectation about the story, not about the lock: judged here, never an outcome.
bool is_precondition(const Expectation& x);

// One sentence for each thing that did not happen as written; empty when the story did.
std::vector<std::string> not_as_written(const RunRecord& record, const RunHistory& h,
                                        const std::vector<ClientFailure>& clients_failed);

}  // namespace lockbench
