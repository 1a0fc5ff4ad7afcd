// Redlock, after the Redis documentation's distributed-lock page ("The Redlock algorithm")
// and seed 004. [S1]..[S5] are its steps:
//
//   [S1] get the current time (monotonic, in milliseconds)
//   [S2] try to SET key token NX PX ttl on all N instances, each with a short timeout
//        (sent to all at once, not one after another)
//   [S3] elapsed = now - start; the lock is acquired only if a majority (N/2 + 1) of
//        instances said OK and elapsed < validity
//   [S4] validity = ttl - elapsed - drift,  drift = ttl * drift_factor + drift_ms
//   [S5] if not acquired, unlock on ALL instances (a SET that timed out may have landed)
//   retry after a random delay: that is the worker's retry policy (workload.retry_ms).
// Extend ("Extending the lock" in the same page): [X1] on every instance, the script that
// extends the key's TTL only if it still holds our token (redis-py's, so add and replace
// both work); [X2] extended only on a majority, with validity = T - elapsed - drift as in
// [S3]/[S4]. A failed extend leaves the nodes that did extend as they are, as node-redlock does.
// Release runs the compare-and-delete script on every instance.
#include <algorithm>
#include <string>

#include "lockimpl/registry.h"

namespace lockbench {
namespace {

class Redlock final : public Lock {
public:
    Redlock(const Params& p, LockContext ctx)
        : ctx_(std::move(ctx)), ttl_(ms(p.integer("ttl_ms"))), node_timeout_(ms(p.integer("node_timeout_ms"))),
          drift_factor_(p.number("drift_factor")), drift_ms_(p.number("drift_ms")),
          check_validity_(p.flag("check_validity")) {}

    AcquireResult try_acquire(Env& env) override {
        const std::string token = random_hex(env, 16);
        const Instant start = env.now();                                             // [S1]
        const std::vector<Reply> replies = env.fan_out(
            {"SET", ctx_.key, token, "NX", "PX", std::to_string(ttl_ / ms(1))}, node_timeout_,
            Point::during_acquire);                                                  // [S2]
        const std::vector<NodeId> locked = nodes_answering_ok(replies);
        const Duration validity = ttl_ - (env.now() - start) - drift();              // [S3] [S4]
        const bool in_time = validity > Duration::zero() || !check_validity_;
        if (static_cast<int>(locked.size()) >= quorum(env) && in_time)
            return AcquireResult::ok({token, {}, start + validity, locked, 1});
        unlock_everywhere(env, token);                                               // [S5]
        const std::string why = std::to_string(locked.size()) + " of " + std::to_string(env.node_count()) +
                                " nodes" + (in_time ? "" : ", validity used up");
        // Unanswered SETs may have landed: with them a majority may have existed after all.
        const bool maybe = in_time && static_cast<int>(locked.size() + unknown(replies)) >= quorum(env);
        return maybe ? AcquireResult::info(why + ", others unknown") : AcquireResult::fail(why);
    }

    ReleaseResult release(Env& env, const Lease& lease) override {
        const std::vector<Reply> replies = unlock_everywhere(env, lease.token);
        const Outcome outcome = unknown(replies) ? Outcome::info : Outcome::ok;
        return {outcome, nodes_answering_one(replies), ""};
    }

    ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) override {
        const Instant start = env.now();
        const std::vector<Reply> replies = env.fan_out(extend_if_ours(ctx_.key, lease.token, ttl, mode),
                                                       node_timeout_);                 // [X1]
        const size_t extended = nodes_answering_one(replies).size();
        const Duration validity = ttl - (env.now() - start) - drift();                  // [X2]
        const bool in_time = validity > Duration::zero() || !check_validity_;
        const std::string why = std::to_string(extended) + " of " + std::to_string(env.node_count()) + " nodes" +
                                (in_time ? "" : ", validity used up");
        if (static_cast<int>(extended) >= quorum(env) && in_time) return {Outcome::ok, start + validity, {}, ""};
        // As in acquire: a majority that arrived with its validity used up is a failure, not a maybe.
        const bool maybe = in_time && static_cast<int>(extended + unknown(replies)) >= quorum(env);
        return {maybe ? Outcome::info : Outcome::fail, {}, {}, why};
    }

    // A majority of the nodes still holding our token: what the lock itself calls holding it.
    std::optional<bool> holds(Env& env, const Lease& lease) override {
        std::vector<NodeId> every;
        for (int i = 0; i < env.node_count(); ++i) every.push_back(NodeId{i});
        return token_held(env, ctx_.key, lease, every, quorum(env), node_timeout_);
    }

private:
    static int quorum(const Env& env) { return env.node_count() / 2 + 1; }

    static size_t unknown(const std::vector<Reply>& replies) {
        return static_cast<size_t>(std::ranges::count(replies, Reply::Status::unknown, &Reply::status));
    }

    Duration drift() const {
        const double drift_ms = static_cast<double>(ttl_ / ms(1)) * drift_factor_ + drift_ms_;
        return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(drift_ms));
    }

    static std::vector<NodeId> nodes_answering_ok(const std::vector<Reply>& replies) {
        std::vector<NodeId> out;
        for (const auto& r : replies)
            if (r.ok() && r.value.is_ok()) out.push_back(r.node);
        return out;
    }

    std::vector<Reply> unlock_everywhere(Env& env, const std::string& token) {
        return env.fan_out({"EVAL", kCompareAndDelete, "1", ctx_.key, token}, node_timeout_);
    }

    LockContext ctx_;
    Duration ttl_;
    Duration node_timeout_;
    double drift_factor_;
    double drift_ms_;
    bool check_validity_;
};

}  // namespace

AlgorithmInfo redlock_algorithm() {
    using T = ParamSpec::Type;
    return {
        "redlock",
        "Redlock over N independent masters: majority, validity = ttl - elapsed - drift (seed 004)",
        5,
        {
            {"ttl_ms", T::integer, 500, "the key's time to live on each node", {}, 1},
            {"node_timeout_ms", T::integer, 50, "how long to wait for each node's reply", {}, 1},
            {"drift_factor", T::number, 0.01, "clock drift allowance, a fraction of the TTL", {}, 0, 1},
            {"drift_ms", T::number, 2.0, "clock drift allowance added to the fraction", {}, 0},
            {"check_validity", T::boolean, true,
             "refuse a majority that arrives after the validity ran out (step 3 of Redlock on redis.io)"},
        },
        [](const Params& p, const LockContext& c) -> std::unique_ptr<Lock> {
            return std::make_unique<Redlock>(p, c);
        },
        [](const nlohmann::json&) { return std::vector<Point>{Point::during_acquire}; },
    };
}

}  // namespace lockbench
