// A run's record, as the checker reads it: the clients' histories (their operations, on a
// clock no fault touches) and the protected store's log (in the store's own order, the
// ground truth). A history record is one small struct, as in porcupine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace lockbench {

// Client operations. `read` enters the critical section (reads the counter), `write` writes
// counter+1 and leaves it.
enum class OpKind : std::uint8_t { acquire, release, read, write };
enum class EventType : std::uint8_t { invoke, ok, fail, info };

const char* op_name(OpKind k);
const char* event_type_name(EventType t);

struct ClientEvent {
    long long t_ns = 0;                 // CLOCK_MONOTONIC: one clock for every process
    int client = 0;
    OpKind op = OpKind::acquire;
    EventType type = EventType::invoke;
    std::optional<int> lease;           // index into RunHistory::leases
    int depth = 1;                      // re-entry level; 1 is the outermost acquire/release
    std::optional<long long> fence;     // fencing token, where the algorithm has one
    std::uint32_t nodes = 0;            // acquire ok: nodes locked; release ok: nodes removed
    std::optional<double> validity_ms;  // acquire ok: what the lock said remains of its validity
    // acquire ok of a run that probes: the key's PTTL per node (nullopt: not probed)
    std::vector<std::optional<long long>> key_ttl_ms;
    // write fail (the store refused it): the lock server's word right after, on whether this
    // lease still held the lock there ("lock_says": "held" / "not held"; nullopt: not asked)
    std::optional<bool> lock_says_held;
};

enum class StoreKind : std::uint8_t { enter, write, reject, exit };
const char* store_kind_name(StoreKind k);

// One record of the store's log, in the store's order (seq 1, 2, ...).
struct StoreEntry {
    long long seq = 0;
    StoreKind kind = StoreKind::enter;
    int client = 0;
    int lease = 0;                      // index into RunHistory::leases
    std::optional<long long> fence;
    long long read = 0;                 // enter: the counter read; write: what the client read
    long long prev = 0;                 // write: the counter just before this write
    long long t_us = 0;                 // the store's own clock (TIME), for plots only
    std::optional<long long> max_fence; // reject: the highest fence the store had seen
};

struct RunHistory {
    std::vector<std::string> leases;    // lease names ("c3.17"), by index
    std::vector<int> lease_client;      // owning client, by lease index
    std::vector<ClientEvent> events;    // every client's events, sorted by t_ns
    std::vector<StoreEntry> store;      // in store order
    long long final_counter = 0;
    int clients = 0;
    std::optional<long long> ttl_ms;       // run.json's params.ttl_ms (lease_ms), where it has one
    // A run on topology "sentinel": when Sentinel first announced +switch-master (its
    // sentinel.jsonl, CLOCK_MONOTONIC at receipt), the failover's end as the clients can see it.
    std::optional<long long> failover_ns;

    std::unordered_map<std::string, int> lease_ids;  // name -> index

    // Returns the index of `name`, adding it if new.
    int lease_index(const std::string& name, int client);
};

}  // namespace lockbench
