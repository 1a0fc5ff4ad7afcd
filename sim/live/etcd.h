// etcd members that lockbench starts, owns and stops: start_etcd() (sim/live/lock_service.h)
// gives a LockService whose servers are named etcd0, etcd1, ...
//
// Each member listens on 127.0.0.1 only, a client port and a peer port, both free ports, with
// its data, log and nothing else in <dir>/etcd<i>; there is no metrics or pprof listener (etcd
// 3.4 opens one only when asked). Peer URLs are named in every member's --initial-cluster, so
// they cannot differ per link: ServiceConfig.peer_proxies is refused, and a minority is stood
// in for by pausing or killing members. Go reads the kernel's clock directly, so the clock
// shim in ServiceConfig.env cannot move an etcd member's clock; it is passed on all the same.
#pragma once

#include <chrono>
#include <string>

namespace lockbench {

// Raft timings, scaled down from etcd's 100 ms / 1000 ms defaults. 20 / 200 brings one member
// up, but three members and eight clients on two cores miss heartbeats by more than 200 ms and
// hold needless elections; 50 / 500 keeps ten heartbeats per election timeout, as etcd's own
// tuning guide advises. etcd's least lease TTL follows from them:
// ceil(1.5 × election timeout) = ceil(0.75 s) = 1 s, the least TTL a lease gets.
inline constexpr std::chrono::milliseconds etcd_heartbeat{50};
inline constexpr std::chrono::milliseconds etcd_election_timeout{500};

// The path of the etcd binary: $LOCKBENCH_ETCD if set, else `etcd` on PATH. Throws one clear
// line naming scripts/setup (Debian: etcd-server) if there is none.
std::string etcd_binary();

}  // namespace lockbench
