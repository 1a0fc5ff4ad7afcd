// Small helpers shared by the algorithms, written against the seam only.
#include <charconv>
#include <string>

#include "lockimpl/env.h"
#include "lockimpl/lock.h"

namespace lockbench {

const char* const kCompareAndDelete =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "  return redis.call('del', KEYS[1]) "
    "end "
    "return 0";

const char* const kExtendIfOurs =
    "local token = redis.call('get', KEYS[1]) "
    "if not token or token ~= ARGV[1] then "
    "  return 0 "
    "end "
    "local expiration = redis.call('pttl', KEYS[1]) "
    "if not expiration then "
    "  expiration = 0 "
    "end "
    "if expiration < 0 then "
    "  return 0 "
    "end "
    "local newttl = ARGV[2] "
    "if ARGV[3] == '0' then "
    "  newttl = ARGV[2] + expiration "
    "end "
    "redis.call('pexpire', KEYS[1], newttl) "
    "return 1";

Command extend_if_ours(const std::string& key, const std::string& token, Duration ttl, ExtendMode mode) {
    return {"EVAL", kExtendIfOurs, "1", key, token, std::to_string(whole_ms(ttl)),
            mode == ExtendMode::replace ? "1" : "0"};
}

std::optional<bool> token_held(Env& env, const std::string& key, const Lease& lease, const std::vector<NodeId>& nodes,
                               int needed, Duration timeout) {
    if (lease.token.empty()) return std::nullopt;
    int held = 0, answered = 0;
    for (const NodeId n : nodes) {
        Reply r = env.command(n, {"GET", key}, timeout);
        if (!r.ok() && r.error.starts_with("WRONGTYPE")) r = env.command(n, {"HEXISTS", key, lease.token}, timeout);
        if (!r.ok()) continue;
        ++answered;
        if ((r.value.type == Value::Type::string && r.value.str == lease.token) || r.value.is_int(1)) ++held;
    }
    if (held >= needed) return true;
    const int unanswered = static_cast<int>(nodes.size()) - answered;
    if (held + unanswered < needed) return false;
    return std::nullopt;
}

ExtendResult extend_expiry_value(Env& env, const LockContext& ctx, const Lease& lease, Duration ttl,
                                 ExtendMode mode) {
    const Instant start = env.now();
    // add: our own stored expiry plus ttl; replace: ttl from now, by this client's clock.
    const long long base_ms = mode == ExtendMode::add ? leading_integer(lease.token) : env.wall_ms();
    const std::string expiry = std::to_string(base_ms + whole_ms(ttl));
    const Reply r = env.command(NodeId{0}, {"GETSET", ctx.key, expiry}, ctx.command_timeout);
    if (!r.ok()) return {reply_outcome(r), {}, {}, "GETSET: " + r.error};
    if (r.value.is_nil() || r.value.str != lease.token)
        return {Outcome::fail, {}, {}, "not ours: GETSET replaced another value"};
    const Instant until = mode == ExtendMode::add ? start + (ms(base_ms) - ms(env.wall_ms())) + ttl : start + ttl;
    return {Outcome::ok, until, expiry, ""};
}

const char* point_name(Point p) {
    switch (p) {
        case Point::before_acquire: return "before_acquire";
        case Point::during_acquire: return "during_acquire";
        case Point::between_setnx_and_expire: return "between_setnx_and_expire";
        case Point::after_seen_expired: return "after_seen_expired";
        case Point::after_acquire: return "after_acquire";
        case Point::before_write: return "before_write";
        case Point::before_release: return "before_release";
        case Point::in_line: return "in_line";
        case Point::entered: return "entered";
    }
    return "?";
}

const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::ok: return "ok";
        case Outcome::fail: return "fail";
        case Outcome::info: return "info";
    }
    return "?";
}

std::string random_hex(Env& env, int bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    std::uint64_t bits = 0;
    for (int i = 0; i < bytes; ++i) {
        if (i % 8 == 0) bits = env.random();
        unsigned byte = bits & 0xff;
        bits >>= 8;
        out += digits[byte >> 4];
        out += digits[byte & 0xf];
    }
    return out;
}

std::uint64_t random_below(Env& env, std::uint64_t bound) {
    // Rejection sampling keeps it exactly uniform (no modulo bias).
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t r;
    do r = env.random();
    while (r >= limit);
    return r % bound;
}

Duration ms(long long n) { return std::chrono::milliseconds(n); }

long long whole_ms(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

std::vector<NodeId> nodes_answering_one(const std::vector<Reply>& replies) {
    std::vector<NodeId> out;
    for (const auto& r : replies)
        if (r.ok() && r.value.is_int(1)) out.push_back(r.node);
    return out;
}

long long leading_integer(const std::string& s) {
    long long v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

Outcome reply_outcome(const Reply& r) {
    if (r.ok()) return Outcome::ok;
    return r.status == Reply::Status::unknown ? Outcome::info : Outcome::fail;
}

}  // namespace lockbench
