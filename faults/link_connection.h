// One proxied TCP connection: the client's socket, the server's socket and a pipe each way.
// Internal to the link proxy (faults/link_proxy.h is the interface); everything here runs on
// the hub's loop thread only, so nothing is locked.
//
//            upstream pipe: read ─► fate_of_chunk ─► queue ─► timer (due) ─► write
//   client ════════════════════════════════════════════════════════════════════════► server
//   socket ◄════════════════════════════════════════════════════════════════════════ socket
//            downstream pipe: write ◄─ timer (due) ◄─ queue ◄─ fate_of_chunk ◄─ read
//
// Each pipe keeps reading whatever its fault is (a blackhole or hold must look like a healthy
// peer to the sender), and writes its queue strictly in order, so bytes leave in the order
// they came. A held chunk at the front stops the writer until the fault is lifted. The end of
// a stream (FIN) travels as a chunk in the same queue, after the bytes before it. Queues have
// no bound: lock traffic is small, and a bound would turn a hold into back-pressure that the
// sender could notice.
#pragma once

// The standard headers come first on purpose: Asio 1.22 decides how it allocates handler
// memory from a libstdc++ macro (_GLIBCXX_HAVE_ALIGNED_ALLOC), so a file that included Asio
// before any standard header would free with operator delete what another file allocated
// with aligned_alloc (AddressSanitizer's alloc-dealloc-mismatch).
#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

// Standalone Asio (Debian's libasio-dev), without Boost. Every file of the proxy includes
// Asio through this header, so all of them see the same configuration.
#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "faults/link_fault.h"

namespace lockbench {

class LinkConnection : public std::enable_shared_from_this<LinkConnection> {
public:
    // Called once when the connection ends by itself (both streams ended, or a socket error);
    // not when the owner calls close() or reset().
    using OnEnded = std::function<void(LinkConnection*)>;
    // The order of a link's chunks of bytes, over all its connections, kept by the link (a
    // connection may end before it is read): each chunk read takes the next number of
    // `order`, one count over every link of a hub; the last request's (upstream) and the last
    // held answer's (downstream, put in a hold) are kept, and the first request's after the
    // count stood at `mark`. An end of stream is no chunk.
    struct Traffic {
        long long* order = nullptr;
        long long last_request = 0;
        long long last_held_answer = 0;
        long long mark = 0;
        long long first_request = 0;  // after mark (if not above it: none yet)
    };

    LinkConnection(asio::ip::tcp::socket client, asio::ip::tcp::socket server,
                   std::mt19937_64& rng, OnEnded on_ended, std::shared_ptr<Traffic> traffic = nullptr);
    LinkConnection(const LinkConnection&) = delete;
    LinkConnection& operator=(const LinkConnection&) = delete;

    void start(LinkFault upstream, LinkFault downstream);
    // pass, delay, blackhole or hold; lifting a hold releases the queued chunks in order.
    void set_fault(Direction direction, LinkFault fault);
    void close();  // FIN to both peers; bytes still queued in the proxy are dropped
    void reset();  // RST to both peers (SO_LINGER 0)

private:
    struct Chunk {
        std::vector<char> bytes;
        bool end_of_stream = false;
        bool held = false;
        LinkClock::time_point due{};
    };
    struct Pipe {
        Pipe(asio::ip::tcp::socket& from, asio::ip::tcp::socket& to);
        asio::ip::tcp::socket& from;
        asio::ip::tcp::socket& to;
        LinkFault fault;
        std::deque<Chunk> queue;
        asio::steady_timer timer;
        LinkClock::time_point last_due{};
        bool writing = false;  // a timer wait or a write is in progress
        bool ended = false;    // the end of stream has been passed on
        std::array<char, 16 * 1024> buffer{};
    };

    Pipe& pipe(Direction direction) { return pipes_[static_cast<int>(direction)]; }
    void read_next(Pipe& p);
    void on_read(Pipe& p, std::error_code ec, std::size_t n);
    void admit(Pipe& p, Chunk chunk);
    void release_held(Pipe& p);
    void write_next(Pipe& p);
    void on_written(Pipe& p, std::error_code ec);
    void end_stream(Pipe& p);
    void end(bool abortive);

    asio::ip::tcp::socket client_;
    asio::ip::tcp::socket server_;
    std::array<Pipe, 2> pipes_;  // indexed by Direction
    std::mt19937_64& rng_;
    OnEnded on_ended_;
    std::shared_ptr<Traffic> traffic_;
    bool closed_ = false;
};

}  // namespace lockbench
