// The protected store: a separate redis-server, not the lock service, whose own order is
// the ground truth. Each critical section is two atomic scripts:
//
//   enter  (read)   log {enter, client, lease, fence, read = counter}; holder = client;
//                   return counter
//   abandon         log {exit} only: the enter's reply was lost, the client gives up
//   write  (+exit)  if fenced and the token is lower than the highest seen (or equal from
//                   another lease): log {reject}; else counter = read + 1, log {write};
//                   then log {exit}
//
// The log is a list; a record's position is its `seq`. A fence the store has seen on an
// enter counts as seen: Kleppmann's storage rejects any request older than one it served.
#pragma once

#include <optional>
#include <string>

#include "lockimpl/env.h"

namespace lockbench {

struct StoreKeys {
    std::string counter = "lockbench:counter";
    std::string log = "lockbench:log";
    std::string fence_max = "lockbench:fence:max";
    std::string fence_lease = "lockbench:fence:lease";
    // The client that entered last (set by the enter script): the repeating nemesis's holder.
    std::string holder = "lockbench:holder";
};

struct SectionId {
    int client = 0;
    std::string lease;
    std::optional<long long> fence;
};

class Store {
public:
    Store(Env& env, Duration timeout) : env_(env), timeout_(timeout) {}
    // The counter's value as read inside the section, or the failed reply.
    Reply enter(const SectionId& s);
    // Reply value 1: written; 0: rejected by the fence.
    Reply write_and_exit(const SectionId& s, long long read);
    // Logs only {exit}: the client leaves a section whose enter may or may not have
    // happened (its reply was lost), so that an open section does not outlive its client.
    Reply abandon(const SectionId& s);

private:
    Env& env_;
    Duration timeout_;
    StoreKeys keys_;
};

}  // namespace lockbench
