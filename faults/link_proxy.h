// The link proxy: a fault-injecting TCP proxy on loopback, one listening port per link.
//
// A link is one path lockbench wants to be able to cut: one client to one node, a client to
// the protected store, a master to its replica. The client connects to the link's port()
// instead of the node's, and every connection it opens there is forwarded to `upstream`:
//
//            ┌─────────────────────── LinkProxy "c0->lock2" ────────────────────────┐
//   client ─►│ 127.0.0.1:port() ── upstream fault (client → server) ───► upstream ──┼─► redis
//          ◄─│                  ◄─ downstream fault (server → client) ◄─  Endpoint  │◄─
//            └──────────────────────────────────────────────────────────────────────┘
//   ProxyHub: one io_context on one background thread runs every link's sockets and timers.
//
// Event loop: standalone Asio (Debian's libasio-dev, header-only) rather than a hand-written
// epoll loop. The proxy needs accept, non-blocking connect, partial writes, half-close,
// cancellation on close and one timer per pipe for delays; Asio has all of them, well kept
// and tested, and a hand-written loop would be a few hundred lines of the kind that hides
// bugs, in a tool whose point is finding other people's. One thread is enough for loopback
// traffic at lock-bench rates and means the loop's state needs no locks: the injector's
// calls are posted to that thread and wait there until they have taken effect.
//
// Per direction (see faults/link_fault.h): pass; delay (latency + U[0, jitter] per chunk, in
// order); blackhole (read and dropped, connection kept open; the end of stream still passes,
// so a client that gives up does not leave its server connection behind); hold (read and
// queued, delivered in order when the fault becomes pass or delay; a blackhole keeps them
// held); reset (every connection of the link gets RST both ways, and new ones are accepted
// and reset at once, while either direction is reset). If the upstream connect fails, the
// client's connection is closed. A reset from one peer is passed on as a reset to the other.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "faults/endpoint.h"
#include "faults/link_fault.h"

namespace lockbench {

struct ProxyLoop;  // internal: the hub's io_context and thread (faults/link_proxy.cpp)

class LinkProxy {
public:
    ~LinkProxy();
    LinkProxy(const LinkProxy&) = delete;
    LinkProxy& operator=(const LinkProxy&) = delete;

    int port() const { return port_; }                // on 127.0.0.1
    const std::string& name() const { return name_; }
    const Endpoint& upstream() const { return upstream_; }

    // Thread-safe. The fault is in place on the link's open connections, and on every
    // connection accepted later, when the call returns.
    void set(Direction direction, LinkFault fault);
    void set_both(LinkFault fault);
    void heal();  // pass both ways; held bytes are delivered
    LinkFault fault(Direction direction) const;
    // The proxied connections open now (a client that has not yet been connected upstream
    // is not counted).
    int connection_count() const;
    // Since the downstream was last set to hold: whether the client has sent anything
    // (`asked`), and whether bytes from the server were put in the hold after the last it
    // sent (`answered`: its last request reached the server, and was answered; a connection
    // ended since does not undo it). What a case's start waits for: the client's request
    // reached its server. An end of stream is no answer. Which request it was, the proxy
    // cannot tell: a library whose first round trip is something else (a script load, a
    // lease grant) is answered before its lock command is sent.
    struct HeldReplies {
        bool asked = false;
        bool answered = false;
    };
    HeldReplies held_replies() const;
    // Where the client's first request since the hub's mark_requests() came in one order over
    // every link of the hub (0: none yet): of two clients' links to one server, the lower
    // number reached it first.
    long long first_request() const;

private:
    friend class ProxyHub;
    struct State;  // the Asio side, touched on the loop thread only
    LinkProxy(ProxyLoop& loop, std::string name, Endpoint upstream);

    ProxyLoop& loop_;
    std::string name_;
    Endpoint upstream_;
    int port_ = 0;
    std::unique_ptr<State> state_;
};

class ProxyHub {
public:
    // `seed` drives the delay jitter of every link, so a run's draws follow from its seed.
    explicit ProxyHub(std::uint64_t seed);
    // Closes every listening port and every proxied connection, then stops the loop thread.
    // Bytes still queued (delayed or held) are dropped.
    ~ProxyHub();
    ProxyHub(const ProxyHub&) = delete;
    ProxyHub& operator=(const ProxyHub&) = delete;

    // Listens on 127.0.0.1 on a free port and forwards to `upstream`, whose host must be an
    // IP address (the proxy does not resolve names). Thread-safe. Throws std::runtime_error
    // with one line if the name is taken, the host is not an address, or it cannot listen.
    // The reference stays valid as long as the hub.
    LinkProxy& add(std::string name, Endpoint upstream);
    LinkProxy* find(const std::string& name);
    // Every link whose name begins with `prefix` ("s0-s1-": all that server 0 opens to server 1).
    std::vector<LinkProxy*> find_prefix(const std::string& prefix);
    void heal_all();
    // Begins the order first_request() numbers in, on every link at one moment.
    void mark_requests();

private:
    LinkProxy* find_locked(const std::string& name);

    std::unique_ptr<ProxyLoop> loop_;
    std::mutex links_mutex_;
    std::vector<std::unique_ptr<LinkProxy>> links_;  // after loop_: destroyed before it
};

}  // namespace lockbench
