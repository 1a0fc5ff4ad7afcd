// Which TCP ports a process listens on, read from /proc: so that a server that answers on its
// port is known to be ours, not another run's that took the port first (ours then exits with
// "address already in use", but a probe in the meantime reaches the stranger).
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

}  // namespace lockbench
