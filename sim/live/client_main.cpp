#include "sim/live/client_main.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <cstdlib>
#include <optional>

#include "process/process.h"
#include "sim/engine/recorder.h"
#include "sim/engine/run_setup.h"
#include "sim/engine/workload.h"
#include "sim/live/adapter_check.h"
#include "sim/live/adapter_pool.h"
#include "sim/live/background_control.h"
#include "sim/live/client_spec.h"
#include "sim/live/live_env.h"
#include "sim/live/nemesis.h"
#include "sim/live/sentinel.h"
#include "sim/live/start_barrier.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

// Who an adapter's messages name: the run, and the lock file it came from.
std::string adapter_label(const RunSpec& run) {
    if (!run.lock) return run.name;
    return *run.lock + (run.lock_file ? " (" + *run.lock_file + ")" : "") + (run.variant ? " in " + run.name : "");
}

// An external run's lock: the adapter, told the paths to the nodes (`ports`, this client's own)
// and, under Sentinel, where to ask for the master (`discovery`, as sentinel_discovery gives).
// Its command runs in the lock file's folder (run.cwd), or for a run written in a scenario
// file, in the project's.
constexpr int kOpWaitBudgets = 3;

std::unique_ptr<ExternalLock> make_external(const RunSpec& run, const std::string& lock_key, const std::vector<int>& ports,
                                            int client, const fs::path& project_dir,
                                            const std::optional<SentinelPorts>& discovery,
                                            const std::map<std::string, std::string>& service_env, const fs::path& stderr_path = {},
                                            const std::string& pool_run = {}) {
    std::string nodes;
    for (int p : ports) nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
    const long long ttl_ms = run.params.integer("ttl_ms");
    const ClientTimeouts& t = run.timeouts;
    AdapterSpec a{adapter_label(run), run.command, run.cwd.empty() ? project_dir : run.cwd,
                  {{"LOCKBENCH_NODES", nodes},
                   {"LOCKBENCH_KEY", lock_key},
                   {"LOCKBENCH_CLIENT", std::to_string(client)},
                   {"LOCKBENCH_TTL_MS", std::to_string(ttl_ms)},
                   {"LOCKBENCH_PARAMS", run.params.json().dump()},
                   {"LOCKBENCH_COMMAND_TIMEOUT_MS", std::to_string(t.command_ms)},
                   {"LOCKBENCH_OP_TIMEOUT_MS", std::to_string(10 * t.command_ms)},
                   {"LOCKBENCH_CONNECT_TIMEOUT_MS", std::to_string(t.connect_ms)},
                   // The protocol kits (adapters/kit/): an adapter outside the project finds them here.
                   {"LOCKBENCH_KIT", (project_dir / "adapters" / "kit").string()}},
                  // The adapter's budget is ten command timeouts; lockbench calls it broken only
                  // after three budgets: a library's retries on a slower machine run late, and a
                  // late answer is an outcome (unavailability), not a broken adapter.
                  std::chrono::milliseconds(kOpWaitBudgets * 10 * t.command_ms), stderr_path, run.params.flag("fence")};
    for (const auto& [name, value] : service_env) a.env[name] = value;
    a.probe_key_ttl = run.params.flag("probe_key_ttl");
    a.redis_nodes = service_info(run.service).keys_readable;
    // A matrix's adapter pool (adapter_pool.h), for a run's client (`pool_run`, the run as the
    // pool knows it); empty where the run set it so (a client whose clock is shifted: the shim
    // is in this process's environment).
    if (const char* pool = std::getenv(kAdapterPoolVar); !pool_run.empty() && pool && *pool) {
        a.pool = pool;
        a.pool_run = pool_run;
    }
    a.command_timeout = std::chrono::milliseconds(t.command_ms);
    if (discovery) {
        std::string sentinels;
        for (int p : discovery->sentinels) sentinels += (sentinels.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
        nlohmann::json moved = nlohmann::json::object();
        for (const auto& [addr, port] : discovery->address_map) moved[addr] = "127.0.0.1:" + std::to_string(port);
        a.env["LOCKBENCH_SENTINELS"] = sentinels;
        a.env["LOCKBENCH_MASTER_NAME"] = kMasterName;
        a.env["LOCKBENCH_ADDRESS_MAP"] = moved.dump();
    }
    return std::make_unique<ExternalLock>(std::move(a), lock_key, ttl_ms);
}

// `lockbench client` for check_adapter: two adapters (clients 0 and 1) held to the protocol.
int check_main(const RunSpec& run, const ClientSpec& spec) {
    const nlohmann::json& c = *spec.check;
    AdapterCheckPlan plan{c.value("extend", std::vector<std::string>{}), c.value("fencing", false),
                          static_cast<int>(spec.lock_ports.size()), run.params.integer("ttl_ms"), spec.lock_key,
                          c.value("excludes", true)};
    // Redis nodes, to ask where the first holder's token is: under Sentinel the master alone
    // (its replica may not have it yet).
    LiveEnvConfig nodes_config;
    for (const int port : spec.lock_ports) {
        nodes_config.nodes.push_back({"127.0.0.1", port});
        if (spec.discovery) break;
    }
    std::optional<LiveEnv> redis_nodes;
    if (service_info(run.service).keys_readable) plan.redis_nodes = &redis_nodes.emplace(std::move(nodes_config));
    nlohmann::json out = {{"failures", nlohmann::json::array()}, {"ready", nlohmann::json::object()}};
    try {
        const auto a = make_external(run, spec.lock_key, spec.lock_ports, 0, spec.project_dir, spec.discovery,
                                     spec.adapter_env, spec.adapter_stderr);
        const auto b = make_external(run, spec.lock_key, spec.lock_ports, 1, spec.project_dir, spec.discovery,
                                     spec.adapter_env, spec.adapter_stderr);
        out["ready"] = a->described();
        out["failures"] = hold_to_protocol(*a, *b, plan);
    } catch (const AdapterError& e) {
        out["failures"].push_back(std::string("start: ") + e.what());
    }
    std::ofstream(spec.adapter_described) << out.dump() << "\n";
    return 0;
}

// `lockbench client` for preflight_adapter: starts the adapter, waits for it to be ready, ends it.
int preflight_main(const RunSpec& run, const ClientSpec& spec) {
    if (spec.check) return check_main(run, spec);
    try {
        const auto lock = make_external(run, spec.lock_key, spec.lock_ports, -1, spec.project_dir, spec.discovery,
                                        spec.adapter_env, spec.adapter_stderr);
        // Read by lockbench only once this child has exited 0: no half-written file is seen.
        std::ofstream(spec.adapter_described) << lock->described().dump() << "\n";
    } catch (const AdapterError& e) {
        std::cerr << e.what() << "\n";
        return kAdapterFailed;
    }
    return 0;
}

// The client's lock node environment: its paths to the nodes, and under Sentinel where to ask
// for the master; every point it reaches goes into its history and, if armed, to the nemesis.
LiveEnvConfig lock_env_config(const RunSpec& run, const ClientSpec& spec, Recorder& rec, std::optional<PointGate>& gate) {
    LiveEnvConfig config{{}, std::chrono::milliseconds(run.timeouts.connect_ms), spec.seed, [&rec, &gate](Point p) {
                             rec.line("point", "reached").str("name", point_name(p)).commit();
                             if (gate) gate->reached(p);
                         }};
    for (int port : spec.lock_ports) config.nodes.push_back({"127.0.0.1", port});
    if (spec.discovery) {
        SentinelDiscovery d;
        for (int p : spec.discovery->sentinels) d.sentinels.push_back({"127.0.0.1", p});
        d.master_name = kMasterName;
        for (const auto& [addr, port] : spec.discovery->address_map) d.address_map[addr] = {"127.0.0.1", port};
        config.discovery[0] = std::move(d);
    }
    return config;
}

}  // namespace

int client_main(const fs::path& spec_file) {
    std::ifstream in(spec_file);
    const ClientSpec spec = client_spec_from_json(nlohmann::json::parse(in));
    const RunSpec run = parse_standalone_run(spec.run, spec_file.string());
    // The adapter is in our group (a pause stops both), and so is whatever it starts itself;
    // its parent-death signal reaches none of those: when we go, the group goes.
    if (!run.command.empty()) kill_own_group_when_gone();
    if (spec.preflight) return preflight_main(run, spec);

    Recorder rec(spec.history, spec.client);
    // First, before any thread starts: the signal mask it sets must be every thread's.
    const auto background_gate = std::make_shared<BackgroundGate>();
    std::optional<BackgroundControl> background;
    if (std::ranges::any_of(run.faults, &FaultSpec::background))
        background.emplace(spec.control_socket, spec.client, background_gate);
    std::optional<PointGate> gate;
    if (!spec.armed.empty()) gate.emplace(spec.control_socket, spec.client, spec.armed);
    LiveEnvConfig lock_config = lock_env_config(run, spec, rec, gate);
    lock_config.background_gate = background_gate;
    LiveEnv lock_env(std::move(lock_config));
    LiveEnv store_env({{{"127.0.0.1", spec.store_port}}, std::chrono::milliseconds(run.timeouts.connect_ms),
                       derive_seed(spec.seed, 7), {}});
    // The worker starts at the run's common instant, told once this client's lock exists.
    const fs::path barrier = spec.start_barrier;
    const auto start = [&] {
        return worker_spec(run, spec.client, spec.seed, Instant{Duration{await_start(barrier, spec.client)}});
    };
    if (!run.command.empty()) {
        try {
            const auto lock = make_external(run, spec.lock_key, spec.lock_ports, spec.client, spec.project_dir,
                                            spec.discovery, spec.adapter_env, spec.adapter_stderr, spec.start_barrier);
            if (!spec.adapter_described.empty()) std::ofstream(spec.adapter_described) << lock->described().dump() << "\n";
            // The group a pooled adapter leads, for the nemesis to pause and kill beside ours;
            // read by the run once every client is ready.
            if (const pid_t group = lock->pooled_group())
                std::ofstream(adapter_group_file(spec.start_barrier, spec.client)) << group << "\n";
            run_worker(lock_env, store_env, *lock, rec, start());
        } catch (const AdapterError& e) {
            rec.line("adapter", "fail").str("detail", e.what()).commit();
            std::cerr << e.what() << "\n";
            return kAdapterFailed;
        }
        return 0;
    }
    const auto lock = make_client_lock(run, spec.lock_key, spec.client);
    run_worker(lock_env, store_env, *lock, rec, start());
    return 0;
}

}  // namespace lockbench
