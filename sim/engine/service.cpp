#include "sim/engine/service.h"

#include <algorithm>

#include "lockimpl/params.h"  // or_list

namespace lockbench {

namespace {

const std::vector<ServiceInfo>& table() {
    static const std::vector<ServiceInfo> all{
        {.service = Service::redis, .name = "redis", .title = "Redis", .server = "lock node", .plural = "Redis nodes",
         .own_algorithms = true, .disk_shim_reaches = true, .node_options = true, .simulated = true, .run_starts_nodes = true,
         .keys_readable = true},
        {.service = Service::zookeeper, .name = "zookeeper", .title = "ZooKeeper", .server = "zookeeper server", .plural = "ZooKeeper servers",
         .sizes = {1, 3, 5}, .consensus = true, .has_leader = true, .peers_proxied = true,
         .disk_why = "lockbench starts its servers with forceSync=no: they never flush"},
        // etcd's peer URLs must be the same cluster-wide, so its peer links are not proxied; Go
        // reads the kernel's clock directly, not through libc.
        {.service = Service::etcd, .name = "etcd", .title = "etcd", .server = "etcd server", .plural = "etcd servers",
         .sizes = {1, 3, 5}, .consensus = true, .has_leader = true, .clock_shim_reaches = false,
         .clock_why = "Go reads the kernel's clock directly",
         .disk_why = "Go makes the fdatasync syscall itself, out of the shim's reach", .server_program = true},
        {.service = Service::postgresql, .name = "postgresql", .title = "PostgreSQL", .server = "postgresql server", .plural = "PostgreSQL servers",
         .sizes = {1}, .why_sizes = "advisory locks live in its memory",
         .disk_why = "lockbench starts it with fsync=off", .server_settings = true, .pooler = true,
         .reserved_settings = {"listen_addresses", "port", "unix_socket_directories", "data_directory", "config_file", "hba_file",
                               "ident_file", "external_pid_file"}},
        {.service = Service::mariadb, .name = "mariadb", .title = "MariaDB", .server = "mariadb server", .plural = "MariaDB servers",
         .sizes = {1}, .why_sizes = "named locks live in its memory", .disk_shim_reaches = true, .server_settings = true,
         .reserved_settings = {"bind_address", "port", "socket", "datadir", "tmpdir", "basedir", "init_file", "pid_file", "user",
                               "skip_grant_tables", "skip_networking", "plugin_dir"}},
        // Hazelcast's CP subsystem (FencedLock): members that run a lock file's "server" (Maven
        // Central's Hazelcast, adapters/hazelcast/member), its CP sessions lasting the run's TTL.
        // Members find each other by the addresses they announce, so their links are not proxied.
        {.service = Service::hazelcast, .name = "hazelcast", .title = "Hazelcast", .server = "hazelcast member", .plural = "Hazelcast members",
         .sizes = {3, 5}, .why_sizes = "its CP subsystem needs at least three CP members; fewer is its unsafe mode", .consensus = true,
         .has_leader = true, .disk_why = "its CP members keep their state in memory (CP persistence is Enterprise-only)",
         .server_program = true, .needs_program = true},
    };
    return all;
}

}  // namespace

const std::vector<Service>& services() {
    static const std::vector<Service> all = [] {
        std::vector<Service> out;
        for (const ServiceInfo& i : table()) out.push_back(i.service);
        return out;
    }();
    return all;
}

const ServiceInfo& service_info(Service s) {
    for (const ServiceInfo& i : table())
        if (i.service == s) return i;
    return table().front();  // not reached: every service has its entry (compose_test: Services)
}

std::optional<std::string> servers_refused(const ServiceInfo& service, int servers) {
    const std::vector<int>& sizes = service.sizes;
    if (sizes.empty() || std::ranges::find(sizes, servers) != sizes.end()) return std::nullopt;
    std::vector<std::string> allowed;
    for (int n : sizes) allowed.push_back(std::to_string(n));
    const std::string why = *service.why_sizes ? " (" + std::string(service.why_sizes) + ")" : "";
    return std::string("a ") + service.name + " service " + (sizes.size() == 1 && sizes[0] == 1 ? "is one server" : "has " + or_list(allowed) + " servers") +
           why + ", got " + std::to_string(servers);
}

std::string services_with(bool ServiceInfo::*has, bool quoted) {
    std::vector<std::string> names;
    for (Service s : services())
        if (!has || service_info(s).*has) names.push_back(quoted ? "\"" + std::string(service_name(s)) + "\"" : service_info(s).title);
    return or_list(names);
}

}  // namespace lockbench
