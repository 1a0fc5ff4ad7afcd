// The redis-objects lock (Ruby gem), as quoted in seed 002.
//
//   [G1] expiration = now + ttl          (the client's own wall clock)
//   [G2] SETNX key expiration            -> 1: held
//   [G3] old = GET key; if old < now:    (the holder's expiry has passed, by OUR clock)
//   [G4]     old = GETSET key (now + ttl); if old < now: held   (we swapped in first)
//   extend:  [X1] redis-objects has none; what its seed code would write: GETSET key
//                 (new expiry), then see whether the old value was ours (extend_expiry_value)
//   release: [R1] if expiration > now: DEL key   (only if our own expiry has not passed)
//
// Every decision compares timestamps written by one client's clock with another client's
// clock, so a client whose clock runs ahead steals live locks. A nil GET or GETSET reads as
// 0, as Ruby's nil.to_f does, which counts as expired.
#include <string>

#include "lockimpl/registry.h"

namespace lockbench {
namespace {

class GetsetLock final : public Lock {
public:
    GetsetLock(const Params& p, LockContext ctx) : ctx_(std::move(ctx)), ttl_ms_(p.integer("ttl_ms")) {}

    AcquireResult try_acquire(Env& env) override {
        const Instant start = env.now();
        std::string expiration = std::to_string(env.wall_ms() + ttl_ms_);  // [G1]
        const Reply set = env.command(NodeId{0}, {"SETNX", ctx_.key, expiration}, ctx_.command_timeout);
        if (!set.ok()) return AcquireResult{reply_outcome(set), {}, {}, "SETNX: " + set.error};
        if (set.value.is_int(1)) return held(expiration, start);  // [G2]

        const Reply get = env.command(NodeId{0}, {"GET", ctx_.key}, ctx_.command_timeout);  // [G3]
        if (!get.ok()) return AcquireResult{reply_outcome(get), {}, {}, "GET: " + get.error};
        if (leading_integer(get.value.str) >= env.wall_ms()) return AcquireResult::fail("held, not expired");

        env.reach(Point::after_seen_expired);
        expiration = std::to_string(env.wall_ms() + ttl_ms_);
        const Reply swap = env.command(NodeId{0}, {"GETSET", ctx_.key, expiration}, ctx_.command_timeout);
        if (!swap.ok()) return AcquireResult{reply_outcome(swap), {}, {}, "GETSET: " + swap.error};
        if (leading_integer(swap.value.str) < env.wall_ms()) return held(expiration, start);  // [G4]
        return AcquireResult::fail("another waiter stole it first");
    }

    ReleaseResult release(Env& env, const Lease& lease) override {
        if (leading_integer(lease.token) <= env.wall_ms())  // [R1]
            return {Outcome::ok, {}, "own expiry passed; not deleting"};
        const Reply del = env.command(NodeId{0}, {"DEL", ctx_.key}, ctx_.command_timeout);
        if (!del.ok()) return {reply_outcome(del), {}, "DEL: " + del.error};
        return {Outcome::ok, nodes_answering_one({del}), ""};
    }

    ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) override {
        return extend_expiry_value(env, ctx_, lease, ttl, mode);  // [X1]
    }

private:
    AcquireResult held(const std::string& expiration, Instant start) const {
        return AcquireResult::ok({expiration, {}, start + ms(ttl_ms_), {NodeId{0}}, 1});
    }

    LockContext ctx_;
    long long ttl_ms_;
};

}  // namespace

AlgorithmInfo getset_algorithm() {
    return {
        "getset",
        "redis-objects lock: expiry time as the value, GETSET to steal (seed 002)",
        1,
        {{"ttl_ms", ParamSpec::Type::integer, 500, "how far ahead of the client's clock the "
          "stored expiration lies", {}, 1}},
        [](const Params& p, const LockContext& c) -> std::unique_ptr<Lock> {
            return std::make_unique<GetsetLock>(p, c);
        },
        [](const nlohmann::json&) { return std::vector<Point>{Point::after_seen_expired}; },
    };
}

}  // namespace lockbench
