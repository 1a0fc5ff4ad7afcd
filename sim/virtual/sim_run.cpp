#include "sim/virtual/sim_run.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "sim/engine/recorder.h"
#include "sim/virtual/sim_env.h"
#include "sim/virtual/sim_nemesis.h"
#include "sim/engine/worker.h"
#include "sim/engine/workload.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::optional<std::string> unsupported(const RunSpec& run) {
    if (run.service != Service::redis)
        return std::string("the simulator models Redis nodes only, not ") + service_name(run.service) +
               "'s servers, and its lock runs in an external library in real time";
    for (const FaultSpec& f : run.faults)
        if (f.kind == FaultSpec::Kind::pause && f.node)
            return "a paused lock server is a live fault: the model has no server process to stop";
    if (!run.command.empty())
        return "an external library runs in its own process, in real time: it cannot run in virtual time";
    if (run.persistence == Persistence::aof_everysec)
        return "AOF everysec loses up to a second of writes in a crash, which the model does not reproduce";
    return std::nullopt;
}

namespace {

constexpr VTime kMs = 1'000'000;
// One-way latency on loopback, as measured live (tens of microseconds).
constexpr VTime kLatencyMin = 20'000, kLatencyMax = 80'000;

}  // namespace

RunOutcome run_simulated(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                         const std::function<void()>& started) {
    if (started) started();
    if (const auto why = unsupported(run)) throw std::runtime_error("run " + run.name + ": " + *why);
    fs::create_directories(run_dir / "history");
    World world(derive_seed(seed, 77));
    Net net(world, kLatencyMin, kLatencyMax);
    const bool keeps = run.persistence == Persistence::aof_always;
    std::vector<std::size_t> lock_nodes;
    for (int i = 0; i < run.nodes; ++i) {
        net.add_node("lock" + std::to_string(i), keeps);
        lock_nodes.push_back(static_cast<std::size_t>(i));
    }
    const std::size_t store = net.node_count();
    net.add_node("store", false);
    std::ofstream sentinel_log;
    if (run.sentinel) {  // lock0 with a replica, under Sentinel; its announcements as live
        const std::size_t replica = net.node_count();
        net.add_node("lock0-replica", keeps);
        sentinel_log.open(run_dir / "sentinel.jsonl");
        net.add_replica(0, replica, [&world, &sentinel_log](const std::string& event, const std::string& detail) {
            sentinel_log << Json{{"t_ns", world.now()}, {"op", "sentinel"}, {"event", event}, {"detail", detail}}.dump()
                         << "\n";
        });
    }

    const int clients = s.workload.clients;
    std::vector<Process> processes(static_cast<std::size_t>(clients));
    for (int c = 0; c < clients; ++c) {
        processes[static_cast<std::size_t>(c)].id = c;
        processes[static_cast<std::size_t>(c)].rng.seed(derive_seed(client_seed(seed, c), 3));
    }
    SimNemesis nemesis(world, net, processes, store, run.faults, run_dir / "nemesis.jsonl");
    const VTime start_at = world.now() + 10 * kMs;

    for (int c = 0; c < clients; ++c) {
        Process& p = processes[static_cast<std::size_t>(c)];
        Fiber* fiber = world.spawn("client-" + std::to_string(c), [&, c, pp = &p] {
            Process& p = *pp;
            Recorder rec((run_dir / "history" / ("client-" + std::to_string(c) + ".jsonl")).string(), c);
            rec.set_clock([&world] { return world.now(); });
            rec.set_buffered();
            SimEnv locks(net, p, lock_nodes, [&, c](Point point) {
                rec.line("point", "reached").str("name", point_name(point)).commit();
                nemesis.reached(c, point);
            });
            SimEnv store_env(net, p, {store}, nullptr);
            const auto lock = make_client_lock(s, run, c);
            run_worker(locks, store_env, *lock, rec, worker_spec(s, run, c, client_seed(seed, c), Instant{Duration{start_at}}));
        });
        p.fibers.push_back(fiber);
    }
    nemesis.start(start_at, seed);
    // Every worker stops at its deadline; the margin lets the last replies and faults land.
    world.run(start_at + (s.workload.duration_ms + 60'000) * kMs);
    world.end_all();

    RunOutcome out;
    out.faults = nemesis.report();
    out.faults_injected = nemesis.injected();
    out.sim_events = world.events_run();
    SimNode& st = net.node(store);
    std::string error;
    const Value log = st.model.execute(store_log_command(), st.wall_ms(world.now()), &error);
    const Value counter = st.model.execute(store_counter_command(), st.wall_ms(world.now()), &error);
    out.final_counter = write_store_log(run_dir, log, counter);
    return out;
}

}  // namespace lockbench::sim
