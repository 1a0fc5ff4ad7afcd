// Redisson's RLock, as read from its source in seed 003.
//
//   the lock is a hash at the key; its field `clientid:threadid` counts re-entries
//   acquire  [L1] script: if the key does not exist, or our field does: HINCRBY field 1,
//                 PEXPIRE lease, return nil (held); else return PTTL (retry within it)
//   watchdog [W1] while held, every lease/3: script: if our field exists, PEXPIRE lease
//                 (Redisson's renewExpiration; it stops once the field is gone)
//   extend   [W2] the watchdog's script once, with the lease T: Redisson always sets the
//                 lease (replace); it has no "add", so add is refused (fail)
//   release  [U1] script: if our field is gone, return nil (not ours any more); HINCRBY
//                 field -1; if still > 0: PEXPIRE lease, return 0 (still held, nested);
//                 else DEL key, return 1
// Redisson's waiters are woken by a pub/sub message on unlock; here they poll at the
// worker's retry interval and never wait longer than the PTTL the script returned.
#include <string>

#include "lockimpl/registry.h"

namespace lockbench {
namespace {

const char* const kLock =
    "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then "
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return nil "
    "end "
    "return redis.call('pttl', KEYS[1])";

const char* const kRenew =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return 1 "
    "end "
    "return 0";

const char* const kUnlock =
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1) "
    "if counter > 0 then "
    "  redis.call('pexpire', KEYS[1], ARGV[1]) "
    "  return 0 "
    "end "
    "redis.call('del', KEYS[1]) "
    "return 1";

class ReentrantLock final : public Lock {
public:
    ReentrantLock(const Params& p, LockContext ctx)
        : ctx_(std::move(ctx)), lease_(ms(p.integer("lease_ms"))), watchdog_on_(p.flag("watchdog")),
          nesting_(static_cast<int>(p.integer("depth"))) {}

    AcquireResult try_acquire(Env& env) override {
        if (field_.empty()) field_ = random_hex(env, 8) + ":1";  // client id : thread id
        const Instant start = env.now();
        const Reply r = env.command(NodeId{0}, script(kLock), ctx_.command_timeout, Point::during_acquire);  // [L1]
        if (!r.ok()) return AcquireResult{reply_outcome(r), {}, {}, "lock script: " + r.error};
        if (!r.value.is_nil()) return AcquireResult::fail("held", ms(std::max(0LL, r.value.integer)));
        if (++depth_ == 1 && watchdog_on_) start_watchdog(env);
        return AcquireResult::ok({field_, {}, start + lease_, {NodeId{0}}, depth_});
    }

    ReleaseResult release(Env& env, const Lease&) override {
        const Reply r = env.command(NodeId{0}, script(kUnlock), ctx_.command_timeout);  // [U1]
        if (!r.ok()) return {reply_outcome(r), {}, "unlock script: " + r.error};
        depth_ = r.value.is_int(0) ? depth_ - 1 : 0;
        if (depth_ == 0 && watchdog_) watchdog_.reset();  // stops and joins, no I/O of its own
        if (r.value.is_nil()) return {Outcome::ok, {}, "not ours any more"};
        return {Outcome::ok, nodes_answering_one({r}), r.value.is_int(0) ? "still held (nested)" : ""};
    }

    ExtendResult extend(Env& env, const Lease&, Duration ttl, ExtendMode mode) override {
        if (mode == ExtendMode::add) return {Outcome::fail, {}, {}, "Redisson renews by replacing the lease only"};
        const Instant start = env.now();
        const Command renew{"EVAL", kRenew, "1", ctx_.key, std::to_string(whole_ms(ttl)), field_};
        const Reply r = env.command(NodeId{0}, renew, ctx_.command_timeout);  // [W2]
        if (!r.ok()) return {reply_outcome(r), {}, {}, "renew script: " + r.error};
        if (!r.value.is_int(1)) return {Outcome::fail, {}, {}, "not ours any more"};
        return {Outcome::ok, start + ttl, {}, ""};
    }

    int nesting() const override { return nesting_; }

    // Our field (client id : thread id) in the lock's hash.
    std::optional<bool> holds(Env& env, const Lease& lease) override {
        return token_held(env, ctx_.key, lease, {NodeId{0}}, 1, ctx_.command_timeout);
    }

private:
    Command script(const char* body) const {
        return {"EVAL", body, "1", ctx_.key, std::to_string(lease_ / ms(1)), field_};
    }

    void start_watchdog(Env& env) {  // [W1]
        const Command renew = script(kRenew);
        const Duration period = lease_ / 3;
        const Duration timeout = ctx_.command_timeout;
        watchdog_ = env.background([renew, period, timeout](Env& bg, StopSignal& stop) {
            while (stop.sleep_unless_stopped(period)) {
                const Reply r = bg.command(NodeId{0}, renew, timeout);
                if (r.ok() && r.value.is_int(0)) return;  // the lock is gone: stop renewing
            }
        });
    }

    LockContext ctx_;
    Duration lease_;
    bool watchdog_on_;
    int nesting_;
    std::string field_;
    int depth_ = 0;
    std::unique_ptr<BackgroundTask> watchdog_;
};

}  // namespace

AlgorithmInfo reentrant_algorithm() {
    using T = ParamSpec::Type;
    return {
        "reentrant",
        "Redisson's reentrant lock: hash field clientid:threadid, watchdog renews every lease/3 (seed 003)",
        1,
        {
            {"lease_ms", T::integer, 30000, "lease set by PEXPIRE; the watchdog renews it", {}, 1},
            {"watchdog", T::boolean, true, "renew the lease every lease/3 while held"},
            {"depth", T::integer, 1, "nested acquires around each critical section", {}, 1, 64},
        },
        [](const Params& p, const LockContext& c) -> std::unique_ptr<Lock> {
            return std::make_unique<ReentrantLock>(p, c);
        },
        [](const nlohmann::json&) { return std::vector<Point>{Point::during_acquire}; },
        [](const nlohmann::json& p) { return p.value("watchdog", true); },
        true,
    };
}

}  // namespace lockbench
