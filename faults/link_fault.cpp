// The per-chunk rules of a link fault; see link_fault.h for the diagram.
#include "faults/link_fault.h"

#include <algorithm>
#include <cassert>

namespace lockbench {
namespace {

using std::chrono::microseconds;

// latency + U[0, jitter], drawn in microseconds so a few milliseconds of jitter still spread.
LinkClock::duration delay_of(const LinkFault& fault, std::mt19937_64& rng) {
    assert(fault.latency.count() >= 0 && fault.jitter.count() >= 0);
    const auto jitter_us = std::chrono::duration_cast<microseconds>(fault.jitter).count();
    std::uniform_int_distribution<long long> extra_us(0, jitter_us);
    return fault.latency + microseconds(jitter_us > 0 ? extra_us(rng) : 0);
}

}  // namespace

ChunkFate fate_of_chunk(const LinkFault& fault, LinkClock::time_point now,
                        LinkClock::time_point previous_due, std::mt19937_64& rng) {
    using Kind = LinkFault::Kind;
    switch (fault.kind) {
        case Kind::pass: return {ChunkFate::Kind::deliver, std::max(now, previous_due)};
        case Kind::delay:
            return {ChunkFate::Kind::deliver, std::max(now + delay_of(fault, rng), previous_due)};
        case Kind::hold: return {ChunkFate::Kind::hold};
        case Kind::blackhole:
        case Kind::reset: return {ChunkFate::Kind::drop};
    }
    return {ChunkFate::Kind::drop};
}

std::string describe(const LinkFault& fault) {
    using Kind = LinkFault::Kind;
    switch (fault.kind) {
        case Kind::pass: return "pass";
        case Kind::delay:
            return "delay " + std::to_string(fault.latency.count()) + "ms+U[0," +
                   std::to_string(fault.jitter.count()) + "ms]";
        case Kind::blackhole: return "blackhole";
        case Kind::hold: return "hold";
        case Kind::reset: return "reset";
    }
    return "?";
}

std::string_view to_string(Direction direction) {
    return direction == Direction::upstream ? "upstream" : "downstream";
}

}  // namespace lockbench
