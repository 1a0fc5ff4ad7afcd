// The service a run names; see lock_service.h.
#include "sim/live/lock_service.h"

#include <stdexcept>
#include <thread>

#include "sim/live/etcd.h"
#include "sim/live/zookeeper.h"

namespace lockbench {

// Each defined in its service's own file of sim/live/, and named nowhere else.
std::unique_ptr<LockService> start_zookeeper(const ServiceConfig& config);
std::unique_ptr<LockService> start_etcd(const ServiceConfig& config);
std::unique_ptr<LockService> start_postgresql(const ServiceConfig& config);
std::unique_ptr<LockService> start_mariadb(const ServiceConfig& config);
std::unique_ptr<LockService> start_hazelcast(const ServiceConfig& config);

std::unique_ptr<LockService> start_service(Service service, const ServiceConfig& config) {
    switch (service) {
        case Service::zookeeper: return start_zookeeper(config);
        case Service::etcd: return start_etcd(config);
        case Service::postgresql: return start_postgresql(config);
        case Service::mariadb: return start_mariadb(config);
        case Service::hazelcast: return start_hazelcast(config);
        case Service::redis: break;
    }
    throw std::logic_error("start_service: a run starts its Redis nodes itself");
}

std::optional<std::size_t> first_unsettled(std::size_t count, std::chrono::steady_clock::time_point deadline,
                                           std::chrono::milliseconds every, const std::function<bool(std::size_t)>& settled) {
    for (std::size_t i = 0; i < count;) {
        if (settled(i)) {
            ++i;
            continue;
        }
        if (std::chrono::steady_clock::now() >= deadline) return i;
        std::this_thread::sleep_for(every);
    }
    return std::nullopt;
}

bool keepable(Service service) {
    return service == Service::zookeeper || service == Service::etcd || service == Service::postgresql;
}

std::optional<int> ask_leader(Service service, const std::vector<int>& ports) {
    if (!service_info(service).has_leader) return std::nullopt;
    if (service == Service::zookeeper) return zookeeper_leader(ports);
    if (service == Service::etcd) return etcd_leader(ports);
    throw std::logic_error("ask_leader: not a service kept across repetitions");
}

}  // namespace lockbench
