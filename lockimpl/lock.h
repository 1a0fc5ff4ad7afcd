// What every lock algorithm offers the worker: one acquire attempt, one extend, one release.
// Retry, back-off and renewal policy stay outside the algorithm: the worker drives them
// from the scenario (style rule 4), so the same attempt runs live and simulated.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockimpl/env.h"
#include "lockimpl/params.h"

namespace lockbench {

// Jepsen's three endings: ok (it happened), fail (it did not), info (it may have).
enum class Outcome { ok, fail, info };
const char* outcome_name(Outcome o);

// What a client holds after a successful acquire.
struct Lease {
    std::string token;                        // the value the algorithm stored at the key
    std::optional<long long> fencing_token;   // monotonic per lock, where the algorithm has one
    std::optional<Instant> valid_until;       // by the client's monotonic clock, if the
                                              // algorithm computes a validity
    std::vector<NodeId> nodes;                // nodes on which the lock was set
    int depth = 1;                            // re-entry depth (reentrant lock)
};

struct AcquireResult {
    Outcome outcome = Outcome::fail;
    std::optional<Lease> lease;               // set when outcome == ok
    std::optional<Duration> retry_within;     // the algorithm's hint: the lock frees by then
    std::string detail;                       // why it failed, for the history
    // The probe of an external run with probe_key_ttl: per node of the run, the key's PTTL
    // read right after the library's answer (nullopt: not probed, or no answer). Empty
    // without the probe.
    std::vector<std::optional<long long>> key_ttl_ms;

    static AcquireResult ok(Lease l) { return {Outcome::ok, std::move(l), std::nullopt, ""}; }
    static AcquireResult fail(std::string why, std::optional<Duration> retry = std::nullopt) {
        return {Outcome::fail, std::nullopt, retry, std::move(why)};
    }
    static AcquireResult info(std::string why) {
        return {Outcome::info, std::nullopt, std::nullopt, std::move(why)};
    }
};

struct ReleaseResult {
    Outcome outcome = Outcome::fail;
    std::vector<NodeId> removed_on;   // nodes whose reply says a key was removed by this call
    std::string detail;
    // False when the answer did not say where it removed the key (an adapter's release answer
    // without `removed_on`): recorded without "nodes", unlike a release that removed nothing
    // (an ok release only: a failed one is recorded without "nodes" either way).
    bool removed_known = true;
};

// How an extend sets the new expiry: redis-py's extend(additional_time, replace_ttl).
enum class ExtendMode {
    add,      // the time left plus ttl (redis-py's default)
    replace,  // exactly ttl from now (replace_ttl=True, Redisson's watchdog, node-redlock)
};

struct ExtendResult {
    Outcome outcome = Outcome::fail;          // fail: the lock is not ours (any more)
    std::optional<Instant> valid_until;       // the new validity, if the algorithm computes one
    std::optional<std::string> token;         // the value now at the key, if the extend changed it
    std::string detail;
    bool final = false;                       // no later extend can succeed (an adapter that died)
};

// Who the lock is for: the key it guards and the client that holds the object.
struct LockContext {
    std::string key;
    int client = 0;
    Duration command_timeout = std::chrono::milliseconds(200);  // per single-node command
};

// An announcement a lock made on its own, as the worker takes it (which may be a while after
// the lock heard it: when the worker or its renewal next looks).
struct LockEvent {
    std::string detail;        // the announcement's text (an adapter's line, excerpted)
    bool lost = true;          // the lease is gone; else an announcement of another kind
    long long heard_ns = 0;    // when it was heard (CLOCK_MONOTONIC); 0: not known, now
};

class Lock {
public:
    virtual ~Lock() = default;
    virtual AcquireResult try_acquire(Env& env) = 0;
    virtual ReleaseResult release(Env& env, const Lease& lease) = 0;
    // One attempt to extend a held lease by `ttl`. It may run on a background task's Env
    // while the worker works, so it must not change what try_acquire and release use.
    virtual ExtendResult extend(Env& env, const Lease& lease, Duration ttl, ExtendMode mode) = 0;
    // What the lock has announced on its own since the last call: its lease is lost (an
    // external library's onLockLost), or an announcement of another kind, kept but not a
    // loss. Most locks announce nothing.
    virtual std::vector<LockEvent> take_events() { return {}; }
    // How many nested acquires (and releases) the worker makes around one critical section;
    // only a reentrant lock asks for more than one.
    virtual int nesting() const { return 1; }    // The lock server's own word, now: whether `lease` still holds the lock there. Asked by
    // the worker only when the protected store has refused the lease's write, to tell the
    // holder's write refused (the fence or token ran against the grants) from a stale one.
    // nullopt: this lock cannot be asked (no token, not a Redis lock), or no answer came.
    virtual std::optional<bool> holds(Env&, const Lease&) { return std::nullopt; }
};

// Shared by several algorithms.

// The documented release script: delete the key only if it still holds our token.
// KEYS[1] = key, ARGV[1] = token; returns 1 if it deleted, else 0.
extern const char* const kCompareAndDelete;

// token-lua's fenced acquire: SET key token NX PX ttl, then INCR key:fence, in one script.
// KEYS[1] = key, KEYS[2] = fence key, ARGV[1] = token, ARGV[2] = ttl (ms); returns the new
// fence, or nil if the key was held.
extern const char* const kAcquireFenced;

// redis-py's extend script (Lock.LUA_EXTEND_SCRIPT): only if the key still holds our token
// and has a TTL, PEXPIRE it to ARGV[2] (replace, ARGV[3] == "1") or PTTL + ARGV[2] (add).
// KEYS[1] = key, ARGV[1] = token; returns 1 if it extended, 0 if the key is not ours or
// has no TTL.
extern const char* const kExtendIfOurs;
Command extend_if_ours(const std::string& key, const std::string& token, Duration ttl, ExtendMode mode);

// The extend of the locks that store their expiry time as the value (getset, setnx
// "in-value"): GETSET key (new expiry). No check before the swap, as the seeds would write
// it: it overwrites whatever lock is there, and only afterwards sees whether it was ours.
ExtendResult extend_expiry_value(Env& env, const LockContext& ctx, const Lease& lease, Duration ttl,
                                 ExtendMode mode);

Duration ms(long long n);
// Whether `lease.token` is what `key` holds (a string's value, or a field of a hash, as a
// reentrant lock keeps it) on at least `needed` of `nodes`, each asked once: true if on that
// many, false if that many can no longer be reached even counting the unanswered ones,
// nullopt otherwise, and for a lease without a token.
std::optional<bool> token_held(Env& env, const std::string& key, const Lease& lease, const std::vector<NodeId>& nodes,
                               int needed, Duration timeout);
// Removed-on list of the nodes whose reply is the integer 1 (DEL / the release scripts).
std::vector<NodeId> nodes_answering_one(const std::vector<Reply>& replies);
// The integer a string starts with, 0 if none: Ruby's String#to_i, as redis-objects reads.
long long leading_integer(const std::string& s);
// Tells ok / fail / info apart for a single-node reply that must be an integer.
Outcome reply_outcome(const Reply& r);
long long whole_ms(Duration d);

}  // namespace lockbench
