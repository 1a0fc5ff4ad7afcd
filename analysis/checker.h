// The checker: pure functions from a RunHistory to counts, rates, latencies and witnesses.
//
// Definitions (docs/results.md, "Reading the results", says the same for users):
// - mutual-exclusion violation: an enter of lease B lands in the store while lease A is
//   inside its section (A != B). A is inside from its enter to its first exit, or to its
//   client's next enter if that comes first (a client does one thing at a time). A section
//   whose end the store never saw (no write, no exit: its client died inside it, or its
//   abandon was lost too) is inside at its enter only: its enter landing inside another's
//   section counts, an enter after it never counts against it. So a definite enter into an
//   open section is always an overlap, and an interval that never closes swallows nothing.
//   Counted once per such pair. If the store's check rejected either section's write, the pair is
//   a fenced overlap instead: the store stopped the damage.
// - lost update: completed sections (accepted writes) minus the final counter.
// - stale write accepted: an accepted write of lease A after another lease entered later
//   than A did (unless both carry fences and the later one's is lower), or after the store
//   saw a fence from another lease that is higher than A's or equal to it (two leases with
//   one token is a failure of the fence: once the store has seen both, neither's write is
//   safe); rejected: the store's check refused the write (the fence, or with resource_check
//   "token" a token other than the registered one: then it may be the legitimate holder's
//   write, refused because a stale holder registered after it). The store logs every
//   lease's fence whatever it enforces, so a write that check-and-set let through is still
//   known stale here from the fences.
// - lost update share: lost updates over the writes the store accepted (Jepsen's share of
//   acknowledged updates lost), 0 when none was accepted.
// - foreign release: a release of lease A whose reply says it removed the key on node n,
//   although another lease acquired node n with an attempt that began after A acquired it
//   and ended before A's release began. That acquire's SET landed after A's, so A's own
//   key was already gone (deleted, expired or overwritten): what A removed was someone
//   else's lock.
// - unavailable: from an acquire attempt that began and failed while no client held the
//   lock until the next successful acquire. A client holds from its acquire ok to the end of its release, or to its last
//   event if it died. A free lock that nobody is asking for (a retry delay, a hand-over) is
//   not unavailable; a lock stuck on a dead holder is.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/history.h"
#include "analysis/run_summary.h"
#include "analysis/stats.h"
#include "analysis/validity.h"

namespace lockbench {

struct SectionRef {
    int lease = 0;
    int client = 0;
    std::optional<long long> fence;
    long long enter_seq = 0;
    std::optional<long long> exit_seq;
    std::optional<long long> write_seq;   // stale write: where the store took it
    long long enter_t_us = 0;
    // Mutual exclusion: the section ended (an exit the store logged) without a write the store
    // saw, accepted or refused: its holder abandoned it (a lost lease with `abandon`, a failed
    // write) and only read. A section whose end the store never saw is not marked.
    bool read_only = false;
};

struct Witness {
    enum class Kind { mutual_exclusion, foreign_release, stale_write };
    Kind kind = Kind::mutual_exclusion;
    SectionRef first;        // mutual exclusion: the section that was open; else the culprit
    SectionRef second;       // mutual exclusion: the section that entered into it
    long long t_ns = 0;      // foreign release: when the release began
    std::uint32_t nodes = 0; // foreign release: where it removed someone else's key
};

struct CheckResult {
    struct Ops {
        long long acquire_attempts = 0, acquired = 0, released = 0, sections_completed = 0;
    } ops;
    struct Safety {
        long long mutual_exclusion_violations = 0, fenced_overlaps = 0, lost_updates = 0,
                  stale_writes_accepted = 0, stale_writes_rejected = 0, holder_writes_rejected = 0,
                  foreign_releases = 0;
    } safety;
    struct Availability {
        double unavailable_ms = 0, longest_unavailable_ms = 0;
        std::vector<std::pair<long long, long long>> windows_ns;  // each window [from, to)
        // A run with a Sentinel failover: from when the lock was free again (the failover
        // over, and every lease granted before it at its key's end) to the next section.
        std::optional<double> failover_to_entry_ms;
    } availability;
    Percentiles acquire_ms, acquire_wait_ms, release_ms;
    std::vector<double> acquire_samples_ms;   // every acquire attempt's latency, sorted
    std::optional<ValidityFigures> validity;   // a run that probed the key's TTL (analysis/validity.h)
    double duration_s = 0;
    double sections_per_s = 0;
    std::vector<Witness> witnesses;     // at most max_witnesses of each kind; counts are complete
};

struct CheckOptions {
    size_t max_witnesses = 20;   // per kind
};

CheckResult check(const RunHistory& h, const CheckOptions& opts = {});

// This checker's identity: a digest of the sources that make a run's figures (CMakeLists.txt),
// so that figures checked by another build are known as such.
const char* checker_id();

// "mutual_exclusion", "foreign_release", "stale_write": the witness kinds as the summary names them.
const char* witness_kind_name(Witness::Kind k);

// The summary's figures of one run (analysis/run_summary.h): the metric table's figures
// (analysis/metrics.h), the unavailable windows, latencies and witnesses.
RunFigures run_figures(const CheckResult& r, const RunHistory& h);
// The same as summary.json holds them: ops, safety, availability, latency_ms, witnesses, ...
nlohmann::json to_json(const CheckResult& r, const RunHistory& h);

}  // namespace lockbench
