#include "sim/sentinel.h"

#include <fstream>
#include <stdexcept>
#include <thread>

#include "sim/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;

void write_config(const std::filesystem::path& file, int port, const std::string& name, Endpoint master,
                  const std::filesystem::path& dir, const SentinelSettings& s) {
    std::ofstream out(file);
    out << "port " << port << "\nbind 127.0.0.1\ndaemonize no\ndir " << dir.string() << "\n"
        << "logfile " << (dir / ("sentinel-" + std::to_string(port) + ".log")).string() << "\n"
        << "sentinel resolve-hostnames no\n"
        << "sentinel monitor " << name << " " << master.host << " " << master.port << " 2\n"
        << "sentinel down-after-milliseconds " << name << " " << s.down_after_ms << "\n"
        << "sentinel failover-timeout " << name << " " << s.failover_timeout_ms << "\n"
        << "sentinel parallel-syncs " << name << " 1\n";
    if (!out) throw std::runtime_error(file.string() + ": cannot write the Sentinel configuration");
}

// True once the Sentinel on `port` names a master for `name` and knows the other two
// Sentinels. They find each other through hello messages on the master (every 2 s): a
// Sentinel that has not met the others before the master dies cannot gather a quorum.
bool ready(int port, const std::string& name) {
    LiveEnv env({{{"127.0.0.1", port}}, 100ms});
    const Reply master = env.command(NodeId{0}, {"SENTINEL", "get-master-addr-by-name", name}, 200ms, std::nullopt);
    const Reply others = env.command(NodeId{0}, {"SENTINEL", "sentinels", name}, 200ms, std::nullopt);
    return master.ok() && master.value.elements.size() == 2 && others.ok() && others.value.elements.size() == 2;
}

}  // namespace

SentinelGroup::SentinelGroup(const std::string& master_name, Endpoint master, const std::filesystem::path& dir,
                             const SentinelSettings& settings)
    : master_name_(master_name) {
    std::filesystem::create_directories(dir);
    const std::string binary = redis_server_binary();
    for (int i = 0; i < 3; ++i) {
        const int port = find_free_port();
        const auto conf = dir / ("sentinel-" + std::to_string(i) + ".conf");
        write_config(conf, port, master_name, master, dir, settings);
        processes_.push_back(ChildProcess::spawn({{binary, conf.string(), "--sentinel"}, "", "", {}}));
        endpoints_.push_back({"127.0.0.1", port});
    }
    for (const Endpoint& e : endpoints_) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!ready(e.port, master_name)) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("redis Sentinel on port " + std::to_string(e.port) + " did not start; see " +
                                         (dir / ("sentinel-" + std::to_string(e.port) + ".log")).string());
            std::this_thread::sleep_for(10ms);
        }
    }
}

void wait_for_replica_in_sync(int port, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    LiveEnv env({{{"127.0.0.1", port}}, 100ms});
    while (std::chrono::steady_clock::now() < deadline) {
        const Reply r = env.command(NodeId{0}, {"INFO", "replication"}, 200ms, std::nullopt);
        if (r.ok() && r.value.str.find("master_link_status:up") != std::string::npos) return;
        std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("the replica on port " + std::to_string(port) + " did not reach its master within " +
                             std::to_string(limit.count()) + " ms");
}

}  // namespace lockbench
