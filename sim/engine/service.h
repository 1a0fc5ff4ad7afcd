// Which lock service a run locks on: Redis (lockbench's own algorithms and the Redis lock
// libraries), ZooKeeper or etcd (their own lock recipes), PostgreSQL (its advisory locks), the
// last three through external adapters. The live world starts the servers
// (sim/live/lock_service.h); the simulator models Redis only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lockbench {

enum class Service { redis, zookeeper, etcd, postgresql };

// Every service, in this order: what a lock file's "service" and the command line's --service
// may name.
inline const std::vector<Service>& services() {
    static const std::vector<Service> all{Service::redis, Service::zookeeper, Service::etcd, Service::postgresql};
    return all;
}

inline const char* service_name(Service s) {
    switch (s) {
        case Service::redis: return "redis";
        case Service::zookeeper: return "zookeeper";
        case Service::etcd: return "etcd";
        case Service::postgresql: return "postgresql";
    }
    return "?";
}

// A service of several servers that agree by consensus (a case's "ensemble" is their number).
inline bool replicated(Service s) { return s == Service::zookeeper || s == Service::etcd; }

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
