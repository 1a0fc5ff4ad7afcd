// A link's fault in one direction, and what it does to each chunk of bytes that crosses it.
//
//   chunk read ──► fate_of_chunk(fault) ──┬─ drop     blackhole, reset
//                                         ├─ hold     hold: queued with no due time until the
//                                         │           fault becomes pass or delay
//                                         └─ deliver  at `due`: pass → now,
//                                                     delay → now + latency + U[0, jitter],
//                                                     never before the previous chunk's due
//
// A "chunk" is whatever one read from the socket returned: the proxy knows nothing of RESP,
// so a delay applies per read, not per command. This file is pure (no sockets, the clock and
// the random source passed in), so its rules are tested without a network.
#pragma once

#include <chrono>
#include <random>
#include <string>
#include <string_view>

namespace lockbench {

// Which way bytes travel on a link. The client is the side that connects to the proxy's port.
enum class Direction { upstream /* client → server */, downstream /* server → client */ };

struct LinkFault {
    enum class Kind {
        pass,       // forwarded as soon as read
        delay,      // each chunk delivered latency + U[0, jitter] after it was read, in order
        blackhole,  // read and discarded; the connection stays open, so the client times out
        hold,       // read and queued; delivered in order once the fault is pass or delay again
        reset,      // every connection of the link reset (RST); new ones reset while it is set
    };
    Kind kind = Kind::pass;
    std::chrono::milliseconds latency{0};  // delay only: added to every chunk
    std::chrono::milliseconds jitter{0};   // delay only: the bound of a uniform extra [0, jitter]

    static LinkFault pass() { return {}; }
    static LinkFault delay(std::chrono::milliseconds latency,
                           std::chrono::milliseconds jitter = std::chrono::milliseconds(0)) {
        return {Kind::delay, latency, jitter};
    }
    static LinkFault blackhole() { return {Kind::blackhole}; }
    static LinkFault hold() { return {Kind::hold}; }
    static LinkFault reset() { return {Kind::reset}; }

    friend bool operator==(const LinkFault&, const LinkFault&) = default;
};

// A label for logs and plots: "pass", "delay 200ms+U[0,50ms]", "blackhole", "hold", "reset".
std::string describe(const LinkFault& fault);
std::string_view to_string(Direction direction);

using LinkClock = std::chrono::steady_clock;

struct ChunkFate {
    enum class Kind { drop, hold, deliver };
    Kind kind = Kind::deliver;
    LinkClock::time_point due{};  // deliver only
};

// What happens to a chunk read at `now` under `fault`, given the due time of the chunk before
// it on the same connection and direction. Later chunks never overtake earlier ones: a short
// jitter draw waits for the previous chunk rather than jumping the queue, as TCP would.
ChunkFate fate_of_chunk(const LinkFault& fault, LinkClock::time_point now,
                        LinkClock::time_point previous_due, std::mt19937_64& rng);

}  // namespace lockbench
