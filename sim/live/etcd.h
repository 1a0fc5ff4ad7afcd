// etcd members that lockbench starts, owns and stops: start_service() with Service::etcd
// (sim/live/lock_service.h) gives a LockService whose servers are named etcd0, etcd1, ...
//
// Each member listens on 127.0.0.1 only, a client port and a peer port, both free ports, with
// its data, log and nothing else in <dir>/etcd<i>; there is no metrics or pprof listener (etcd
// 3.4 opens one only when asked). Peer URLs are named in every member's --initial-cluster, so
// they cannot differ per link: ServiceConfig.peer_proxies is refused, and a minority is stood
// in for by pausing or killing members. Go reads the kernel's clock directly, so the clock
// shim in ServiceConfig.env cannot move an etcd member's clock; it is passed on all the same.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace lockbench {

// Raft timings, scaled down from etcd's 100 ms / 1000 ms defaults. Three members and eight
// clients cycling the lock for 15 s on two busy cores (load 5): at 20 / 200 one run in three
// held three needless elections; at 50 / 500 no run held any (raft term 2, the first election
// only). 50 / 500 keeps etcd's advised ten heartbeats per election timeout. etcd's least
// lease TTL follows from them: ceil(1.5 × election timeout) = ceil(0.75 s) = 1 s, and a key
// on a 1 s lease goes between 1.2 and 1.4 s after its last keepalive (the expiry check runs
// every 500 ms, then the revoke goes through raft).
inline constexpr std::chrono::milliseconds etcd_heartbeat{50};
inline constexpr std::chrono::milliseconds etcd_election_timeout{500};

// The path of the etcd binary: $LOCKBENCH_ETCD if set, else `etcd` on PATH. Throws one clear
// line naming scripts/setup (Debian: etcd-server) if there is none.
std::string etcd_binary();

// Which of the members on `ports` says it leads (the highest term's claim): for members a run
// did not start itself (sim/live/server_pool.h).
std::optional<int> etcd_leader(const std::vector<int>& ports);

}  // namespace lockbench
