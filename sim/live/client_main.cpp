#include "sim/live/client_main.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>

#include "sim/engine/recorder.h"
#include "sim/engine/run_setup.h"
#include "sim/engine/workload.h"
#include "sim/live/live_env.h"
#include "sim/live/nemesis.h"
#include "sim/live/sentinel.h"
#include "sim/live/start_barrier.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

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

}  // namespace

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
    const auto start = [&] { return worker_spec(s, *run, client, seed, Instant{Duration{await_start(barrier, client)}}); };
    if (!run->command.empty()) {
        try {
            const auto lock = make_external(s, *run, spec.at("lock_ports").get<std::vector<int>>(), client,
                                            spec.value("project_dir", std::string()), discovery_of(spec));
            run_worker(lock_env, store_env, *lock, rec, start());
        } catch (const AdapterError& e) {
            rec.line("adapter", "fail").str("detail", e.what()).commit();
            std::cerr << e.what() << "\n";
            return kAdapterFailed;
        }
        return 0;
    }
    const auto lock = make_client_lock(s, *run, client);
    run_worker(lock_env, store_env, *lock, rec, start());
    return 0;
}

}  // namespace lockbench
