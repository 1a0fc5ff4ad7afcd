// Which lock service a run locks on: Redis (lockbench's own algorithms and the Redis lock
// libraries), ZooKeeper or etcd (their own lock recipes), PostgreSQL (its advisory locks), the
// last three through external adapters. The live world starts the servers
// (sim/live/lock_service.h); the simulator models Redis only.
#pragma once

#include <optional>
#include <string>

namespace lockbench {

enum class Service { redis, zookeeper, etcd, postgresql };

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

inline std::optional<Service> parse_service(const std::string& name) {
    for (Service s : {Service::redis, Service::zookeeper, Service::etcd, Service::postgresql})
        if (name == service_name(s)) return s;
    return std::nullopt;
}

}  // namespace lockbench
