// One client's loop, written against the seam so that a simulator can drive it too:
//
//   until the deadline (or N sections):
//     acquire  — one attempt at a time; after a failure sleep a retry delay drawn from the
//                scenario, never longer than the lock's own hint (Redisson's PTTL)
//     section  — read the counter on the store, work, write counter+1 (store.h)
//     (renew   — with a renewal policy, a background task extends the lease meanwhile)
//     release
//     think
//
// Every operation is recorded as invoke, then ok / fail / info. The work durations come
// from their own random stream, so the same seed gives every client the same sequence of
// sections however the race for the lock turns out.
#pragma once

#include <cstdint>

#include "lockimpl/env.h"
#include "lockimpl/lock.h"
#include "sim/engine/recorder.h"
#include "sim/engine/store.h"
#include "sim/engine/workload.h"

namespace lockbench {

struct WorkerSpec {
    int client = 0;
    std::uint64_t seed = 1;
    WorkloadSpec workload;
    Duration store_timeout = std::chrono::milliseconds(1000);
    std::optional<Instant> start_at;   // wait until then, so that every client starts together
    bool check_lease_before_write = false;  // skip the write if the lease's validity has run out
    std::optional<RenewSpec> renew;         // extend the lease while held (sim/engine/renewal.h)
    ResourceCheck resource_check = ResourceCheck::fence;  // what the store refuses (store.h)
    bool reports_entered = false;  // reach Point::entered after each enter (a fault keeps a holder there)
    // The simulator's early stop (sim/virtual/sim_run.h): once *stop is true the worker ends as
    // at its deadline (the section it is in runs to its end; no new acquire begins).
    const bool* stop = nullptr;
};

struct WorkerTotals {
    long long sections = 0;
    long long acquire_attempts = 0;
};

WorkerTotals run_worker(Env& lock_env, Env& store_env, Lock& lock, Recorder& rec, const WorkerSpec& spec);

}  // namespace lockbench
