// Run histories made in memory, for the checker's tests and benchmarks.
//
// - generate_history: a deterministic, mutually exclusive run of any size. Clients take one
//   lock in turn; the others try and fail meanwhile. Every verdict the checker gives it
//   should be clean, which makes it both a property-test baseline (inject one fault, expect
//   exactly one finding) and a benchmark input whose size is a parameter.
// - HistoryBuilder: tiny hand-written histories, porcupine style, one line per record.
//
// Header-only and free of <random> distributions: their output differs between standard
// libraries, and a seed must name the same history everywhere.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/history.h"
#include "sim/engine/workload.h"

namespace lockbench::histgen {

// The project's splitmix64 (sim/engine/workload.h), with the two draws test data needs.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : rng_(seed) {}
    // Uniform enough in [0, n) for test data (modulo bias is below 2^-32 for small n).
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_.next() % n; }
    // In [lo, hi], both inclusive.
    long long between(long long lo, long long hi) {
        return lo + static_cast<long long>(below(static_cast<std::uint64_t>(hi - lo) + 1));
    }

private:
    Rng rng_;
};

// Builds a RunHistory record by record. Events may be added in any order (build() sorts
// them by time, stably); store entries are numbered in the order they are added.
class HistoryBuilder {
public:
    // Adds one client event. `lease` is a lease name ("c0.1"), interned for `client`.
    HistoryBuilder& add_event(int client, long long t_ns, OpKind op, EventType type,
                              std::optional<std::string> lease = std::nullopt,
                              std::uint32_t nodes = 0, int depth = 1,
                              std::optional<long long> fence = std::nullopt) {
        ClientEvent e;
        e.t_ns = t_ns;
        e.client = client;
        e.op = op;
        e.type = type;
        if (lease) e.lease = h_.lease_index(*lease, client);
        e.nodes = nodes;
        e.depth = depth;
        e.fence = fence;
        h_.events.push_back(e);
        see_client(client);
        return *this;
    }

    // Adds the store's next log record (seq 1, 2, ...).
    HistoryBuilder& add_store(StoreKind kind, int client, const std::string& lease,
                              std::optional<long long> fence = std::nullopt, long long read = 0,
                              long long prev = 0) {
        StoreEntry s;
        s.seq = static_cast<long long>(h_.store.size()) + 1;
        s.kind = kind;
        s.client = client;
        s.lease = h_.lease_index(lease, client);
        s.fence = fence;
        s.read = read;
        s.prev = prev;
        s.t_us = s.seq;
        h_.store.push_back(s);
        see_client(client);
        return *this;
    }

    HistoryBuilder& final_counter(long long n) {
        h_.final_counter = n;
        return *this;
    }

    // The lease's index, as the checker's witnesses report it (adds the lease if new).
    int lease(const std::string& name, int client) { return h_.lease_index(name, client); }

    RunHistory build() const {
        RunHistory h = h_;
        std::ranges::stable_sort(h.events, {}, &ClientEvent::t_ns);
        return h;
    }

private:
    void see_client(int client) { h_.clients = std::max(h_.clients, client + 1); }

    RunHistory h_;
};

// "c3.17": client 3's 17th lease. Appended piecewise: GCC 12 warns falsely (-Wrestrict,
// bug 105651) on "literal" + std::string.
inline std::string lease_name(int client, const std::string& suffix) {
    std::string name = "c";
    name += std::to_string(client);
    name += '.';
    name += suffix;
    return name;
}

namespace detail {

// One generated run in progress: a clock that only moves forward, the store's counter.
struct Generation {
    SplitMix64 rng;
    RunHistory h;
    std::vector<int> sections_of;   // per client: leases taken so far
    long long t_ns = 1'000'000'000; // start away from zero, as CLOCK_MONOTONIC does
    long long counter = 0;
    long long fence = 0;

    // Every event advances time by 1 µs to 1 ms, so times are strictly increasing.
    void event(int client, OpKind op, EventType type, std::optional<int> lease = std::nullopt,
               std::uint32_t nodes = 0, std::optional<long long> event_fence = std::nullopt) {
        t_ns += rng.between(1'000, 1'000'000);
        ClientEvent e;
        e.t_ns = t_ns;
        e.client = client;
        e.op = op;
        e.type = type;
        e.lease = lease;
        e.nodes = nodes;
        e.fence = event_fence;
        h.events.push_back(e);
    }

    void store(StoreKind kind, int client, int lease, long long read, long long prev) {
        StoreEntry s;
        s.seq = static_cast<long long>(h.store.size()) + 1;
        s.kind = kind;
        s.client = client;
        s.lease = lease;
        s.fence = fence;
        s.read = read;
        s.prev = prev;
        s.t_us = t_ns / 1000;
        h.store.push_back(s);
    }

    // Some other clients try and lose to `winner`: while its acquire is in flight (the lock
    // looks free, so this time counts as unavailable) or while it holds the lock.
    void contenders(int clients, int winner) {
        const int tries = static_cast<int>(rng.below(static_cast<std::uint64_t>(clients)));
        for (int i = 0; i < tries; ++i) {
            const int c = static_cast<int>(rng.below(static_cast<std::uint64_t>(clients)));
            if (c == winner) continue;
            event(c, OpKind::acquire, EventType::invoke);
            event(c, OpKind::acquire, EventType::fail);
        }
    }

    // One critical section, from the winner's acquire to its release.
    void section(int clients) {
        const int w = static_cast<int>(rng.below(static_cast<std::uint64_t>(clients)));
        const int lease = h.lease_index(lease_name(w, std::to_string(++sections_of[w])), w);
        ++fence;
        event(w, OpKind::acquire, EventType::invoke);
        contenders(clients, w);
        event(w, OpKind::acquire, EventType::ok, lease, 1u, fence);
        event(w, OpKind::read, EventType::invoke, lease);
        store(StoreKind::enter, w, lease, counter, 0);
        event(w, OpKind::read, EventType::ok, lease);
        event(w, OpKind::write, EventType::invoke, lease);
        store(StoreKind::write, w, lease, counter, counter);
        ++counter;
        event(w, OpKind::write, EventType::ok, lease);
        store(StoreKind::exit, w, lease, 0, 0);
        contenders(clients, w);
        event(w, OpKind::release, EventType::invoke, lease, 0, fence);
        event(w, OpKind::release, EventType::ok, lease, 1u, fence);
    }
};

}  // namespace detail

// A valid, mutually exclusive run: `clients` clients (at least 1) take one lock (node 0) in
// turn until at least `target_events` client events exist, whole sections only. The same
// arguments give the same history on every platform.
inline RunHistory generate_history(int clients, long long target_events, std::uint64_t seed) {
    clients = std::max(clients, 1);
    detail::Generation g{SplitMix64(seed), {}, std::vector<int>(static_cast<size_t>(clients), 0)};
    g.h.clients = clients;
    while (static_cast<long long>(g.h.events.size()) < target_events) g.section(clients);
    g.h.final_counter = g.counter;
    return g.h;
}

}  // namespace lockbench::histgen
