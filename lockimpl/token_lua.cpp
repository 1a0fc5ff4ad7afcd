// The single-instance lock of the Redis documentation, seeds 000, 001 and 004.
//
//   acquire  [T1] SET key token NX PX ttl         (token: random, unique to this acquire)
//            [T1f] with `fence`: one Lua script does T1 and INCR key:fence, returning the
//                  new fencing token (monotonic per lock) — Kleppmann's fix
//            [T2] with `wait_replicas` > 0: WAIT n timeout; fewer acks is a failure, and the
//                 lock is released again (it may exist on the master only)
//   extend   [T4] redis-py's extend script (Lock.extend(additional_time, replace_ttl)):
//                 if GET key == token and the key has a TTL: PEXPIRE to PTTL + T (add) or T
//                 (replace); 0 when the key is gone, not ours, or has no TTL
//   release  [T3] Lua: if GET key == token then DEL key  (compare-and-delete, atomic)
#include <string>

#include "lockimpl/registry.h"

namespace lockbench {

const char* const kAcquireFenced =
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "  return redis.call('incr', KEYS[2]) "
    "end "
    "return false";

namespace {

class TokenLuaLock final : public Lock {
public:
    TokenLuaLock(const Params& p, LockContext ctx)
        : ctx_(std::move(ctx)), ttl_ms_(p.integer("ttl_ms")), fence_(p.flag("fence")),
          wait_replicas_(p.integer("wait_replicas")), wait_timeout_ms_(p.integer("wait_timeout_ms")) {}

    AcquireResult try_acquire(Env& env) override {
        const std::string token = random_hex(env, 16);
        const Instant start = env.now();
        const std::string ttl = std::to_string(ttl_ms_);
        const Command set = fence_
            ? Command{"EVAL", kAcquireFenced, "2", ctx_.key, ctx_.key + ":fence", token, ttl}  // [T1f]
            : Command{"SET", ctx_.key, token, "NX", "PX", ttl};                                 // [T1]
        const Reply r = env.command(NodeId{0}, set, ctx_.command_timeout, Point::during_acquire);
        if (!r.ok()) return AcquireResult{reply_outcome(r), {}, {}, "SET NX: " + r.error};
        if (r.value.is_nil()) return AcquireResult::fail("held");

        Lease lease{token, {}, start + ms(ttl_ms_), {NodeId{0}}, 1};
        if (fence_) lease.fencing_token = r.value.integer;
        if (wait_replicas_ > 0) {  // [T2]
            const Reply acks = env.command(
                NodeId{0}, {"WAIT", std::to_string(wait_replicas_), std::to_string(wait_timeout_ms_)},
                ctx_.command_timeout + ms(wait_timeout_ms_));
            if (!acks.ok() || acks.value.integer < wait_replicas_) {
                release(env, lease);
                const std::string got = acks.ok() ? std::to_string(acks.value.integer) : "unknown (" + acks.error + ")";
                return AcquireResult::fail("WAIT: " + got + " of " + std::to_string(wait_replicas_) +
                                           " replicas acknowledged");
            }
        }
        return AcquireResult::ok(lease);
    }

    ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) override {
        const Instant start = env.now();
        const Reply r = env.command(NodeId{0}, extend_if_ours(ctx_.key, lease.token, ttl, mode),
                                    ctx_.command_timeout);  // [T4]
        if (!r.ok()) return {reply_outcome(r), {}, {}, "extend: " + r.error};
        if (!r.value.is_int(1)) return {Outcome::fail, {}, {}, "not ours any more"};
        // With add the key lives at least T more (PTTL + T): start + T is a safe lower bound.
        return {Outcome::ok, start + ttl, {}, ""};
    }

    ReleaseResult release(Env& env, const Lease& lease) override {
        const Reply r = env.command(NodeId{0}, {"EVAL", kCompareAndDelete, "1", ctx_.key, lease.token},
                                    ctx_.command_timeout);  // [T3]
        if (!r.ok()) return {reply_outcome(r), {}, "release: " + r.error};
        return {Outcome::ok, nodes_answering_one({r}), r.value.is_int(1) ? "" : "not ours"};
    }

    std::optional<bool> holds(Env& env, const Lease& lease) override {
        return token_held(env, ctx_.key, lease, {NodeId{0}}, 1, ctx_.command_timeout);
    }

private:
    LockContext ctx_;
    long long ttl_ms_;
    bool fence_;
    long long wait_replicas_;
    long long wait_timeout_ms_;
};

}  // namespace

AlgorithmInfo token_lua_algorithm() {
    using T = ParamSpec::Type;
    return {
        "token-lua",
        "SET key token NX PX ttl, release by Lua compare-and-delete (seeds 000, 001, 004)",
        1,
        {
            {"ttl_ms", T::integer, 500, "the key's time to live", {}, 1},
            {"fence", T::boolean, false, "also INCR a fencing counter in the acquire script"},
            {"wait_replicas", T::integer, 0, "WAIT for this many replica acks (0: no WAIT)", {}, 0, 16},
            {"wait_timeout_ms", T::integer, 50, "WAIT's timeout", {}, 0},
        },
        [](const Params& p, const LockContext& c) -> std::unique_ptr<Lock> {
            return std::make_unique<TokenLuaLock>(p, c);
        },
        [](const nlohmann::json&) { return std::vector<Point>{Point::during_acquire}; },
    };
}

}  // namespace lockbench
