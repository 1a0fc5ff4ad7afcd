// A process's TCP sockets, read from /proc. Which ports it listens on: so that a server that
// answers on its port is known to be ours, not another run's that took the port first (ours
// then exits with "address already in use", but a probe in the meantime reaches the stranger).
// Which connections go straight between two processes: so that a cut peer link is cut.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace lockbench {

struct TcpListener {
    std::string address;  // as /proc/net/tcp{,6} writes it, in hex ("0100007F" is 127.0.0.1)
    int port = 0;
    bool ipv6 = false;
    bool loopback() const;
    std::string text() const;  // "127.0.0.1:2379", or "ipv6 <hex>:<port>"
};

// The listening TCP sockets (IPv4 and IPv6) that process `pid` holds open; none if it is gone.
std::vector<TcpListener> tcp_listeners(pid_t pid);

// Whether process `pid` itself listens on TCP `port`.
bool listens_on(pid_t pid, int port);

// Shuts down (both ways, as shutdown(2) does: each end reads its end) every established TCP
// connection between processes `a` and `b` that goes straight from one to the other, not
// through a proxy of lockbench's; returns how many. A server may connect to a peer at an
// address the peer announced rather than the one its configuration names (a ZooKeeper server
// calls back a peer with a lower id at the election address that peer sent it, its real port),
// so a peer link cut at the proxies leaves those connections up. The sockets are reached with
// pidfd_getfd(2) (root, Linux 5.6); throws std::runtime_error naming the process when one that
// runs cannot be reached.
int end_direct_connections(pid_t a, pid_t b);

}  // namespace lockbench
