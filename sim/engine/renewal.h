// Renewal, driven by the worker: while a lease is held, a background task (on its own Env,
// like Redisson's watchdog) extends it every period, recording each attempt as a `renew`
// operation (invoke, then ok / fail / info) with the lease's id.
//
//   worker:  acquire ok ──► HeldLease ──► section (read … write) ──► stop renewal ──► release
//   task:                     └─ every period: extend(lease, T) ─► renewed / lost
//
// A failed renewal means the lease is gone (the key expired or is someone else's); with
// `abandon` the worker then writes nothing, as a careful client would. A lock may also say
// on its own that the lease is lost (an external library's onLockLost): a `lost` event.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lockimpl/env.h"
#include "lockimpl/lock.h"
#include "sim/engine/recorder.h"
#include "sim/engine/workload.h"

namespace lockbench {

// A duration of `ms` milliseconds, fractions kept (drawn work, think and retry times, and
// the renewal period).
Duration from_ms(double ms);

// The lease as the worker and its renewal task share it.
class HeldLease {
public:
    explicit HeldLease(Lease lease) : lease_(std::move(lease)) {}
    Lease snapshot() const;
    bool lost() const;
    void renewed(const ExtendResult& r);  // a successful extend: its validity and token
    void mark_lost();

private:
    mutable std::mutex mutex_;
    Lease lease_;
    bool lost_ = false;
};

// Records every `lost` event the lock has announced since the last look, against
// `lease_id`, and marks the lease lost if there was one.
void note_lost_events(Lock& lock, Recorder& rec, const std::string& lease_id, HeldLease& held);

// Starts renewing `held` per `spec`; the task stops when the returned handle is reset.
std::unique_ptr<BackgroundTask> start_renewal(Env& env, Lock& lock, Recorder& rec, const RenewSpec& spec,
                                              const std::string& lease_id, HeldLease& held);

}  // namespace lockbench
