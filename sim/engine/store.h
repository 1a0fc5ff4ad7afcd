// The protected store: a separate redis-server, not the lock service, whose own order is
// the ground truth. Each critical section is two atomic scripts:
//
//   enter  (read)   log {enter, client, lease, fence, read = counter}; holder = client;
//                   return counter
//   abandon         log {exit} only: the enter's reply was lost, the client gives up
//   write  (+exit)  if the run's check refuses it: log {reject}; else counter = read + 1,
//                   log {write}; then log {exit}
//
// The log is a list; a record's position is its `seq`. Every record carries the lease's
// fence whenever the lease has one, whatever the check: the check decides only what the
// store enforces, and the checker still learns the lock's order from the fences.
//
// The check (a run's "resource_check"):
//   fence  Kleppmann's monotonic token, the default: a fenced write whose fence is lower
//          than the highest the store has seen (or equal, from another lease) is refused,
//          logged {reject, max_fence}. A fence seen on an enter counts as seen: his storage
//          rejects any request older than one it served. A lease without a fence is not
//          checked.
//   none   nothing is refused.
//   token  antirez's check-and-set ("Is Redlock safe?", 2016). A holder registers by
//          entering: the enter stores its lease's token (the random value the lock set, "" if
//          the lock gave none) as the registered one, unconditionally, replacing whatever was
//          registered, so the store keeps the token of the lease that entered last. A write
//          is accepted only if its token equals the registered one; otherwise it is refused,
//          logged {reject, registered = the lease that registered}. Reads are never
//          checked: a reader of the store sees the counter as the last accepted write left
//          it, whoever registered since, and whether its own write will be accepted is
//          decided only at the write.
#pragma once

#include <optional>
#include <string>

#include "lockimpl/env.h"

namespace lockbench {

enum class ResourceCheck { none, fence, token };
const char* resource_check_name(ResourceCheck c);
std::optional<ResourceCheck> parse_resource_check(const std::string& name);

struct StoreKeys {
    std::string counter = "lockbench:counter";
    std::string log = "lockbench:log";
    std::string fence_max = "lockbench:fence:max";
    std::string fence_lease = "lockbench:fence:lease";
    // The client that entered last (set by the enter script). No longer what the repeating
    // nemesis aims at: its holder is the client inside its section, read from the log's last
    // record (run_setup.h); the key stays for a reader of the store, and the scripts' shape
    // (the model's native path mirrors them) with it.
    std::string holder = "lockbench:holder";
    std::string token = "lockbench:token";              // check "token": the registered token
    std::string token_lease = "lockbench:token:lease";  // and the lease that registered it
};

struct SectionId {
    int client = 0;
    std::string lease;
    std::optional<long long> fence;
    std::string token;   // the lease's random value (Lease::token), for the check "token"
};

// The scripts' texts, for a model that runs them natively (sim/virtual/model_store_scripts.cpp).
enum class StoreScript { enter, write_and_exit, abandon };
const char* store_script(StoreScript which);

class Store {
public:
    Store(Env& env, Duration timeout, ResourceCheck check = ResourceCheck::fence)
        : env_(env), timeout_(timeout), check_(check) {}
    // The counter's value as read inside the section, or the failed reply.
    Reply enter(const SectionId& s);
    // Reply value 1: written; 0: refused by the check.
    Reply write_and_exit(const SectionId& s, long long read);
    // Logs only {exit}: the client leaves a section whose enter may or may not have
    // happened (its reply was lost), so that an open section does not outlive its client.
    Reply abandon(const SectionId& s);
    // The counter as it stands (0 before the first write).
    Reply counter();

private:
    Env& env_;
    Duration timeout_;
    ResourceCheck check_;
    StoreKeys keys_;
};

}  // namespace lockbench
