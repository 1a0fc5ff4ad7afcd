#include "sim/live/live_run.h"

#include "sim/live/external.h"  // kAdapterFileCapBytes

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "faults/clock_control.h"
#include "faults/link_proxy.h"
#include "process/process.h"
#include "process/stopped.h"
#include "sim/engine/workload.h"
#include "sim/live/adapter_pool.h"
#include "sim/live/client_main.h"
#include "sim/live/client_spec.h"
#include "sim/live/live_env.h"
#include "sim/live/nemesis.h"
#include "sim/live/phase_clock.h"
#include "sim/live/redis_node.h"
#include "sim/live/sentinel.h"
#include "sim/live/server_home.h"
#include "sim/live/server_pool.h"
#include "sim/live/start_barrier.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

std::string tail_of(const fs::path& file, size_t max_chars = 400) {
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    std::ranges::replace(text, '\n', '|');  // an error stays one line
    return text.size() > max_chars ? "..." + text.substr(text.size() - max_chars) : text;
}

std::string last_line_of(const fs::path& file) {
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) last = line;
    return last;
}

struct Nodes {
    std::vector<RedisNode> lock;               // service "redis": the lock nodes
    std::unique_ptr<LockService> service;      // "zookeeper", "etcd": their servers
    std::vector<LockServer*> servers;          // the lock servers, by index, whichever service
    std::optional<RedisNode> store;
    std::optional<RedisNode> replica;          // topology "sentinel": lock0's replica
    std::optional<SentinelGroup> sentinels;
    std::unique_ptr<SentinelWatch> failover_log;  // what Sentinel announces, into sentinel.jsonl
    int repl_port = 0;                         // the replication proxy to lock0
};

void start_sentinels(Nodes& n, const fs::path& dir, const fs::path& run_dir) {
    n.sentinels.emplace(kMasterName, Endpoint{"127.0.0.1", n.repl_port}, dir / "sentinel", SentinelSettings{});
    n.failover_log = std::make_unique<SentinelWatch>(n.sentinels->endpoints().front(), run_dir / "sentinel.jsonl");
}

// Topology "sentinel": lock0 becomes a master with a replica behind the replication proxy,
// watched by Sentinel (one, see SentinelSettings), which knows the master by that proxy's
// address. The first Sentinel's announcements go to RUN_DIR/sentinel.jsonl.
void add_failover(Nodes& n, ProxyHub& hub, const fs::path& dir, const fs::path& run_dir, const RunSpec& run) {
    n.repl_port = hub.add("repl", {"127.0.0.1", n.lock[0].port()}).port();
    n.replica.emplace(RedisNodeConfig{"lock0-replica", std::nullopt, run.persistence,
                                      {"--replicaof", "127.0.0.1", std::to_string(n.repl_port)}},
                      dir);
    wait_for_replica_in_sync(n.replica->port(), n.lock[0].port(), std::chrono::seconds(5));
    start_sentinels(n, dir, run_dir);
}

// Sentinel begins the run with a clean record. One that saw the master down while the
// machine was busy setting up (its pings answered late) has tried a failover already, and
// tries none again for twice its failover timeout: past the run's crash. So right before the
// clients start, a Sentinel that has announced anything is replaced by a fresh one, which
// must then stay quiet for twice its down-after time (three tries, then the run fails).
void settle_sentinels(Nodes& n, const fs::path& dir, const fs::path& run_dir) {
    const SentinelSettings settings;
    for (int attempt = 1; n.failover_log->heard() > 0; ++attempt) {
        if (attempt > 3)
            throw std::runtime_error("Sentinel saw the master down before the run began, three times (a machine too busy "
                                     "to answer its pings within " + std::to_string(settings.down_after_ms) + " ms)");
        n.failover_log.reset();
        n.sentinels.reset();
        start_sentinels(n, dir, run_dir);
        std::this_thread::sleep_for(std::chrono::milliseconds(2 * settings.down_after_ms));
    }
}

// One clock control per process when some fault skews that kind of process; none otherwise,
// so that runs without clock faults do not load the shim at all.
std::vector<ClockControl> make_clocks(bool wanted, int count, const fs::path& dir, const std::string& label) {
    std::vector<ClockControl> clocks;
    for (int i = 0; wanted && i < count; ++i) clocks.emplace_back(dir, label + std::to_string(i));
    return clocks;
}

std::vector<ClockControl*> pointers(std::vector<ClockControl>& clocks) {
    std::vector<ClockControl*> out;
    for (auto& c : clocks) out.push_back(&c);
    return out;
}

std::vector<std::string> clock_env(const std::vector<ClockControl>& clocks, int i) {
    return clocks.empty() ? std::vector<std::string>{} : clocks[static_cast<size_t>(i)].env();
}

// A service whose servers the run does not start itself (service.h: run_starts_nodes): it starts them on free ports (each has several), under
// the clock shim where a fault skews them, their peer links through `peers` when given.
// `keep`: none of the run's faults reaches a server, so the matrix's pool may give it servers
// kept from an earlier run (sim/live/server_pool.h) rather than have it start its own.
void start_service(Nodes& n, const RunSpec& run, const fs::path& dir, const std::vector<ClockControl>& clocks,
                   ProxyHub* peers, bool keep) {
    ServiceConfig config{run.nodes, dir, {}, peers, run.server_settings, run.pgbouncer, run.server, run.params.integer("ttl_ms")};
    for (int i = 0; i < run.nodes; ++i) config.env.push_back(clock_env(clocks, i));
    if (keep) n.service = take_kept_service(run.service, config);
    if (!n.service) n.service = lockbench::start_service(run.service, config);
    n.servers = n.service->servers();
}

Nodes start_nodes(const RunSpec& run, std::optional<int> base_port, const fs::path& dir,
                  const std::vector<ClockControl>& clocks, ProxyHub* peers, bool keep) {
    const auto port = [&](int i) { return base_port ? std::optional<int>(*base_port + i) : std::nullopt; };
    Nodes n;
    const int count = run.nodes;
    if (!service_info(run.service).run_starts_nodes) {
        start_service(n, run, dir, clocks, peers, keep);
        n.store.emplace(RedisNodeConfig{"store", port(count)}, dir);
        return n;
    }
    // A master syncs its replica at once rather than after the default 5 s wait.
    const std::vector<std::string> master_args{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"};
    for (int i = 0; i < count; ++i)
        n.lock.emplace_back(RedisNodeConfig{"lock" + std::to_string(i), port(i), run.persistence,
                                            run.sentinel ? master_args : std::vector<std::string>{}, clock_env(clocks, i)},
                            dir);
    for (auto& node : n.lock) n.servers.push_back(&node);
    n.store.emplace(RedisNodeConfig{"store", port(count)}, dir);
    return n;
}

// What Sentinel tells a client of topology "sentinel": the Sentinels' ports, and this client's
// own way to each server they may name ("127.0.0.1:PORT" → its port).
SentinelPorts sentinel_discovery(const Nodes& nodes, int lock0_port) {
    SentinelPorts d;
    for (const auto& e : nodes.sentinels->endpoints()) d.sentinels.push_back(e.port);
    d.address_map = {{"127.0.0.1:" + std::to_string(nodes.repl_port), lock0_port},
                     {"127.0.0.1:" + std::to_string(nodes.replica->port()), nodes.replica->port()}};
    return d;
}

// An adapter that wrote nothing on stderr leaves no file; a folder left empty goes too.
void drop_empty_files(const fs::path& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (!e.is_regular_file(ec)) continue;
        const auto size = fs::file_size(e.path(), ec);
        if (ec) continue;
        if (size == 0) fs::remove(e.path(), ec);
        // Cut at the cap (ExternalLock: RLIMIT_FSIZE): what came after it is lost, and said so.
        else if (size >= kAdapterFileCapBytes)
            std::ofstream(e.path(), std::ios::app) << "\n[lockbench: cut at " << (kAdapterFileCapBytes >> 20)
                                                   << " MiB: the adapter wrote more, which is lost]\n";
    }
    if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

// Before any client starts: the adapter starts and says it is ready, or the run fails in
// one line (a missing library names the command that installs it). The check is a child like
// every other (process/process.h: its own process group, dies with lockbench, inherits no
// descriptor, killed on Ctrl-C): `lockbench client` with a spec that only starts the adapter,
// which is then that child's child, in its group.
// Returns what the adapter's ready line said about its library (ExternalLock::described).
nlohmann::json preflight_adapter(const Scenario& s, const RunSpec& run, const Nodes& nodes, const LiveRunOptions& opts,
                                 const fs::path& tmp, const fs::path& run_dir, const std::optional<nlohmann::json>& check = {}) {
    ClientSpec spec;
    spec.preflight = true;
    spec.check = check;
    spec.run = run.source;
    spec.lock_key = s.lock_key;
    for (const LockServer* n : nodes.servers) spec.lock_ports.push_back(n->port());
    spec.project_dir = opts.project_dir.string();
    spec.adapter_stderr = (run_dir / "adapter" / "preflight.stderr").string();
    spec.adapter_described = (tmp / (run.name + ".adapter.json")).string();
    if (nodes.sentinels) spec.discovery = sentinel_discovery(nodes, spec.lock_ports.at(0));
    if (nodes.service) spec.adapter_env = nodes.service->client_env();
    const fs::path spec_file = tmp / (run.name + ".preflight.json");
    std::ofstream(spec_file) << to_json(spec).dump();
    const fs::path log = tmp / (run.name + ".preflight.log");
    ChildProcess child = ChildProcess::spawn({{opts.self_exe, "client", spec_file.string()}, log.string(), log.string()});
    // The adapter has max(its operation timeout, 10 s) to say it is ready (external.cpp);
    // its operation timeout is ten command timeouts, and the check gets 5 s more to end. A
    // protocol check starts two and makes eight requests of them.
    const long long ready_ms = std::max(10LL * run.timeouts.command_ms, 10000LL);
    const auto limit = std::chrono::milliseconds(check ? 2 * ready_ms + 8 * 10 * run.timeouts.command_ms + 5000 : ready_ms + 5000);
    const std::optional<int> status = child.wait_for(limit);
    if (!status)
        throw std::runtime_error("run " + run.name + ": the adapter check did not end within " +
                                 std::to_string(limit.count()) + " ms; its log: " + tail_of(log));
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
        nlohmann::json described = nlohmann::json::parse(std::ifstream(spec.adapter_described), nullptr, false);
        return described.is_object() ? described : nlohmann::json::object();
    }
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == kAdapterFailed)
        throw std::runtime_error("run " + run.name + ": " + last_line_of(log));
    throw std::runtime_error("run " + run.name + ": the adapter check failed: " + tail_of(log));
}

struct Launch {
    std::uint64_t seed = 0;
    std::filesystem::path start_barrier;                 // StartBarrier's prefix
    const Nemesis* nemesis = nullptr;
    const std::vector<ClockControl>* clocks = nullptr;   // the clients', if skewed
    ProxyHub* proxies = nullptr;                         // every client's own paths, if any
    fs::path project_dir;                                // where an adapter's command runs
    fs::path adapter_described;                          // without a preflight: where client 0 says what its adapter is
};

// The port client `client` dials for `target` ("n<i>" or "store"): its own proxy when the
// run has link faults, else the node itself.
int port_for(const Launch& launch, int client, const std::string& target, int direct) {
    LinkProxy* own = launch.proxies ? launch.proxies->find("c" + std::to_string(client) + "-" + target) : nullptr;
    return own ? own->port() : direct;
}

// One proxy per client and node, so that a fault can cut one client off from some nodes.
void add_proxies(ProxyHub& hub, const Nodes& nodes, int clients) {
    for (int c = 0; c < clients; ++c) {
        for (size_t i = 0; i < nodes.servers.size(); ++i)
            hub.add("c" + std::to_string(c) + "-n" + std::to_string(i), {"127.0.0.1", nodes.servers[i]->port()});
        hub.add("c" + std::to_string(c) + "-store", {"127.0.0.1", nodes.store->port()});
    }
}

ClientSpec client_spec(const Scenario& s, const RunSpec& run, const Nodes& nodes, int client, const Launch& launch,
                       const fs::path& run_dir) {
    ClientSpec spec;
    spec.run = run.source;
    spec.lock_key = s.lock_key;
    spec.client = client;
    spec.seed = client_seed(launch.seed, client);
    for (size_t i = 0; i < nodes.servers.size(); ++i)
        spec.lock_ports.push_back(port_for(launch, client, "n" + std::to_string(i), nodes.servers[i]->port()));
    spec.store_port = port_for(launch, client, "store", nodes.store->port());
    spec.start_barrier = launch.start_barrier.string();
    spec.control_socket = launch.nemesis->socket_path().string();
    spec.armed = launch.nemesis->armed_points();
    spec.history = (run_dir / "history" / ("client-" + std::to_string(client) + ".jsonl")).string();
    if (!run.command.empty())
        spec.adapter_stderr = (run_dir / "adapter" / ("client-" + std::to_string(client) + ".stderr")).string();
    spec.project_dir = launch.project_dir.string();
    if (client == 0) spec.adapter_described = launch.adapter_described.string();
    // What the Sentinels will name, and this client's own way to each.
    if (nodes.sentinels) spec.discovery = sentinel_discovery(nodes, spec.lock_ports.at(0));
    if (nodes.service) spec.adapter_env = nodes.service->client_env();
    return spec;
}

std::vector<ChildProcess> spawn_clients(const Scenario& s, const RunSpec& run, const Nodes& nodes,
                                        const Launch& launch, const fs::path& run_dir, const fs::path& tmp,
                                        const std::string& self_exe) {
    std::vector<ChildProcess> children;
    for (int c = 0; c < run.workload.clients; ++c) {
        const fs::path spec = tmp / (run.name + ".client-" + std::to_string(c) + ".json");
        std::ofstream(spec) << to_json(client_spec(s, run, nodes, c, launch, run_dir)).dump();
        const std::string log = (tmp / (run.name + ".client-" + std::to_string(c) + ".log")).string();
        // A shifted clock is a shim in the client's environment, which its adapter must have:
        // that client starts its own, not one from the matrix's pool.
        std::vector<std::string> env = clock_env(*launch.clocks, c);
        if (!env.empty()) env.push_back(std::string(kAdapterPoolVar) + "=");
        children.push_back(ChildProcess::spawn({{self_exe, "client", spec.string()}, log, log, env}));
    }
    return children;
}

// Waits until every client has ended, reaping none: the nemesis heals by signalling each
// client's group, and until it has stopped a client's pid (its group's id) must stay its own,
// not a stranger's that got it since.
void wait_until_clients_end(std::vector<ChildProcess>& children, const RunSpec& run, const fs::path& tmp,
                            const fs::path& run_dir) {
    const auto limit = std::chrono::milliseconds(run.workload.longest_ms() + 30000);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (size_t c = 0; c < children.size(); ++c) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (!wait_exited(children[c].pid(), std::max(left, std::chrono::milliseconds(0))))
            throw std::runtime_error("run " + run.name + ": client " + std::to_string(c) + " did not finish within " +
                                     std::to_string(limit.count()) + " ms; its log: " +
                                     tail_of(tmp / (run.name + ".client-" + std::to_string(c) + ".log")) +
                                     "; the last line of its history (where it stopped): " +
                                     last_line_of(run_dir / "history" / ("client-" + std::to_string(c) + ".jsonl")));
    }
}

// Reaps every client, which has ended (wait_until_clients_end). A client whose adapter failed
// is recorded, {client, error}, and the run goes on without it; any other failure fails the run.
std::vector<ClientFailure> reap_clients(std::vector<ChildProcess>& children, const RunSpec& run, const fs::path& tmp,
                                        const Nemesis& nemesis) {
    std::vector<ClientFailure> failed;
    for (size_t c = 0; c < children.size(); ++c) {
        const std::optional<int> status = children[c].wait_for(std::chrono::seconds(10));
        const fs::path log = tmp / (run.name + ".client-" + std::to_string(c) + ".log");
        if (!status) throw std::runtime_error("run " + run.name + ": client " + std::to_string(c) + " did not end: " + tail_of(log));
        const bool killed_on_purpose = WIFSIGNALED(*status) && nemesis.killed(static_cast<int>(c));
        if (WIFEXITED(*status) && WEXITSTATUS(*status) == kAdapterFailed && !run.command.empty()) {
            const std::string last = last_line_of(log);
            std::cerr << "lockbench: run " << run.name << ": client " << c << ": " << last << "\n";
            failed.push_back({static_cast<int>(c), last});
            continue;
        }
        if (!killed_on_purpose && (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0))
            throw std::runtime_error("run " + run.name + ": client " + std::to_string(c) + " failed: " + tail_of(log));
    }
    return failed;
}

// Reads the store's log (in the store's order) into store.jsonl; returns the final counter.
long long export_store(const RedisNode& store, const fs::path& run_dir) {
    LiveEnv env({{{"127.0.0.1", store.port()}}});
    const auto timeout = std::chrono::seconds(10);
    const Reply log = env.command(NodeId{0}, store_log_command(), timeout, std::nullopt);
    const Reply counter = env.command(NodeId{0}, store_counter_command(), timeout, std::nullopt);
    if (!log.ok() || !counter.ok()) throw std::runtime_error("cannot read the store's log: " + log.error + counter.error);
    return write_store_log(run_dir, log.value, counter.value);
}

// A ZooKeeper's or etcd's own log is evidence (an election, a session expired, a clock that
// jumped): each server's goes to runs/<name>/servers/<server>.log.
void keep_server_logs(const std::vector<LockServer*>& servers, const fs::path& run_dir) {
    fs::create_directories(run_dir / "servers");
    for (const LockServer* s : servers) {
        std::ofstream(run_dir / "servers" / (s->name() + ".log"), std::ios::binary) << read_from(s->log_path(), s->log_from());
    }
}

// The nodes on the scenario's base_port when it gives one: a port in use there is the file's
// field to change, and the message says which.
Nodes start_scenario_nodes(const Scenario& s, const RunSpec& run, const fs::path& dir,
                           const std::vector<ClockControl>& clocks, ProxyHub* peers, bool keep) {
    try {
        return start_nodes(run, s.base_port, dir, clocks, peers, keep);
    } catch (const PortInUse& e) {
        if (!s.base_port) throw;
        throw std::runtime_error(s.path + ": base_port " + std::to_string(*s.base_port) + ": " + e.what());
    }
}

}  // namespace

std::vector<std::string> check_adapter(const Scenario& s, const RunSpec& run, const nlohmann::json& plan,
                                       const fs::path& tmp, const LiveRunOptions& opts) {
    const fs::path node_dir = tmp / run.name;
    fs::create_directories(node_dir / "adapter");
    Nodes nodes = start_scenario_nodes(s, run, node_dir, {}, nullptr, true);
    const nlohmann::json out = preflight_adapter(s, run, nodes, opts, tmp, node_dir, plan);
    return out.value("failures", std::vector<std::string>{"the check wrote no result"});
}

RunOutcome run_live(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                    const fs::path& tmp, const LiveRunOptions& opts, const std::function<void()>& started) {
    RunOutcome out;
    PhaseClock unused;
    PhaseClock& clock = opts.clock ? *opts.clock : unused;
    const fs::path node_dir = tmp / run.name;
    fs::create_directories(run_dir / "history");
    Nemesis nemesis(run.faults, tmp / "nemesis.sock", run_dir / "nemesis.jsonl");
    nemesis.set_start_after(run.workload.start_after);
    std::vector<ClockControl> node_clocks = make_clocks(nemesis.skews_nodes(), run.nodes, tmp, run.name + ".node");
    std::vector<ClockControl> client_clocks = make_clocks(nemesis.skews_clients(), run.workload.clients, tmp, run.name + ".client");
    nemesis.set_clocks(pointers(client_clocks), pointers(node_clocks));
    std::optional<ProxyHub> proxies;
    if (nemesis.needs_proxies() || nemesis.needs_peer_proxies() || run.sentinel) proxies.emplace(seed);
    Nodes nodes = start_scenario_nodes(s, run, node_dir, node_clocks, nemesis.needs_peer_proxies() ? &*proxies : nullptr,
                                       !nemesis.reaches_servers());
    if (nemesis.needs_proxies()) add_proxies(*proxies, nodes, run.workload.clients);
    if (run.sentinel) add_failover(nodes, *proxies, node_dir, run_dir, run);
    clock.mark("servers");
    nemesis.set_world(proxies ? &*proxies : nullptr, nodes.servers, nodes.service.get());
    nemesis.set_store_port(nodes.store->port());
    // Whatever happens next, the fault thread stops (and heals) before the proxies and the
    // nodes it works on go away.
    struct StopFirst {
        Nemesis& nemesis;
        ~StopFirst() { nemesis.stop(); }
    } stop_first{nemesis};
    nlohmann::json adapter;
    const fs::path described_by_client = opts.preflight ? fs::path() : tmp / (run.name + ".client-0.adapter.json");
    if (!run.command.empty()) {
        fs::create_directories(run_dir / "adapter");  // each adapter's stderr: a library's warnings are evidence
        if (opts.preflight) {
            adapter = preflight_adapter(s, run, nodes, opts, tmp, run_dir);
            clock.mark("adapter_check");
        }
    }
    if (nodes.sentinels) settle_sentinels(nodes, node_dir, run_dir);
    started();
    StartBarrier barrier(tmp / (run.name + ".start"));
    // Open until the nemesis has stopped: an adapter a client gives back before then is not
    // another run's yet (adapter_pool.h).
    PoolRun pool_run(barrier.prefix().string());
    const Launch launch{seed, barrier.prefix(), &nemesis, &client_clocks, proxies ? &*proxies : nullptr,
                        opts.project_dir, run.command.empty() ? fs::path() : described_by_client};
    std::vector<ChildProcess> clients = spawn_clients(s, run, nodes, launch, run_dir, tmp, opts.self_exe);
    // Destroyed before the clients are (killed and reaped): the nemesis's heal signals their
    // groups while their pids are still theirs.
    StopFirst stop_before_reaping{nemesis};
    std::vector<pid_t> pids;
    for (const auto& c : clients) pids.push_back(c.pid());
    // Every client starts at the same instant, once all have built their locks (an adapter
    // start-up can take seconds on a busy machine), so none gets a head start.
    try {
        barrier.wait_ready(run.workload.clients, [&](int c) { return clients[static_cast<size_t>(c)].running(); },
                           std::chrono::seconds(60));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error("run " + run.name + ": " + e.what());
    }
    clock.mark("clients_ready");
    // A client whose adapter came from the pool has said which group that adapter leads: a
    // pause or a kill of the client reaches it too.
    std::vector<pid_t> adapter_groups(pids.size(), 0);
    for (size_t c = 0; c < pids.size(); ++c) {
        std::ifstream said(adapter_group_file(barrier.prefix(), static_cast<int>(c)));
        said >> adapter_groups[c];
    }
    nemesis.set_adapter_groups(std::move(adapter_groups));
    const long long start_at_ns = monotonic_ns() + (20 + 2LL * run.workload.clients) * 1000000LL;
    nemesis.start(pids, start_at_ns, seed);
    barrier.release(start_at_ns);
    wait_until_clients_end(clients, run, tmp, run_dir);
    clock.mark("workload");
    nemesis.stop();
    pool_run.end();
    clock.mark("heal");
    std::vector<ClientFailure> failed_clients = reap_clients(clients, run, tmp, nemesis);
    if (!described_by_client.empty() && !run.command.empty()) {
        const nlohmann::json said = nlohmann::json::parse(std::ifstream(described_by_client), nullptr, false);
        if (said.is_object()) adapter = said;
    }
    out.adapter = std::move(adapter);
    if (!run.command.empty()) drop_empty_files(run_dir / "adapter");
    out.clients_failed = std::move(failed_clients);
    out.faults = nemesis.report();
    out.faults_injected = nemesis.injected();
    out.unmet = nemesis.unmet();
    out.final_counter = export_store(*nodes.store, run_dir);
    if (nodes.service) {
        // Asking who leads has each ZooKeeper server log "Processing srvr command" now, stamped
        // by its own wall clock: a clock step shows in its log even when nothing else logged.
        nodes.service->leader();
        keep_server_logs(nodes.servers, run_dir);
    }
    clock.mark("collect");
    return out;
}


}  // namespace lockbench
