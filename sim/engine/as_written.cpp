#include "sim/engine/as_written.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "analysis/validity.h"

namespace lockbench {
namespace {

using Json = nlohmann::json;

std::string figure(double v) { return std::to_string(std::llround(v)); }

// How late past its bound the nemesis may end a fault before the fault is no longer the one
// written: a tenth of the bound, at least 50 ms (a timer's ordinary lateness on a loaded
// machine). A case leaves its story that margin (held-replies: replies held at most 4.6 s,
// 5.06 s with that margin, of a 5.5 s timeout). Later than that, a stalled machine ran the fault, not the case.
bool too_late(long long late_ns, long long bound_ms) {
    return late_ns > std::max(50LL, bound_ms / 10) * 1'000'000;
}

// Another client was trying to acquire between from_ns and to_ns: an attempt of its was in
// flight then (invoked before to_ns, not answered before from_ns). An attempt invoked before
// the window and still waiting inside the lock (etcd's Lock, a queue) is trying too.
bool tried_between(const RunHistory& h, int held, long long from_ns, long long to_ns) {
    std::set<int> in_flight;  // clients with an acquire invoked by to_ns and not yet answered
    for (const ClientEvent& e : h.events) {
        if (e.client == held || e.op != OpKind::acquire) continue;
        if (e.type == EventType::invoke) {
            if (e.t_ns <= to_ns) in_flight.insert(e.client);
        } else if (in_flight.erase(e.client) && e.t_ns >= from_ns) {
            return true;  // answered inside the window (or after it)
        }
    }
    return !in_flight.empty();  // never answered: it was waiting throughout
}

// The lease a story holds live: the held client's last acquire before the wait, from its
// invoke (the key was set no earlier, so it lives at least until then + TTL).
std::optional<long long> lease_start_ns(const RunHistory& h, int held, long long before_ns) {
    std::optional<long long> at;
    for (const ClientEvent& e : h.events)
        if (e.client == held && e.op == OpKind::acquire && e.type == EventType::invoke && e.t_ns <= before_ns) at = e.t_ns;
    return at;
}

// The first section another client began after `after_ns` (its read's invoke: the earliest
// its enter can have landed in the store).
std::optional<long long> other_entered_ns(const RunHistory& h, int held, long long after_ns) {
    for (const ClientEvent& e : h.events)
        if (e.client != held && e.op == OpKind::read && e.type == EventType::invoke && e.t_ns >= after_ns) return e.t_ns;
    return std::nullopt;
}

// The held client's acquire whose answer the wait held: its last one invoked by the time the
// wait began (a link fault's wait begins after its duration, its held acquire still in
// flight: no later one can have begun), with how it was answered (nothing: never).
struct HeldAcquire {
    long long asked_ns = 0;
    std::optional<EventType> answer;
};
std::optional<HeldAcquire> held_acquire(const RunHistory& h, int held, long long from_ns) {
    std::optional<HeldAcquire> at;
    for (const ClientEvent& e : h.events) {
        if (e.client != held || e.op != OpKind::acquire) continue;
        if (e.type == EventType::invoke) {
            if (e.t_ns > from_ns) break;
            at = HeldAcquire{e.t_ns, std::nullopt};
        } else if (at && !at->answer) {
            at->answer = e.type;
        }
    }
    return at;
}

// The first acquire of another client granted at or after `after_ns`: {client, when}.
std::optional<std::pair<int, long long>> other_granted(const RunHistory& h, int held, long long after_ns) {
    for (const ClientEvent& e : h.events)
        if (e.client != held && e.op == OpKind::acquire && e.type == EventType::ok && e.t_ns >= after_ns) return std::pair{e.client, e.t_ns};
    return std::nullopt;
}

std::optional<long long> ttl_ms_of(const RunRecord& r) {
    for (const char* key : {"ttl_ms", "lease_ms"})
        if (r.params.is_object() && r.params.contains(key) && r.params.at(key).is_number()) return r.params.at(key).get<long long>();
    return std::nullopt;
}

// The waits of one fault "until" (FaultSchedule::report's "waits"): until another enters,
// whose bound is an outcome when others tried meanwhile, or until a server leads, whose bound
// never is.
void check_waits(const RunRecord& r, const RunHistory& h, const Json& fault, std::vector<std::string>& out) {
    const std::string label = fault.value("label", std::string("a fault"));
    for (const Json& w : fault.value("waits", Json::array())) {
        const int held = w.value("client", 0);
        const long long from_ns = w.value("from_ns", 0LL), to_ns = w.value("to_ns", 0LL);
        const long long max_ms = fault.value("max_ms", 0LL);
        if (too_late(w.value("late_ns", 0LL), max_ms)) {
            out.push_back(label + ": it lasted " + figure(w.value("late_ns", 0LL) / 1e6) + " ms past its " +
                          std::to_string(max_ms) + " ms at most (the nemesis ran late: a stalled machine)");
            continue;
        }
        if (w.value("bound", false) && fault.value("until", "") == "leader") {
            out.push_back(label + ": no server led within " + std::to_string(max_ms) + " ms");
            continue;
        }
        // The held request took the lock, so its key outlives the TTL from the asking: nobody
        // else can be granted before then. One who was, while the held acquire itself was not
        // granted, shows that the answer held was not the taking one's (python-redis-lock reads
        // its key first, and writes once that is answered, when another holds). A held acquire
        // granted all the same is the late grant the story is about, and a lock that let the
        // other in meanwhile does not exclude: an outcome (pg-advisory+pgbouncer).
        if (fault.value("taken_first", false))
            if (const auto ttl_ms = ttl_ms_of(r); ttl_ms)
                if (const auto asked = held_acquire(h, held, from_ns); asked && asked->answer != EventType::ok)
                    if (const auto other = other_granted(h, held, asked->asked_ns);
                        other && other->second - asked->asked_ns < *ttl_ms * 1'000'000)
                        out.push_back(label + ": client " + std::to_string(other->first) + " was granted the lock " +
                                      figure((other->second - asked->asked_ns) / 1e6) + " ms after client " +
                                      std::to_string(held) + " asked for it, within its TTL of " + std::to_string(*ttl_ms) +
                                      " ms, and client " + std::to_string(held) +
                                      " was not: the request whose answer was held did not take the lock");
        if (w.value("bound", false)) {
            if (!tried_between(h, held, from_ns, to_ns))
                out.push_back(label + ": its bound let client " + std::to_string(held) +
                              " go with no other client trying to acquire meanwhile");
            continue;
        }
        if (!fault.value("lease_live", false)) continue;
        const auto ttl_ms = ttl_ms_of(r);
        const auto lease = lease_start_ns(h, held, from_ns);
        if (!ttl_ms || !lease) continue;
        const auto entered = other_entered_ns(h, held, *lease);
        if (entered && *entered - *lease > *ttl_ms * 1'000'000)
            out.push_back(label + ": another client entered " + figure((*entered - *lease) / 1e6) + " ms after client " +
                          std::to_string(held) + " asked for its lease of " + std::to_string(*ttl_ms) +
                          " ms: the lease the story needs live had ended");
    }
}

// The end of the lease a kept holder holds: its last acquire before the keep, at its key's end
// (key_end_ns: the answer plus the majority's PTTL read right after it, else plus the run's
// TTL). None where the store has no expiry to read: a znode, an etcd lease or an advisory
// lock, whose holder's session or keepalives (not its lease's clock) keep it while it is kept.
// A lock that renews by itself is taken at its first lease: a keep past it counts as not as
// written, a repetition run again rather than a verdict, as a bound below the TTL did before.
std::optional<long long> holder_lease_end_ns(const RunRecord& r, const RunHistory& h, int holder, long long before_ns) {
    const ClientEvent* acquired = nullptr;
    for (const ClientEvent& e : h.events)
        if (e.client == holder && e.op == OpKind::acquire && e.type == EventType::ok && e.t_ns <= before_ns) acquired = &e;
    return acquired ? key_end_ns(*acquired, ttl_ms_of(r)) : std::nullopt;
}

// The holders a fault with keep_holder_ms kept (FaultSchedule::report's "kept"): its bound
// or the run's end let the holder go before the kept-for client's acquire had answered, the
// holder was gone by then, nobody was inside to keep, or the holder's lease had ended before
// the kept-for client answered: its answer met no lock anyone was holding. Kept after a
// fault's end (no "until"): its bound or the run's end came first, or the holder was gone;
// the story there is two inside together in the store, which the checker counts, not a lease
// live; a watch that kept nobody is as written only when every acquire in flight at the
// fault's end answered with none entering ("none entered").
void check_kept(const RunRecord& r, const RunHistory& h, const Json& fault, std::vector<std::string>& out) {
    const std::string label = fault.value("label", std::string("a fault"));
    for (const Json& k : fault.value("kept", Json::array())) {
        const std::string ended = k.value("ended", std::string());
        const std::string kept = k.contains("holder") ? "client " + std::to_string(k.value("holder", 0)) : "nobody";
        if (too_late(k.value("late_ns", 0LL), k.value("keep_ms", 0LL))) {
            out.push_back(label + ": " + kept + " was kept " + figure(k.value("late_ns", 0LL) / 1e6) + " ms past its " +
                          std::to_string(k.value("keep_ms", 0LL)) + " ms at most (the nemesis ran late: a stalled machine)");
            continue;
        }
        if (!k.contains("holder")) {  // kept after the fault's end: nobody was
            if (ended == "none entered") continue;  // every acquire answered, none with the lock
            out.push_back(label + ": nobody was kept, and not every acquire in flight at its end had answered, " +
                          (ended == "bound" ? "within " + std::to_string(k.value("keep_ms", 0LL)) + " ms of its end"
                                            : std::string("by the run's end")));
            continue;
        }
        const bool for_others = k.contains("for");
        const std::string awaited = for_others ? std::string("another client had entered or every other acquire had answered")
                                               : "client " + std::to_string(k.value("client", 0)) +
                                                     " had entered, failed or queued behind it";
        const std::string client = std::to_string(k.value("client", 0));
        if (ended == "nobody inside")
            out.push_back(label + ": another client had entered, but nobody was inside its section when client " +
                          client + "'s wait ended");
        if (ended == "holder gone") out.push_back(label + ": " + kept + ", kept, was gone before " + awaited);
        if (for_others && (ended == "entered" || ended == "failed")) continue;
        if (ended == "entered" || ended == "failed" || ended == "in line") {
            const int holder = k.value("holder", 0);
            const auto lease_end = holder_lease_end_ns(r, h, holder, k.value("from_ns", 0LL));
            if (lease_end && k.value("to_ns", 0LL) > *lease_end)
                out.push_back(label + ": client " + client + " answered (" + ended + ") " +
                              figure((k.value("to_ns", 0LL) - *lease_end) / 1e6) + " ms after client " +
                              std::to_string(holder) + "'s lease had ended: its late answer met no lock held");
            continue;
        }
        if (ended != "bound" && ended != "run ended") continue;
        out.push_back(label + ": " + kept + " was let go " +
                      (ended == "bound" ? "after " + std::to_string(k.value("keep_ms", 0LL)) + " ms" : "by the run's end") +
                      " before " + awaited);
    }
}

}  // namespace

bool is_precondition(const Expectation& x) { return x.metric == "faults_injected"; }

std::vector<std::string> not_as_written(const RunRecord& r, const RunHistory& h, const std::vector<ClientFailure>& failed) {
    std::vector<std::string> out;
    for (const Expectation& x : r.expect)
        if (is_precondition(x) && !x.holds(static_cast<double>(r.faults_injected)))
            out.push_back("its faults did not all fire: " + x.text() + " (got " + std::to_string(r.faults_injected) + ")");
    out.insert(out.end(), r.unmet.begin(), r.unmet.end());
    for (const Json& fault : r.faults) {
        check_waits(r, h, fault, out);
        check_kept(r, h, fault, out);
    }
    for (const ClientFailure& f : failed) {
        const bool started = std::ranges::any_of(h.events, [&](const ClientEvent& e) { return e.client == f.client; });
        if (!started) out.push_back("client " + std::to_string(f.client) + "'s adapter did not start: " + f.error);
    }
    return out;
}

}  // namespace lockbench
