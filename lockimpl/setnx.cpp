// The naive SETNX lock, with the pitfalls of seeds 001 and 002 kept on purpose.
//
//   acquire  [A1] SETNX key value           (value: a random token, or a fixed "locked")
//            [A2] PEXPIRE key ttl            (a separate command: a crash between A1 and A2
//                                             leaves a lock that never expires)
//   release  [R1] DEL key                    (deletes whoever's lock is there now), or
//            [R1'] GET key, compare, DEL key (the compare and the delete are not atomic)
//
//   extend   [X1] PEXPIRE key T (replace), or PTTL then PEXPIRE key PTTL + T (add): the
//                 naive renewal, with no check that the key is still ours, so it extends
//                 whoever holds the lock now; it fails only when the key is gone. With
//                 expiry = "in-value": GETSET key (new expiry), see extend_expiry_value.
// Seed 002's "naive expiry" variant (expiry = "in-value") stores the holder's expiry time,
// by the holder's clock, as the value; a waiter that finds it passed runs
//            [E1] DEL key  then  [E2] SETNX key new-expiry
// and two waiters racing through E1/E2 can both win: the expired-lock race.
// The seed's EXPIRE takes seconds; PEXPIRE is the same command in the milliseconds that
// scaled-down scenarios need.
#include <algorithm>
#include <string>

#include "lockimpl/registry.h"

namespace lockbench {
namespace {

class SetnxLock final : public Lock {
public:
    SetnxLock(const Params& p, LockContext ctx)
        : ctx_(std::move(ctx)), ttl_ms_(p.integer("ttl_ms")), expiry_(p.choice("expiry")),
          fixed_value_(p.choice("value") == "fixed"), get_del_(p.choice("release") == "get-del") {}

    AcquireResult try_acquire(Env& env) override {
        if (expiry_ == "in-value") return acquire_expiry_in_value(env);
        const std::string value = fixed_value_ ? "locked" : random_hex(env, 16);
        const Instant start = env.now();
        const Reply set = env.command(NodeId{0}, {"SETNX", ctx_.key, value}, ctx_.command_timeout);  // [A1]
        if (!set.ok()) return AcquireResult{reply_outcome(set), {}, {}, "SETNX: " + set.error};
        if (!set.value.is_int(1)) return AcquireResult::fail("held");
        Lease lease{value, {}, {}, {NodeId{0}}, 1};
        if (expiry_ == "expire") {
            env.reach(Point::between_setnx_and_expire);
            env.command(NodeId{0}, {"PEXPIRE", ctx_.key, std::to_string(ttl_ms_)},
                        ctx_.command_timeout);  // [A2] its failure leaves the key without expiry
            lease.valid_until = start + ms(ttl_ms_);
        }
        return AcquireResult::ok(lease);
    }

    ReleaseResult release(Env& env, const Lease& lease) override {
        if (get_del_) {  // [R1']
            const Reply get = env.command(NodeId{0}, {"GET", ctx_.key}, ctx_.command_timeout);
            if (!get.ok()) return {reply_outcome(get), {}, "GET: " + get.error};
            if (get.value.is_nil() || get.value.str != lease.token) return {Outcome::ok, {}, "not ours"};
        }
        const Reply del = env.command(NodeId{0}, {"DEL", ctx_.key}, ctx_.command_timeout);  // [R1]
        if (!del.ok()) return {reply_outcome(del), {}, "DEL: " + del.error};
        return {Outcome::ok, nodes_answering_one({del}), ""};
    }

    ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) override {
        if (expiry_ == "in-value") return extend_expiry_value(env, ctx_, lease, ttl, mode);
        const Instant start = env.now();
        long long left_ms = 0;
        if (mode == ExtendMode::add) {
            const Reply pttl = env.command(NodeId{0}, {"PTTL", ctx_.key}, ctx_.command_timeout);
            if (!pttl.ok()) return {reply_outcome(pttl), {}, {}, "PTTL: " + pttl.error};
            left_ms = std::max(0LL, pttl.value.integer);
        }
        const Reply r = env.command(NodeId{0}, {"PEXPIRE", ctx_.key, std::to_string(left_ms + whole_ms(ttl))},
                                    ctx_.command_timeout);  // [X1]
        if (!r.ok()) return {reply_outcome(r), {}, {}, "PEXPIRE: " + r.error};
        if (!r.value.is_int(1)) return {Outcome::fail, {}, {}, "no key"};
        return {Outcome::ok, start + ttl, {}, ""};
    }

private:
    AcquireResult acquire_expiry_in_value(Env& env) {
        const Instant start = env.now();
        const std::string expiry = std::to_string(env.wall_ms() + ttl_ms_);
        Reply set = env.command(NodeId{0}, {"SETNX", ctx_.key, expiry}, ctx_.command_timeout);
        if (!set.ok()) return AcquireResult{reply_outcome(set), {}, {}, "SETNX: " + set.error};
        if (set.value.is_int(1)) return AcquireResult::ok({expiry, {}, start + ms(ttl_ms_), {NodeId{0}}, 1});
        const Reply get = env.command(NodeId{0}, {"GET", ctx_.key}, ctx_.command_timeout);
        if (!get.ok() || get.value.is_nil()) return AcquireResult::fail("held");
        if (leading_integer(get.value.str) >= env.wall_ms()) return AcquireResult::fail("held, not expired");
        env.reach(Point::after_seen_expired);
        env.command(NodeId{0}, {"DEL", ctx_.key}, ctx_.command_timeout);  // [E1]
        set = env.command(NodeId{0}, {"SETNX", ctx_.key, expiry}, ctx_.command_timeout);  // [E2]
        if (!set.ok()) return AcquireResult{reply_outcome(set), {}, {}, "SETNX after DEL: " + set.error};
        if (!set.value.is_int(1)) return AcquireResult::fail("lost the race after DEL");
        return AcquireResult::ok({expiry, {}, start + ms(ttl_ms_), {NodeId{0}}, 1});
    }

    LockContext ctx_;
    long long ttl_ms_;
    std::string expiry_;
    bool fixed_value_;
    bool get_del_;
};

}  // namespace

AlgorithmInfo setnx_algorithm() {
    using T = ParamSpec::Type;
    return {
        "setnx",
        "SETNX then a separate PEXPIRE, release by DEL (seeds 001, 002: the naive lock)",
        1,
        {
            {"ttl_ms", T::integer, 500, "expiry set by PEXPIRE (or stored in the value)", {}, 1},
            {"expiry", T::choice, "expire",
             "expire: SETNX then PEXPIRE; none: never expires; in-value: the value is the "
             "holder's expiry time and waiters DEL then SETNX once it has passed (seed 002)",
             {"expire", "none", "in-value"}},
            {"value", T::choice, "random", "random token, or the same fixed value for everyone",
             {"random", "fixed"}},
            {"release", T::choice, "del", "del: plain DEL; get-del: GET, compare, then DEL",
             {"del", "get-del"}},
        },
        [](const Params& p, const LockContext& c) -> std::unique_ptr<Lock> {
            return std::make_unique<SetnxLock>(p, c);
        },
        [](const nlohmann::json& p) {
            const std::string expiry = p.value("expiry", "expire");
            return expiry == "expire"     ? std::vector<Point>{Point::between_setnx_and_expire}
                   : expiry == "in-value" ? std::vector<Point>{Point::after_seen_expired}
                                          : std::vector<Point>{};
        },
    };
}

}  // namespace lockbench
