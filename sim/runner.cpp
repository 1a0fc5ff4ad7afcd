#include "sim/runner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include "analysis/history_io.h"
#include "analysis/report_data.h"
#include "sim/external.h"
#include "sim/sim_run.h"
#include "sim/live_env.h"
#include "faults/clock_control.h"
#include "faults/link_proxy.h"
#include "sim/nemesis.h"
#include "sim/sentinel.h"
#include "sim/redis_node.h"
#include "sim/results_folder.h"
#include "sim/start_barrier.h"
#include "sim/summary.h"
#include "sim/worker.h"

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
    std::vector<RedisNode> lock;
    std::optional<RedisNode> store;
    std::optional<RedisNode> replica;          // topology "sentinel": lock0's replica
    std::optional<SentinelGroup> sentinels;
    std::unique_ptr<SentinelWatch> failover_log;  // what Sentinel announces, into sentinel.jsonl
    int repl_port = 0;                         // the replication proxy to lock0
};

const char* const kMasterName = "lockbench";

// Topology "sentinel": lock0 becomes a master with a replica behind the replication proxy,
// watched by Sentinel (one, see SentinelSettings), which knows the master by that proxy's
// address. The first Sentinel's announcements go to RUN_DIR/sentinel.jsonl.
void add_failover(Nodes& n, ProxyHub& hub, const fs::path& dir, const fs::path& run_dir, const RunSpec& run) {
    n.repl_port = hub.add("repl", {"127.0.0.1", n.lock[0].port()}).port();
    n.replica.emplace(RedisNodeConfig{"lock0-replica", std::nullopt, run.persistence,
                                      {"--replicaof", "127.0.0.1", std::to_string(n.repl_port)}},
                      dir);
    wait_for_replica_in_sync(n.replica->port(), std::chrono::seconds(5));
    n.sentinels.emplace(kMasterName, Endpoint{"127.0.0.1", n.repl_port}, dir / "sentinel", SentinelSettings{});
    n.failover_log = std::make_unique<SentinelWatch>(n.sentinels->endpoints().front(), run_dir / "sentinel.jsonl");
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

Nodes start_nodes(const RunSpec& run, std::optional<int> base_port, const fs::path& dir,
                  const std::vector<ClockControl>& clocks) {
    const auto port = [&](int i) { return base_port ? std::optional<int>(*base_port + i) : std::nullopt; };
    Nodes n;
    const int count = run.nodes;
    // A master syncs its replica at once rather than after the default 5 s wait.
    const std::vector<std::string> master_args{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"};
    for (int i = 0; i < count; ++i)
        n.lock.emplace_back(RedisNodeConfig{"lock" + std::to_string(i), port(i), run.persistence,
                                            run.sentinel ? master_args : std::vector<std::string>{}, clock_env(clocks, i)},
                            dir);
    n.store.emplace(RedisNodeConfig{"store", port(count)}, dir);
    return n;
}

// What Sentinel tells a client of topology "sentinel": the Sentinels' ports, and this client's
// own way to each server they may name ("127.0.0.1:PORT" → its port).
nlohmann::json sentinel_discovery(const Nodes& nodes, int lock0_port) {
    nlohmann::json sentinels = nlohmann::json::array();
    for (const auto& e : nodes.sentinels->endpoints()) sentinels.push_back(e.port);
    return {{"sentinels", sentinels},
            {"address_map", {{"127.0.0.1:" + std::to_string(nodes.repl_port), lock0_port},
                             {"127.0.0.1:" + std::to_string(nodes.replica->port()), nodes.replica->port()}}}};
}

// An external run's lock: the adapter, told the paths to the nodes (`ports`, this client's own)
// and, under Sentinel, where to ask for the master (`discovery`, as sentinel_discovery gives).
std::unique_ptr<ExternalLock> make_external(const Scenario& s, const RunSpec& run, const std::vector<int>& ports,
                                            int client, const fs::path& project_dir, const nlohmann::json& discovery,
                                            const fs::path& stderr_path = {}) {
    std::string nodes;
    for (int p : ports) nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
    const long long ttl_ms = run.params.integer("ttl_ms");
    AdapterSpec a{run.name, run.command, project_dir,
                  {{"LOCKBENCH_NODES", nodes},
                   {"LOCKBENCH_KEY", s.lock_key},
                   {"LOCKBENCH_CLIENT", std::to_string(client)},
                   {"LOCKBENCH_TTL_MS", std::to_string(ttl_ms)},
                   {"LOCKBENCH_PARAMS", run.params.json().dump()},
                   {"LOCKBENCH_COMMAND_TIMEOUT_MS", std::to_string(s.command_timeout_ms)},
                   {"LOCKBENCH_OP_TIMEOUT_MS", std::to_string(10 * s.command_timeout_ms)},
                   {"LOCKBENCH_CONNECT_TIMEOUT_MS", std::to_string(s.connect_timeout_ms)}},
                  std::chrono::milliseconds(10 * s.command_timeout_ms), stderr_path};
    if (discovery.is_object()) {
        std::string sentinels;
        for (const auto& p : discovery.at("sentinels"))
            sentinels += (sentinels.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p.get<int>());
        nlohmann::json moved = nlohmann::json::object();
        for (const auto& [addr, port] : discovery.at("address_map").items())
            moved[addr] = "127.0.0.1:" + std::to_string(port.get<int>());
        a.env["LOCKBENCH_SENTINELS"] = sentinels;
        a.env["LOCKBENCH_MASTER_NAME"] = kMasterName;
        a.env["LOCKBENCH_ADDRESS_MAP"] = moved.dump();
    }
    return std::make_unique<ExternalLock>(std::move(a), s.lock_key, ttl_ms);
}

// Before any client starts: the adapter starts and says it is ready, or the run fails in
// one line (a missing library names the command that installs it). The check is a child like
// every other (faults/process.h: its own process group, dies with lockbench, inherits no
// descriptor, killed on Ctrl-C): `lockbench client` with a spec that only starts the adapter,
// which is then that child's child, in its group.
void preflight_adapter(const Scenario& s, const RunSpec& run, const Nodes& nodes, const RunOptions& opts,
                       const fs::path& tmp) {
    std::vector<int> ports;
    for (const auto& n : nodes.lock) ports.push_back(n.port());
    nlohmann::json spec = {{"preflight", true}, {"scenario", s.source}, {"scenario_path", s.path}, {"run", run.name},
                           {"lock_ports", ports}, {"project_dir", opts.project_dir.string()},
                           {"adapter_stderr", (tmp / (run.name + ".adapter-preflight.log")).string()}};
    if (nodes.sentinels) spec.update(sentinel_discovery(nodes, ports.at(0)));
    const fs::path spec_file = tmp / (run.name + ".preflight.json");
    std::ofstream(spec_file) << spec.dump();
    const fs::path log = tmp / (run.name + ".preflight.log");
    ChildProcess check = ChildProcess::spawn({{opts.self_exe, "client", spec_file.string()}, log.string(), log.string()});
    // The adapter has max(its operation timeout, 10 s) to say it is ready (external.cpp);
    // its operation timeout is ten command timeouts, and the check gets 5 s more to end.
    const auto limit = std::chrono::milliseconds(std::max(10LL * s.command_timeout_ms, 10000LL) + 5000);
    const std::optional<int> status = check.wait_for(limit);
    if (!status)
        throw std::runtime_error("run " + run.name + ": the adapter check did not end within " +
                                 std::to_string(limit.count()) + " ms; its log: " + tail_of(log));
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return;
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == kAdapterFailed)
        throw std::runtime_error("run " + run.name + ": " + last_line_of(log));
    throw std::runtime_error("run " + run.name + ": the adapter check failed: " + tail_of(log));
}

// What a client spec says Sentinel will name (see sentinel_discovery); null without Sentinel.
nlohmann::json discovery_of(const nlohmann::json& spec) {
    if (!spec.contains("sentinels")) return {};
    return {{"sentinels", spec.at("sentinels")}, {"address_map", spec.at("address_map")}};
}

// `lockbench client` for preflight_adapter: starts the adapter, waits for it to be ready, ends it.
int preflight_main(const Scenario& s, const RunSpec& run, const nlohmann::json& spec) {
    try {
        make_external(s, run, spec.at("lock_ports").get<std::vector<int>>(), -1, spec.value("project_dir", std::string()),
                      discovery_of(spec), spec.at("adapter_stderr").get<std::string>());
    } catch (const AdapterError& e) {
        std::cerr << e.what() << "\n";
        return kAdapterFailed;
    }
    return 0;
}

struct Launch {
    std::uint64_t seed = 0;
    std::filesystem::path start_barrier;                 // StartBarrier's prefix
    const Nemesis* nemesis = nullptr;
    const std::vector<ClockControl>* clocks = nullptr;   // the clients', if skewed
    ProxyHub* proxies = nullptr;                         // every client's own paths, if any
    fs::path project_dir;                                // where an adapter's command runs
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
        for (size_t i = 0; i < nodes.lock.size(); ++i)
            hub.add("c" + std::to_string(c) + "-n" + std::to_string(i), {"127.0.0.1", nodes.lock[i].port()});
        hub.add("c" + std::to_string(c) + "-store", {"127.0.0.1", nodes.store->port()});
    }
}

nlohmann::json client_spec(const Scenario& s, const RunSpec& run, const Nodes& nodes, int client,
                           const Launch& launch, const fs::path& run_dir) {
    nlohmann::json ports = nlohmann::json::array();
    for (size_t i = 0; i < nodes.lock.size(); ++i)
        ports.push_back(port_for(launch, client, "n" + std::to_string(i), nodes.lock[i].port()));
    nlohmann::json spec = {{"scenario", s.source}, {"scenario_path", s.path}, {"run", run.name}, {"client", client},
            {"seed", derive_seed(launch.seed, 1000 + static_cast<std::uint64_t>(client))}, {"lock_ports", ports},
            {"store_port", port_for(launch, client, "store", nodes.store->port())}, {"start_barrier", launch.start_barrier.string()},
            {"control_socket", launch.nemesis->socket_path().string()}, {"armed", launch.nemesis->armed_points()},
            {"history", (run_dir / "history" / ("client-" + std::to_string(client) + ".jsonl")).string()},
            {"project_dir", launch.project_dir.string()}};
    if (nodes.sentinels) {
        // What the Sentinels will name, and this client's own way to each.
        const nlohmann::json d = sentinel_discovery(nodes, ports[0]);
        spec["sentinels"] = d.at("sentinels");
        spec["address_map"] = d.at("address_map");
    }
    return spec;
}

std::vector<ChildProcess> spawn_clients(const Scenario& s, const RunSpec& run, const Nodes& nodes,
                                        const Launch& launch, const fs::path& run_dir, const fs::path& tmp,
                                        const std::string& self_exe) {
    std::vector<ChildProcess> children;
    for (int c = 0; c < s.workload.clients; ++c) {
        const fs::path spec = tmp / (run.name + ".client-" + std::to_string(c) + ".json");
        std::ofstream(spec) << client_spec(s, run, nodes, c, launch, run_dir).dump();
        const std::string log = (tmp / (run.name + ".client-" + std::to_string(c) + ".log")).string();
        children.push_back(ChildProcess::spawn({{self_exe, "client", spec.string()}, log, log, clock_env(*launch.clocks, c)}));
    }
    return children;
}

// Waits for every client. A client whose adapter failed is recorded, {client, error}, and
// the run goes on without it; any other failure fails the run.
nlohmann::json wait_for_clients(std::vector<ChildProcess>& children, const Scenario& s, const RunSpec& run,
                                const fs::path& tmp, const Nemesis& nemesis) {
    nlohmann::json failed = nlohmann::json::array();
    const auto limit = std::chrono::milliseconds(s.workload.duration_ms + 30000);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (size_t c = 0; c < children.size(); ++c) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        const std::optional<int> status = children[c].wait_for(std::max(left, std::chrono::milliseconds(0)));
        const fs::path log = tmp / (run.name + ".client-" + std::to_string(c) + ".log");
        if (!status)
            throw std::runtime_error("run " + run.name + ": client " + std::to_string(c) + " did not finish within " +
                                     std::to_string(limit.count()) + " ms; its log: " + tail_of(log));
        const bool killed_on_purpose = WIFSIGNALED(*status) && nemesis.killed(static_cast<int>(c));
        if (WIFEXITED(*status) && WEXITSTATUS(*status) == kAdapterFailed && !run.command.empty()) {
            const std::string last = last_line_of(log);
            std::cerr << "lockbench: run " << run.name << ": client " << c << ": " << last << "\n";
            failed.push_back({{"client", c}, {"error", last}});
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
    const Reply log = env.command(NodeId{0}, {"LRANGE", "lockbench:log", "0", "-1"}, timeout, std::nullopt);
    const Reply counter = env.command(NodeId{0}, {"GET", "lockbench:counter"}, timeout, std::nullopt);
    if (!log.ok() || !counter.ok()) throw std::runtime_error("cannot read the store's log: " + log.error + counter.error);
    std::ofstream out(run_dir / "store.jsonl");
    for (const Value& e : log.value.elements) out << e.str << '\n';
    return counter.value.is_nil() ? 0 : std::stoll(counter.value.str);
}

nlohmann::json run_record(const Scenario& s, const RunSpec& run, std::uint64_t seed) {
    nlohmann::json expect = nlohmann::json::array();
    for (const auto& e : run.expect) expect.push_back({{"metric", e.metric}, {"op", e.op}, {"value", e.value}});
    return {{"name", run.name}, {"algorithm", run.algorithm->name}, {"params", run.params.json()},
            {"nodes", run.nodes}, {"clients", s.workload.clients}, {"seed", seed}, {"scenario", s.name},
            {"lock_key", s.lock_key}, {"expect", expect}, {"workload", s.source.value("workload", nlohmann::json::object())},
            {"command_timeout_ms", s.command_timeout_ms}, {"connect_timeout_ms", s.connect_timeout_ms}};
}

nlohmann::json execute_run(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                           const fs::path& tmp, const RunOptions& opts, const std::function<void()>& started) {
    const fs::path node_dir = tmp / run.name;
    fs::create_directories(run_dir / "history");
    Nemesis nemesis(run.faults, tmp / "nemesis.sock", run_dir / "nemesis.jsonl");
    std::vector<ClockControl> node_clocks = make_clocks(nemesis.skews_nodes(), run.nodes, tmp, run.name + ".node");
    std::vector<ClockControl> client_clocks = make_clocks(nemesis.skews_clients(), s.workload.clients, tmp, run.name + ".client");
    nemesis.set_clocks(pointers(client_clocks), pointers(node_clocks));
    Nodes nodes = start_nodes(run, s.base_port, node_dir, node_clocks);
    std::optional<ProxyHub> proxies;
    if (nemesis.needs_proxies()) add_proxies(proxies.emplace(seed), nodes, s.workload.clients);
    if (run.sentinel) add_failover(nodes, proxies ? *proxies : proxies.emplace(seed), node_dir, run_dir, run);
    std::vector<RedisNode*> lock_nodes;
    for (auto& n : nodes.lock) lock_nodes.push_back(&n);
    nemesis.set_world(proxies ? &*proxies : nullptr, lock_nodes);
    // Whatever happens next, the fault thread stops (and heals) before the proxies and the
    // nodes it works on go away.
    struct StopFirst {
        Nemesis& nemesis;
        ~StopFirst() { nemesis.stop(); }
    } stop_first{nemesis};
    if (!run.command.empty()) preflight_adapter(s, run, nodes, opts, tmp);
    started();
    StartBarrier barrier(tmp / (run.name + ".start"));
    const Launch launch{seed, barrier.prefix(), &nemesis, &client_clocks, proxies ? &*proxies : nullptr,
                        opts.project_dir};
    std::vector<ChildProcess> clients = spawn_clients(s, run, nodes, launch, run_dir, tmp, opts.self_exe);
    std::vector<pid_t> pids;
    for (const auto& c : clients) pids.push_back(c.pid());
    // Every client starts at the same instant, once all have built their locks (an adapter
    // start-up can take seconds on a busy machine), so none gets a head start.
    try {
        barrier.wait_ready(s.workload.clients, [&](int c) { return clients[static_cast<size_t>(c)].running(); },
                           std::chrono::seconds(60));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error("run " + run.name + ": " + e.what());
    }
    const long long start_at_ns = monotonic_ns() + (20 + 2LL * s.workload.clients) * 1000000LL;
    nemesis.start(pids, start_at_ns);
    barrier.release(start_at_ns);
    const nlohmann::json failed_clients = wait_for_clients(clients, s, run, tmp, nemesis);
    nemesis.stop();
    nlohmann::json record = run_record(s, run, seed);
    if (!run.command.empty()) record["command"] = run.command;
    if (!failed_clients.empty()) record["clients_failed"] = failed_clients;
    record["faults"] = nemesis.report();
    record["faults_injected"] = nemesis.injected();
    record["final_counter"] = export_store(*nodes.store, run_dir);
    write_atomically(run_dir / "run.json", record.dump(2) + "\n");
    return record;
}

// The run's summary entry; `sections` receives what the report draws (analysis/report_data.h).
nlohmann::json check_run(const fs::path& run_dir, const nlohmann::json& record, nlohmann::json& sections) {
    const RunHistory h = load_run_history(run_dir);
    const CheckResult r = check(h);
    sections = report_data_json(h, r);
    return run_summary(record, r, h);
}

// A run just made: checked, with what the report draws written beside its histories.
nlohmann::json check_new_run(const fs::path& run_dir, const nlohmann::json& record) {
    nlohmann::json sections;
    nlohmann::json summary = check_run(run_dir, record, sections);
    write_atomically(run_dir / kSectionsFile, sections.dump() + "\n");
    return summary;
}

bool announce(const RunOptions& opts, size_t i, size_t n, const RunSpec& run, const Scenario& s) {
    if (!opts.progress) return false;
    std::cerr << "lockbench: [" << i + 1 << "/" << n << "] " << run.name << ": " << s.workload.clients
              << " clients for " << s.workload.duration_ms << " ms on " << run.nodes << " lock node"
              << (run.nodes == 1 ? "" : "s") << " ..." << std::flush;
    return true;
}

}  // namespace

void write_atomically(const fs::path& path, const std::string& text) {
    const fs::path tmp = unique_temp_path(path);  // a name no other writer uses
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text;
        if (!out.flush()) {
            std::error_code ec;
            fs::remove(tmp, ec);
            throw std::runtime_error(path.string() + ": cannot write");
        }
    }
    fs::rename(tmp, path);
}

// The simulated run: the same record, history and checker, from sim::run_simulated.
nlohmann::json execute_simulated(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                                 const std::function<void()>& started) {
    started();
    const sim::SimRunResult r = sim::run_simulated(s, run, seed, run_dir);
    nlohmann::json record = run_record(s, run, seed);
    record["backend"] = "sim";
    record["faults"] = r.faults;
    record["faults_injected"] = r.faults_injected;
    record["final_counter"] = r.final_counter;
    record["sim_events"] = r.events;
    write_atomically(run_dir / "run.json", record.dump(2) + "\n");
    return record;
}

namespace {

// A run folder holds a run's results and nothing else: publishing replaces it as a whole.
void check_run_folder(const fs::path& out) {
    if (!fs::exists(out)) return;
    if (!fs::is_directory(out)) throw std::runtime_error(out.string() + ": exists and is not a folder; choose another --out");
    for (const auto& e : fs::directory_iterator(out)) {
        const std::string name = e.path().filename().string();
        const bool ours = name == "summary.json" || name == "scenario.json" || name == "runs" || name == kLockFileName ||
                          name.starts_with(".incomplete.") || name.find(".tmp.") != std::string::npos;
        if (!ours)
            throw std::runtime_error(out.string() + ": holds " + name + ", which is not part of a lockbench run's results " +
                                     "(a run replaces the whole folder); choose another --out");
    }
}

struct RunsDone {
    nlohmann::json runs = nlohmann::json::array();
    nlohmann::json skipped = nlohmann::json::array();  // runs the simulator cannot run
};

// Runs every run of the scenario into STAGING/runs/<name>/ and checks it.
RunsDone run_each(const Scenario& s, const RunOptions& opts, std::uint64_t seed, const fs::path& staging,
                  const fs::path& tmp) {
    RunsDone done;
    bool line_open = false;  // a progress line awaits its ending
    try {
        for (size_t i = 0; i < s.runs.size(); ++i) {
            const RunSpec& run = s.runs[i];
            const fs::path run_dir = staging / "runs" / run.name;
            const auto started = [&] { line_open = announce(opts, i, s.runs.size(), run, s); };
            if (opts.simulated) {
                if (const auto why = sim::unsupported(run)) {
                    if (opts.progress) std::cerr << "lockbench: [" << i + 1 << "/" << s.runs.size() << "] " << run.name
                                                 << ": skipped: " << *why << "\n";
                    done.skipped.push_back({{"name", run.name}, {"why", *why}});
                    continue;
                }
                done.runs.push_back(check_new_run(run_dir, execute_simulated(s, run, seed, run_dir, started)));
            } else {
                done.runs.push_back(check_new_run(run_dir, execute_run(s, run, seed, run_dir, tmp, opts, started)));
            }
            if (line_open) {
                const auto v = done.runs.back()["safety"]["mutual_exclusion_violations"].get<long long>();
                std::cerr << " " << done.runs.back()["ops"]["sections_completed"] << " sections, " << v
                          << (v == 1 ? " violation\n" : " violations\n");
            }
            line_open = false;
        }
    } catch (...) {
        if (line_open) std::cerr << " failed\n";
        throw;
    }
    return done;
}

}  // namespace

// The new results are built whole in a staging folder beside OUT and switched in at once
// (results_folder.h): at every instant OUT holds the old results or the new ones.
nlohmann::json run_scenario(const Scenario& s, const RunOptions& opts) {
    if (!opts.simulated) redis_server_binary();  // fails here, in one line, before anything is written
    check_run_folder(opts.out);
    const std::uint64_t seed = opts.seed.value_or(s.seed);
    const fs::path tmp = make_run_temp_dir();  // first: a TMPDIR that cannot hold it fails before anything is written
    fs::path staging;
    RunsDone done;
    try {
        staging = make_staging(opts.out);
        fs::create_directories(staging / "runs");  // even when every run is skipped
        done = run_each(s, opts, seed, staging, tmp);
    } catch (...) {
        std::error_code ec;
        if (!staging.empty()) fs::remove_all(staging, ec);
        fs::remove_all(tmp, ec);
        throw;
    }
    fs::remove_all(tmp);
    nlohmann::json summary = {{"scenario", s.name}, {"scenario_file", s.path}, {"seed", seed}, {"runs", done.runs}};
    if (opts.simulated) {
        summary["backend"] = "sim";
        summary["skipped"] = done.skipped;
    }
    write_atomically(staging / "scenario.json", s.source.dump(2) + "\n");
    write_atomically(staging / "summary.json", summary.dump(2) + "\n");
    replace_folder(staging, opts.out);
    return summary;
}

namespace {

// A run_dir from summary.json that would lead out of the results folder (a component "..",
// or an absolute path); a run named "a..b" is fine.
bool escapes(const std::string& run_dir) {
    const fs::path p(run_dir);
    return p.is_absolute() || std::ranges::any_of(p, [](const fs::path& part) { return part == ".."; });
}

}  // namespace

Recheck recheck(const fs::path& dir) {
    const fs::path summary_file = dir / "summary.json";
    if (!fs::is_directory(dir / "runs") || !fs::is_regular_file(summary_file))
        throw std::runtime_error(dir.string() + ": not a complete lockbench results folder (no summary.json and runs/)");
    std::ifstream summary_in(summary_file);
    const nlohmann::json recorded = nlohmann::json::parse(summary_in, nullptr, false);
    if (recorded.is_discarded() || !recorded.is_object() || !recorded.contains("runs") || !recorded.at("runs").is_array())
        throw std::runtime_error(summary_file.string() + ": not a lockbench summary");
    Recheck out;
    out.summary = {{"scenario", recorded.value("scenario", "")}, {"runs", nlohmann::json::array()}};
    for (const auto& stored : recorded.at("runs")) {
        const std::string run_dir = stored.is_object() ? stored.value("run_dir", "") : "";
        const std::string name = stored.is_object() ? stored.value("name", "") : "";
        if (run_dir.empty() || name.empty() || escapes(run_dir))
            throw std::runtime_error(summary_file.string() + ": a run without a name and a run_dir under runs/");
        std::ifstream in(dir / run_dir / "run.json");
        const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
        if (record.is_discarded() || !record.is_object() || !record.contains("final_counter"))
            throw std::runtime_error((dir / run_dir / "run.json").string() + ": missing or not a lockbench run record");
        nlohmann::json sections;
        nlohmann::json run = check_run(dir / run_dir, record, sections);
        out.derived.emplace_back(dir / run_dir / kSectionsFile, std::move(sections));
        for (const std::string& d : figure_differences(stored, run))
            out.differences.push_back(summary_file.string() + ": run " + name + ": " + d);
        out.summary["runs"].push_back(std::move(run));
    }
    if (out.summary["runs"].empty()) throw std::runtime_error(dir.string() + ": no recorded runs under runs/");
    return out;
}

void write_derived(const Recheck& r) {
    for (const auto& [file, json] : r.derived) write_atomically(file, json.dump() + "\n");
}

int client_main(const fs::path& spec_file) {
    std::ifstream in(spec_file);
    const nlohmann::json spec = nlohmann::json::parse(in);
    const Scenario s = parse_scenario(spec.at("scenario"), spec.at("scenario_path"));
    const auto run = std::ranges::find(s.runs, spec.at("run").get<std::string>(), &RunSpec::name);
    if (run == s.runs.end()) throw std::runtime_error("client: no run named " + spec.at("run").dump());
    if (spec.value("preflight", false)) return preflight_main(s, *run, spec);
    const int client = spec.at("client").get<int>();
    const std::uint64_t seed = spec.at("seed").get<std::uint64_t>();

    Recorder rec(spec.at("history").get<std::string>(), client);
    std::optional<PointGate> gate;
    if (spec.contains("control_socket") && !spec.at("armed").empty())
        gate.emplace(spec.at("control_socket").get<std::string>(), client,
                     spec.at("armed").get<std::vector<std::string>>());
    LiveEnvConfig lock_config{{}, std::chrono::milliseconds(s.connect_timeout_ms), seed, [&rec, &gate](Point p) {
                                  rec.line("point", "reached").str("name", point_name(p)).commit();
                                  if (gate) gate->reached(p);
                              }};
    for (const auto& port : spec.at("lock_ports")) lock_config.nodes.push_back({"127.0.0.1", port.get<int>()});
    if (spec.contains("sentinels")) {
        SentinelDiscovery d;
        for (const auto& p : spec.at("sentinels")) d.sentinels.push_back({"127.0.0.1", p.get<int>()});
        d.master_name = kMasterName;
        for (const auto& [addr, port] : spec.at("address_map").items()) d.address_map[addr] = {"127.0.0.1", port.get<int>()};
        lock_config.discovery[0] = std::move(d);
    }
    LiveEnv lock_env(std::move(lock_config));
    LiveEnv store_env({{{"127.0.0.1", spec.at("store_port").get<int>()}},
                       std::chrono::milliseconds(s.connect_timeout_ms), derive_seed(seed, 7), {}});
    // The worker starts at the run's common instant, told once this client's lock exists.
    const fs::path barrier = spec.at("start_barrier").get<std::string>();
    const auto worker_spec = [&] {
        return WorkerSpec{client, seed, s.workload, std::chrono::milliseconds(1000),
                          Instant{Duration{await_start(barrier, client)}}, run->check_lease_before_write};
    };
    if (!run->command.empty()) {
        try {
            const auto lock = make_external(s, *run, spec.at("lock_ports").get<std::vector<int>>(), client,
                                            spec.value("project_dir", std::string()), discovery_of(spec));
            run_worker(lock_env, store_env, *lock, rec, worker_spec());
        } catch (const AdapterError& e) {
            rec.line("adapter", "fail").str("detail", e.what()).commit();
            std::cerr << e.what() << "\n";
            return kAdapterFailed;
        }
        return 0;
    }
    const auto lock = run->algorithm->make(
        run->params, {s.lock_key, client, std::chrono::milliseconds(s.command_timeout_ms)});
    run_worker(lock_env, store_env, *lock, rec, worker_spec());
    return 0;
}

}  // namespace lockbench
