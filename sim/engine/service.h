// Which lock service a run locks on: Redis (lockbench's own algorithms and the Redis lock
// libraries), or another service whose own locks only external adapters take (its entry in
// service.cpp says which). The live world starts the servers (sim/live/lock_service.h); the
// simulator models Redis only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lockbench {

enum class Service { redis, zookeeper, etcd, postgresql, mariadb, hazelcast };

// Every service, in its entries' order (service.cpp): what a lock file's "service" and the
// command line's --service may name.
const std::vector<Service>& services();

// What a service is, as the parsers, compose, the fault kinds, the search and the command line
// ask it: one entry per service (service.cpp). Its servers are started and stopped by
// the live world (sim/live/lock_service.h: start_service, and a file of each service's own).
struct ServiceInfo {
    Service service;
    const char* name;    // "postgresql": a lock file's "service"
    const char* title;   // "PostgreSQL", as a message names it
    const char* server;  // "lock node", "etcd server": one of its servers, as the progress line says
    const char* plural;  // "Redis nodes", "etcd servers": its servers, as a message names them
    // How many servers a run may have: any (to kMaxNodes) when empty; and why, when it is one.
    std::vector<int> sizes;
    const char* why_sizes = "";
    bool own_algorithms = false;     // lockbench's own algorithms speak it; on the others only an adapter locks
    bool consensus = false;          // several servers that agree (a case's "ensemble" is their number)
    bool has_leader = false;         // a fault may strike a server by its role (leader, follower)
    bool peers_proxied = false;      // its servers' links to each other go through lockbench's proxies
    bool clock_shim_reaches = true;  // its servers read the wall clock through libc (the clock shim's LD_PRELOAD)
    const char* clock_why = "";      // why not, when they do not
    bool disk_shim_reaches = false;  // its servers flush to disk through libc's fsync, fdatasync (the same shim)
    const char* disk_why = "";       // why not, when they do not
    bool node_options = false;       // "topology" (Sentinel) and "persistence": a Redis node's
    bool server_settings = false;    // "server_settings": settings its server starts with
    bool pooler = false;             // "pgbouncer": PgBouncer pools its connections
    bool server_program = false;     // "server": a lock may name the program its servers run (another version)
    bool needs_program = false;      // ... and must: lockbench has none of its own (a lock file's "server" is required)
    // Settings lockbench gives its server itself, which a case may not change: where it
    // listens, its folders, how clients log in.
    std::vector<std::string> reserved_settings;
    bool simulated = false;          // the simulator models its servers
    // The run starts its nodes itself (sim/live/redis_node.h, with their topology and
    // persistence); any other service's servers start through start_service (lock_service.h).
    bool run_starts_nodes = false;
    // A client may read a lock's key on its servers (GET, HEXISTS): how it asks whether a lease
    // still holds the lock after the store refused its write (Lock::holds), and how
    // adapter-check finds the first holder's token.
    bool keys_readable = false;
};

const ServiceInfo& service_info(Service s);

inline const char* service_name(Service s) { return service_info(s).name; }

// A service of several servers that agree by consensus (a case's "ensemble" is their number).
inline bool replicated(Service s) { return service_info(s).consensus; }

// "\"zookeeper\" or \"etcd\"": the services for which `has` holds (every one with nullptr),
// quoted, or by their titles, as a message lists them.
std::string services_with(bool ServiceInfo::*has, bool quoted = true);

// Why a run of `servers` servers cannot be on this service ("a postgresql service is one
// server (…), got 3"); nullopt when it can.
std::optional<std::string> servers_refused(const ServiceInfo& service, int servers);

// Their names, in that order.
inline std::vector<std::string> service_names() {
    std::vector<std::string> names;
    for (Service s : services()) names.emplace_back(service_name(s));
    return names;
}

inline std::optional<Service> parse_service(const std::string& name) {
    for (Service s : services())
        if (name == service_name(s)) return s;
    return std::nullopt;
}

}  // namespace lockbench
