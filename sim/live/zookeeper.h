// ZooKeeper servers that lockbench starts, owns and stops: start_service() with
// Service::zookeeper (lock_service.h) returns one standalone server or an ensemble, each server a JVM in its own folder:
//
//   <dir>/zk<i>/zoo.cfg      tickTime 100 ms, every listener on 127.0.0.1, admin server off
//   <dir>/zk<i>/data/myid    i + 1 (ZooKeeper's ids start at 1; servers() index i is id i + 1)
//   <dir>/zk<i>/zookeeper.log  the JVM's stdout and stderr (log4j's CONSOLE appender)
//
// With peer proxies, server i reaches server j through the hub's "s<i>-s<j>-quorum" and
// "s<i>-s<j>-election" links, so each server's zoo.cfg names its peers by other addresses;
// its own line keeps its real ports (it listens there):
//
//   zk0 ──► s0-s1-quorum ──► zk1:quorum      zk1 ──► s1-s0-quorum ──► zk0:quorum
//       ──► s0-s1-election ─► zk1:election       ──► s1-s0-election ─► zk0:election
//
// ZooKeeper accepts that: with reconfigEnabled false every server's static config has
// version 0, so none adopts another's view of the addresses. One connection goes around the
// proxies: a server that an election connection from a lower id reaches drops it and calls
// that server back at the election address it announced, its real port. The nemesis ends
// such straight connections when it faults a peer link (end_direct_connections, in
// faults/listeners.h); while both directions are cut or held none forms again.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace lockbench {

// Sends one of ZooKeeper's four-letter words ("ruok", "srvr", ...) to 127.0.0.1:port and
// returns the whole answer; none if it could not connect or the answer did not end within
// `timeout` (a paused server accepts the connection, the kernel does, but never answers).
std::optional<std::string> four_letter_word(int port, const std::string& word,
                                            std::chrono::milliseconds timeout);

// The value of a "Name: value" line of a `srvr` answer ("Mode", "Zxid"); none if absent.
std::optional<std::string> srvr_field(const std::string& srvr, const std::string& name);

// Which of the servers on `ports` (by index) says it leads, as a ZooKeeper service's leader()
// asks its own: for an ensemble a run did not start (sim/live/server_pool.h).
std::optional<int> zookeeper_leader(const std::vector<int>& ports);

// The java program that runs ZooKeeper: $LOCKBENCH_JAVA if set, else java on PATH. Throws one
// clear line naming scripts/setup if it, or ZooKeeper's jar, is missing.
std::string zookeeper_java();

}  // namespace lockbench
