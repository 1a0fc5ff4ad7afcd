// The library's word against the servers': for runs that probe the key's TTL right after each
// acquire (an external run with probe_key_ttl), how the validity a library reports compares
// with what really remains of its lock.
//
//   acquire ok {validity_ms: V, key_ttl_ms: [t0, t1, ...]}   (one entry per node, null: not probed)
//        majority TTL M = the quorum-th longest of the t_i > 0 (quorum = nodes / 2 + 1), else 0
//        live: M > 0 (the lock still stands on a majority)
//
// - understated_ms: the largest M − V over live acquires (0 if none): how much of a lock that
//   stands the library says is gone. Conservative, but a library that hands out a lock with
//   V ≤ 0 tells a careful caller to drop a lock it holds.
// - spent_live: live acquires with V ≤ 0: locks handed out as already expired while they stood.
// - gone: acquires handed out although the lock no longer stood on a majority (M = 0): the
//   library's answer came after its keys had expired or been taken.
// - overstated_ms: the largest V − M over every probed acquire (0 if none): validity claimed
//   beyond what the servers keep, the unsafe direction.
// - probes: acquires that carried a validity and at least one node's answer to the probe.
// M is read a moment before V is taken (the probe's round trips, well under a millisecond on
// loopback), so M − V is overstated by that moment at most.
#pragma once

#include <optional>

#include "analysis/history.h"

namespace lockbench {

struct ValidityFigures {
    long long probes = 0;
    long long spent_live = 0;
    long long gone = 0;
    double understated_ms = 0;
    double overstated_ms = 0;
};

// What the servers kept of a lock on a majority of `ttl_ms.size()` nodes: see above.
long long majority_ttl_ms(const std::vector<std::optional<long long>>& ttl_ms);

// When the key an acquire took ends, by what the store said right after it: the answer plus
// the majority TTL when the lock stood on a majority; none when it found no expiry (-1) or no
// node answered (a znode, an etcd lease, an advisory lock: no PTTL to read). An acquire that
// was not probed, or whose key the probe did not find by its token (-2: gone, or stored in a
// form the probe does not read, as warlock's): the answer plus `ttl_ms` (the run's TTL).
std::optional<long long> key_end_ns(const ClientEvent& acquired, std::optional<long long> ttl_ms);

// nullopt when no acquire carried a probe and a validity: the run did not probe.
std::optional<ValidityFigures> check_validity(const RunHistory& h);

}  // namespace lockbench
