#include "sim/engine/worker.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "sim/engine/renewal.h"
#include "sim/engine/store.h"

namespace lockbench {
namespace {

class Worker {
public:
    Worker(Env& lock_env, Env& store_env, Lock& lock, Recorder& rec, const WorkerSpec& spec)
        : env_(lock_env), store_(store_env, spec.store_timeout, spec.resource_check), lock_(lock), rec_(rec), spec_(spec),
          work_rng_(derive_seed(spec.seed, 1)), retry_rng_(derive_seed(spec.seed, 2)) {}

    WorkerTotals run() {
        if (spec_.start_at) {
            // Everyone shares one deadline; a staggered client just starts later.
            deadline_ = *spec_.start_at + std::chrono::milliseconds(spec_.workload.duration_ms);
            bound_ = *spec_.start_at + std::chrono::milliseconds(spec_.workload.longest_ms());
            env_.sleep(*spec_.start_at + std::chrono::milliseconds(spec_.workload.start_stagger_ms * spec_.client) -
                       env_.now());
        } else {
            deadline_ = env_.now() + std::chrono::milliseconds(spec_.workload.duration_ms);
            bound_ = env_.now() + std::chrono::milliseconds(spec_.workload.longest_ms());
        }
        const auto limit = spec_.workload.sections_per_client;
        while (running() && (!limit || totals_.sections < *limit)) {
            const double work_ms = draw_work_ms();  // drawn first: the same per section index
            const std::string lease_id = "c" + std::to_string(spec_.client) + "." + std::to_string(totals_.sections + 1);
            std::optional<Lease> lease = acquire_nested(lease_id);
            if (!lease) break;
            HeldLease held(*lease);
            std::unique_ptr<BackgroundTask> renewal;
            if (spec_.renew) renewal = start_renewal(env_, lock_, rec_, *spec_.renew, lease_id, held);
            env_.reach(Point::after_acquire);
            section(lease_id, held, work_ms);
            ++totals_.sections;
            env_.reach(Point::before_release);
            renewal.reset();  // stops and joins: no renewal after (or during) the release
            // Released even when lost: with a token the release is a harmless "not ours",
            // and a naive DEL deleting the next holder's lock is what the checker should see.
            release_nested(lease_id, held.snapshot());
            note_lost_events(lock_, rec_, lease_id, held);
            released_lease_id_ = lease_id;
            env_.sleep(from_ms(spec_.workload.think_ms.sample_ms(retry_rng_)));
        }
        return totals_;
    }

private:
    bool running() {
        if (spec_.stop && *spec_.stop) return false;
        return env_.now() < deadline_ || go_on_for_sections();
    }

    // "until_sections": past the duration, a step more while the store's own counter is below
    // it and the bound is not reached. The store decides, not this client's own count.
    bool go_on_for_sections() {
        const std::optional<long long> wanted = spec_.workload.until_sections;
        if (!wanted || env_.now() >= bound_) return false;
        const Reply r = store_.counter();
        if (!r.ok()) return false;
        long long counted = 0;  // nil before the first write
        if (!r.value.is_nil() && std::from_chars(r.value.str.data(), r.value.str.data() + r.value.str.size(), counted).ec != std::errc())
            return false;
        if (counted >= *wanted) return false;
        deadline_ = std::min(env_.now() + std::chrono::milliseconds(kSectionsStepMs), bound_);
        return true;
    }
    static constexpr long long kSectionsStepMs = 100;

    double draw_work_ms() {
        const bool slow = work_rng_.uniform01() < spec_.workload.slow_probability;
        const Distribution& d = slow ? spec_.workload.slow_work_ms : spec_.workload.work_ms;
        return d.sample_ms(work_rng_);
    }

    void record_acquire(const std::string& lease_id, const AcquireResult& r, int depth) {
        HistoryLine line = rec_.line("acquire", outcome_name(r.outcome));
        line.num("depth", depth);
        if (r.lease) {
            line.str("lease", lease_id).str("token", r.lease->token);
            if (r.lease->fencing_token) line.num("fence", *r.lease->fencing_token);
            if (r.lease->valid_until) line.real("validity_ms", static_cast<double>((*r.lease->valid_until - env_.now()).count()) / 1e6);
            std::uint32_t mask = 0;
            for (NodeId n : r.lease->nodes) mask |= 1u << n.value;
            line.nodes(mask);
        }
        if (!r.key_ttl_ms.empty()) line.ints("key_ttl_ms", r.key_ttl_ms);
        if (!r.detail.empty()) line.str("detail", r.detail);
        line.commit();
    }

    // One acquire attempt after another until one succeeds or the deadline passes.
    std::optional<Lease> acquire(const std::string& lease_id, int depth) {
        while (running()) {
            env_.reach(Point::before_acquire);
            rec_.line("acquire", "invoke").num("depth", depth).commit();
            ++totals_.acquire_attempts;
            note_released_lease_events();
            const AcquireResult r = lock_.try_acquire(env_);
            note_released_lease_events();  // what the lock said before it answered
            record_acquire(lease_id, r, depth);
            if (r.outcome == Outcome::ok) return r.lease;
            Duration delay = from_ms(spec_.workload.retry_ms.sample_ms(retry_rng_));
            if (r.retry_within) delay = std::min(delay, *r.retry_within);
            env_.sleep(std::min(delay, deadline_ - env_.now()));
        }
        return std::nullopt;
    }

    // A lock's announcements that arrive after a release, before or while the next acquire
    // is answered, are about the released lease: recorded against it, never the next one.
    // (One the lock makes about the new lease in the instant after answering, read in the
    // same look, would count for the old one: a window of one read.)
    void note_released_lease_events() {
        HeldLease released{Lease{}};
        note_lost_events(lock_, rec_, released_lease_id_, released);
    }

    std::optional<Lease> acquire_nested(const std::string& lease_id) {
        std::optional<Lease> lease = acquire(lease_id, 1);
        for (int depth = 2; lease && depth <= lock_.nesting(); ++depth) {
            rec_.line("acquire", "invoke").num("depth", depth).commit();
            const AcquireResult r = lock_.try_acquire(env_);
            record_acquire(lease_id, r, depth);
            if (r.outcome != Outcome::ok) break;
            lease = r.lease;
        }
        return lease;
    }

    void release_nested(const std::string& lease_id, const Lease& lease) {
        for (int depth = lease.depth; depth >= 1; --depth) {
            rec_.line("release", "invoke").str("lease", lease_id).num("depth", depth).commit();
            const ReleaseResult r = lock_.release(env_, lease);
            std::uint32_t mask = 0;
            for (NodeId n : r.removed_on) mask |= 1u << n.value;
            HistoryLine line = rec_.line("release", outcome_name(r.outcome));
            line.str("lease", lease_id).num("depth", depth);
            // "nodes" only where the release says what it removed: none for one whose library
            // did not say, nor for a release that failed or timed out.
            if (r.outcome == Outcome::ok && r.removed_known) line.nodes(mask);
            if (!r.detail.empty()) line.str("detail", r.detail);
            line.commit();
        }
    }

    void section(const std::string& lease_id, HeldLease& held, double work_ms) {
        const Lease lease = held.snapshot();
        const SectionId id{spec_.client, lease_id, lease.fencing_token, lease.token};
        rec_.line("read", "invoke").str("lease", lease_id).commit();
        const Reply read = store_.enter(id);
        record_store_op("read", lease_id, read, read.ok() ? "ok" : outcome_name(reply_outcome(read)));
        if (!read.ok()) {
            store_.abandon(id);  // the enter may have landed: leave no section open
            return;
        }
        if (spec_.reports_entered) env_.reach(Point::entered);
        env_.sleep(from_ms(work_ms));
        if (abandons_lost_lease(lease_id, held, work_ms)) {
            store_.abandon(id);
            return;
        }
        const std::optional<Instant> valid_until = held.snapshot().valid_until;  // as renewed meanwhile
        if (spec_.check_lease_before_write && valid_until && env_.now() >= *valid_until) {
            // The careful client: its lease ran out while it worked, so it does not write.
            rec_.line("write", "invoke").str("lease", lease_id).real("work_ms", work_ms).commit();
            rec_.line("write", "fail").str("lease", lease_id).str("detail", "lease expired before the write").commit();
            store_.abandon(id);
            return;
        }
        env_.reach(Point::before_write);
        HistoryLine invoke = rec_.line("write", "invoke").str("lease", lease_id).real("work_ms", work_ms);
        if (lease.fencing_token) invoke.num("fence", *lease.fencing_token);
        invoke.commit();
        const Reply write = store_.write_and_exit(id, read.value.integer);
        const char* type = !write.ok() ? outcome_name(reply_outcome(write)) : write.value.is_int(1) ? "ok" : "fail";
        HistoryLine line = store_op_line("write", lease_id, write, type);
        // Refused: the lock server's own word, right after, on whether this lease still holds
        // the lock there, which tells the holder's write refused from a stale one (the checker's
        // holder_writes_rejected). Unasked where the lock cannot be asked or did not answer.
        if (write.ok() && !write.value.is_int(1))
            if (const std::optional<bool> held_now = lock_.holds(env_, held.snapshot()))
                line.str("lock_says", *held_now ? "held" : "not held");
        line.commit();
        // Without a clear answer it is unknown whether the write and its exit happened: close it.
        if (!write.ok()) store_.abandon(id);
    }

    // With a renewal policy that abandons: the holder has learnt that its lease is gone (a
    // failed renewal, or the lock said so), so it writes nothing.
    bool abandons_lost_lease(const std::string& lease_id, HeldLease& held, double work_ms) {
        note_lost_events(lock_, rec_, lease_id, held);
        if (!spec_.renew || !spec_.renew->abandon || !held.lost()) return false;
        rec_.line("write", "invoke").str("lease", lease_id).real("work_ms", work_ms).commit();
        rec_.line("write", "fail").str("lease", lease_id).str("detail", "lease lost: a renewal failed, or the lock said so").commit();
        return true;
    }

    void record_store_op(const char* op, const std::string& lease_id, const Reply& r, const char* type) {
        store_op_line(op, lease_id, r, type).commit();
    }

    // The line, timed at the reply, left open for what is learnt after it.
    HistoryLine store_op_line(const char* op, const std::string& lease_id, const Reply& r, const char* type) {
        HistoryLine line = rec_.line(op, type);
        line.str("lease", lease_id);
        if (r.ok() && r.value.type == Value::Type::integer) line.num("value", r.value.integer);
        if (!r.error.empty()) line.str("detail", r.error);
        return line;
    }

    Env& env_;
    Store store_;
    Lock& lock_;
    Recorder& rec_;
    const WorkerSpec& spec_;
    Rng work_rng_;
    Rng retry_rng_;
    Instant deadline_;
    Instant bound_;  // the longest the workload goes on (WorkloadSpec::longest_ms)
    WorkerTotals totals_;
    std::string released_lease_id_;  // the last lease released; empty before the first
};

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
    Rng r(seed ^ (stream * 0xd1342543de82ef95ULL));
    r.next();
    return r.next();
}

double Distribution::sample_ms(Rng& rng) const {
    switch (kind) {
        case Kind::fixed: return a;
        case Kind::uniform: return a + (b - a) * rng.uniform01();
        case Kind::exponential: return -a * std::log(1.0 - rng.uniform01());
    }
    return a;
}

nlohmann::json Distribution::to_json() const {
    switch (kind) {
        case Kind::fixed: return {{"fixed", a}};
        case Kind::uniform: return {{"uniform", {a, b}}};
        case Kind::exponential: return {{"exponential", a}};
    }
    return nullptr;
}

WorkerTotals run_worker(Env& lock_env, Env& store_env, Lock& lock, Recorder& rec, const WorkerSpec& spec) {
    return Worker(lock_env, store_env, lock, rec, spec).run();
}

}  // namespace lockbench
