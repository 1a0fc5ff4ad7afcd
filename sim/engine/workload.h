// What a client does, as plain data (Jepsen's generator idea): how many clients, for how
// long, how long each critical section works, how long to wait between attempts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lockimpl/env.h"  // Point

namespace lockbench {

// A small, portable PRNG (splitmix64): the same seed draws the same numbers everywhere,
// which <random>'s distributions do not promise across standard libraries.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t state_;
};

// Derives independent seeds from one: stream k of seed s.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// A duration distribution in milliseconds: {"fixed": 3}, {"uniform": [1, 5]} or
// {"exponential": 4} (mean).
struct Distribution {
    enum class Kind { fixed, uniform, exponential };
    Kind kind = Kind::fixed;
    double a = 0, b = 0;
    double sample_ms(Rng& rng) const;
    nlohmann::json to_json() const;
};

// A run's renewal policy ("renew"): while a lease is held, a background task extends it
// every period by ttl_ms, as redis-py's extend, Redisson's watchdog or node-redlock's
// extend would (sim/engine/renewal.h).
struct RenewSpec {
    std::optional<long long> every_ms;   // the period, or
    std::optional<double> fraction;      // the period as this fraction of ttl_ms
    long long ttl_ms = 0;                // each extend's T
    bool replace = false;                // mode replace: T from now; add: the time left plus T
    bool retry = false;                  // on_failure retry: go on renewing after a failure
    bool abandon = false;                // once a renewal fails (or the lock says it is lost),
                                         // the holder does not write
    double period_ms() const { return every_ms ? static_cast<double>(*every_ms) : *fraction * static_cast<double>(ttl_ms); }
    nlohmann::json to_json() const;
};

// "start_after": the forced form of "client 0 goes first". Every other client waits at its
// first acquire until `client` has reached `point` (the faults armed there in place first, a
// node they restart at once back), or until max_ms after the start: a start stagger only
// hopes the first client gets there before the others set out, and on a busy machine it
// sometimes does not.
struct StartAfter {
    int client = 0;
    Point point = Point::after_acquire;
    long long max_ms = 0;
};

struct WorkloadSpec {
    int clients = 8;
    long long duration_ms = 3000;
    std::optional<long long> sections_per_client;  // stop after this many, if set
    // Past duration_ms, go on while the store's counter is below this, up to kUntilSectionsBound
    // times duration_ms in all: a case's progress is counted in sections, and how long a slower
    // machine takes to reach them is not the lock's outcome. A lock that has not reached them
    // by the bound has not: the case's "sections_completed" expectation says so.
    std::optional<long long> until_sections;
    static constexpr long long kUntilSectionsBound = 4;
    // The longest a client loops: duration_ms, or its bound when it may go on.
    long long longest_ms() const { return until_sections ? kUntilSectionsBound * duration_ms : duration_ms; }
    Distribution work_ms{Distribution::Kind::uniform, 1, 5};
    double slow_probability = 0;                   // a section is slow with this probability
    Distribution slow_work_ms{Distribution::Kind::fixed, 0, 0};
    Distribution retry_ms{Distribution::Kind::uniform, 1, 5};
    Distribution think_ms{Distribution::Kind::fixed, 0, 0};
    long long start_stagger_ms = 0;                // client i starts i times this much later
    std::optional<StartAfter> start_after;         // the others start once one client got somewhere
};

}  // namespace lockbench
