#include "sim/engine/renewal.h"

namespace lockbench {

Duration from_ms(double ms) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(ms));
}

namespace {

// One renewal: invoke, extend, outcome.
ExtendResult renew_once(Env& env, Lock& lock, Recorder& rec, const RenewSpec& spec, const std::string& lease_id,
                   HeldLease& held) {
    rec.line("renew", "invoke").str("lease", lease_id).num("ttl_ms", spec.ttl_ms).commit();
    const ExtendResult r = lock.extend(env, held.snapshot(), std::chrono::milliseconds(spec.ttl_ms),
                                       spec.replace ? ExtendMode::replace : ExtendMode::add);
    HistoryLine line = rec.line("renew", outcome_name(r.outcome));
    line.str("lease", lease_id);
    if (r.valid_until) line.real("validity_ms", static_cast<double>((*r.valid_until - env.now()).count()) / 1e6);
    if (!r.detail.empty()) line.str("detail", r.detail);
    line.commit();
    // info: nobody knows whether it extended; the next period tries again.
    if (r.outcome == Outcome::ok) held.renewed(r);
    if (r.outcome == Outcome::fail) held.mark_lost();
    return r;
}

}  // namespace

Lease HeldLease::snapshot() const {
    const std::lock_guard hold(mutex_);
    return lease_;
}

bool HeldLease::lost() const {
    const std::lock_guard hold(mutex_);
    return lost_;
}

void HeldLease::renewed(const ExtendResult& r) {
    const std::lock_guard hold(mutex_);
    if (r.valid_until) lease_.valid_until = r.valid_until;
    if (r.token) lease_.token = *r.token;
}

void HeldLease::mark_lost() {
    const std::lock_guard hold(mutex_);
    lost_ = true;
}

void note_lost_events(Lock& lock, Recorder& rec, const std::string& lease_id, HeldLease& held) {
    for (const LockEvent& e : lock.take_events()) {
        // At the time the lock heard it (a loss may wait for the next look).
        HistoryLine line = e.heard_ns ? rec.line_at(e.heard_ns, e.lost ? "lost" : "adapter", "info")
                                      : rec.line(e.lost ? "lost" : "adapter", "info");
        line.str("lease", lease_id).str("detail", e.detail).commit();
        // An announcement of another kind is kept for the reader, and loses nothing.
        if (e.lost) held.mark_lost();
    }
}

std::unique_ptr<BackgroundTask> start_renewal(Env& env, Lock& lock, Recorder& rec, const RenewSpec& spec,
                                              const std::string& lease_id, HeldLease& held) {
    const Duration period = from_ms(spec.period_ms());
    // The worker stops (and joins) this task before `held` and the lease id go away.
    return env.background([&lock, &rec, &held, spec, lease_id, period](Env& bg, StopSignal& stop) {
        while (stop.sleep_unless_stopped(period)) {
            const ExtendResult r = renew_once(bg, lock, rec, spec, lease_id, held);
            note_lost_events(lock, rec, lease_id, held);
            if (r.outcome == Outcome::fail && !spec.retry) return;  // on_failure stop: the lease is gone
            if (r.final) return;  // nothing left to renew through (the adapter died)
        }
    });
}

nlohmann::json RenewSpec::to_json() const {
    nlohmann::json j = nlohmann::json::object();
    if (every_ms) j["every_ms"] = *every_ms;
    if (fraction) j["fraction"] = *fraction;
    j["ttl_ms"] = ttl_ms;
    j["mode"] = replace ? "replace" : "add";
    j["on_failure"] = retry ? "retry" : "stop";
    j["abandon"] = abandon;
    return j;
}

}  // namespace lockbench
