#include "sim/virtual/sim_run.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "sim/engine/fault_kind.h"
#include "sim/engine/recorder.h"
#include "sim/virtual/sim_env.h"
#include "sim/virtual/sim_nemesis.h"
#include "sim/engine/worker.h"
#include "sim/engine/workload.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::optional<std::string> unsupported(const RunSpec& run) {
    if (!service_info(run.service).simulated)
        return std::string("the simulator models Redis nodes only, not ") + service_name(run.service) +
               "'s servers, and its lock runs in an external library in real time";
    if (world_needs(run.faults).stops_server)
        return "a paused lock server is a live fault: the model has no server process to stop";
    if (world_needs(run.faults).stalls_disk) return "a stalled disk is a live fault: the model has no disk";
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
// Sentinel's failover ends this long after the master died (sim_env.h: ReplicaGroup).
constexpr VTime kFailoverNs = 2000 * kMs;

// Where one simulated run's records go: files in a run folder (run_simulated), or events in
// memory (simulate_verdict), where the fault and Sentinel logs are dropped.
struct Records {
    const fs::path* run_dir = nullptr;
    RunHistory* history = nullptr;
    bool stop_early = false;
};

// What a simulated run leaves besides its records: the store's log and counter as read back.
struct SimRun {
    RunOutcome out;
    Value log, counter;
    bool stopped_early = false;
};

// The lock nodes (0..nodes-1), then the store; with Sentinel, lock0's replica after them.
// Returns the store's node.
std::size_t add_nodes(Net& net, World& world, const RunSpec& run, const Records& rec, std::ofstream& sentinel_log) {
    const bool keeps = run.persistence == Persistence::aof_always;
    for (int i = 0; i < run.nodes; ++i) net.add_node("lock" + std::to_string(i), keeps);
    const std::size_t store = net.node_count();
    net.add_node("store", false);
    if (run.sentinel) {  // lock0 with a replica, under Sentinel; its announcements as live
        const std::size_t replica = net.node_count();
        net.add_node("lock0-replica", keeps);
        if (rec.run_dir) sentinel_log.open(*rec.run_dir / "sentinel.jsonl");
        net.add_replica(0, replica, [&world, &sentinel_log](const std::string& event, const std::string& detail) {
            if (!sentinel_log.is_open()) return;
            sentinel_log << Json{{"t_ns", world.now()}, {"op", "sentinel"}, {"event", event}, {"detail", detail}}.dump()
                         << "\n";
        });
    }
    return store;
}

std::unique_ptr<Recorder> make_recorder(const Records& rec, int client, World& world) {
    auto r = rec.history ? std::make_unique<Recorder>(client, *rec.history)
                         : std::make_unique<Recorder>(
                               (*rec.run_dir / "history" / ("client-" + std::to_string(client) + ".jsonl")).string(), client);
    r->set_clock([&world] { return world.now(); });
    r->set_buffered();
    return r;
}

// The longest a section can last, as far as the workload says: an exponential draw has no
// bound, so ten means stand for it (a doubt: a longer tail is possible, and rare).
double section_ms_bound(const Distribution& d) {
    switch (d.kind) {
        case Distribution::Kind::fixed: return d.a;
        case Distribution::Kind::uniform: return std::max(d.a, d.b);
        case Distribution::Kind::exponential: return 10 * d.a;
    }
    return d.a;
}

// The early stop's quiet window: how long after the last fault ended the run goes on. Once
// every fault has fired and ended (FaultSchedule::spent: no clock fault, no link set for good,
// no crash left down, no repeating fault), what is left of them is state that runs out:
//   - a lease or key set before the heal: gone within the longest duration the lock's params
//     name (every *_ms param counts: ttl_ms, lease_ms, a watchdog's period...);
//   - a holder whose lease ran out while it was stopped: out of its section within the
//     longest section (work_ms, slow_work_ms);
//   - a message a delay link sent before the heal: landed within that delay;
//   - a client waiting on a lost message (a crash, a blackhole, a reset): answered within
//     the command timeout;
//   - Sentinel: a failover that a crash set going ends 2 s after it.
// Within that window the clients race for the lock as in the full run, so a violation that
// the fault left behind shows there; after it the run is a fault-free one, which the
// checker's verdict on these algorithms does not change (tested: sim_verdict_test.cpp).
VTime early_stop_window_ns(const RunSpec& run) {
    double ms = 10;  // the margin: a few round trips
    double lease_ms = 0;
    for (const auto& [key, v] : run.params.json().items())
        if (key.ends_with("_ms") && v.is_number()) lease_ms = std::max(lease_ms, v.get<double>());
    ms += lease_ms + std::max(section_ms_bound(run.workload.work_ms), section_ms_bound(run.workload.slow_work_ms));
    const WorldNeeds needs = world_needs(run.faults);
    const bool loses_messages = needs.loses_messages;
    const double delay_ms = static_cast<double>(needs.delay_ms);
    ms += delay_ms + (loses_messages ? static_cast<double>(std::max(run.timeouts.command_ms, run.timeouts.store_ms)) : 0.0);
    return static_cast<VTime>(ms * static_cast<double>(kMs)) + (run.sentinel ? kFailoverNs : 0);
}

// Books the early stop once the nemesis's faults are spent: the workers stop a quiet window
// later, as at their deadline (each finishes the section it is in), so that the checker sees
// a clean end and the lost updates stay counted right. Called after every fault timer and
// point, and once at the start (a run whose faults all fired at once, or that has none).
class EarlyStop {
public:
    EarlyStop(World& world, SimNemesis& nemesis, VTime window_ns, VTime deadline)
        : world_(world), nemesis_(nemesis), window_ns_(window_ns), deadline_(deadline) {}
    void watch() {
        if (booked_ || !nemesis_.spent()) return;
        booked_ = true;
        const VTime at = world_.now() + window_ns_;
        if (at >= deadline_) return;  // the deadline comes first anyway
        world_.at(at, [this] { stop_ = stopped_ = true; });
    }
    const bool* flag() const { return &stop_; }
    bool stopped() const { return stopped_; }

private:
    World& world_;
    SimNemesis& nemesis_;
    VTime window_ns_, deadline_;
    bool booked_ = false, stop_ = false, stopped_ = false;
};

// One simulated run, its records going where `rec` says.
SimRun simulate(const Scenario& s, const RunSpec& run, std::uint64_t seed, const Records& rec) {
    if (const auto why = unsupported(run)) throw std::runtime_error("run " + run.name + ": " + *why);
    World world(derive_seed(seed, 77));
    Net net(world, kLatencyMin, kLatencyMax);
    std::ofstream sentinel_log;
    const std::size_t store = add_nodes(net, world, run, rec, sentinel_log);
    std::vector<std::size_t> lock_nodes(static_cast<std::size_t>(run.nodes));
    std::iota(lock_nodes.begin(), lock_nodes.end(), std::size_t{0});

    const int clients = run.workload.clients;
    std::vector<Process> processes(static_cast<std::size_t>(clients));
    for (int c = 0; c < clients; ++c) {
        processes[static_cast<std::size_t>(c)].id = c;
        processes[static_cast<std::size_t>(c)].rng.seed(derive_seed(client_seed(seed, c), 3));
    }
    SimNemesis nemesis(world, net, processes, store, run.faults, rec.run_dir ? *rec.run_dir / "nemesis.jsonl" : fs::path());
    nemesis.set_start_after(run.workload.start_after);
    const VTime start_at = world.now() + 10 * kMs;
    EarlyStop early(world, nemesis, early_stop_window_ns(run), start_at + run.workload.duration_ms * kMs);

    for (int c = 0; c < clients; ++c) {
        Process& p = processes[static_cast<std::size_t>(c)];
        Fiber* fiber = world.spawn("client-" + std::to_string(c), [&, c, pp = &p] {
            Process& p = *pp;
            const std::unique_ptr<Recorder> recorder = make_recorder(rec, c, world);
            Recorder& r = *recorder;
            SimEnv locks(net, p, lock_nodes, [&, c](Point point) {
                r.line("point", "reached").str("name", point_name(point)).commit();
                nemesis.reached(c, point);
            });
            SimEnv store_env(net, p, {store}, nullptr);
            const auto lock = make_client_lock(run, s.lock_key, c);
            WorkerSpec spec = worker_spec(run, c, client_seed(seed, c), Instant{Duration{start_at}});
            if (rec.stop_early) spec.stop = early.flag();
            run_worker(locks, store_env, *lock, r, spec);
        });
        p.fibers.push_back(fiber);
    }
    nemesis.start(start_at, seed);
    if (rec.stop_early) {
        nemesis.on_change([&early] { early.watch(); });
        early.watch();
    }
    // Every worker stops at its deadline; the margin lets the last replies and faults land.
    world.run(start_at + (run.workload.longest_ms() + 60'000) * kMs);
    world.end_all();

    SimRun out;
    out.out.faults = nemesis.report();
    out.out.faults_injected = nemesis.injected();
    out.out.unmet = nemesis.unmet();
    out.out.sim_events = world.events_run();
    out.stopped_early = early.stopped();
    SimNode& st = net.node(store);
    std::string error;
    out.log = st.model.execute(store_log_command(), st.wall_ms(world.now()), &error);
    out.counter = st.model.execute(store_counter_command(), st.wall_ms(world.now()), &error);
    return out;
}

// The client events in the order load_run_history leaves them: the history files read in
// name order (client-10 before client-2), each in its own order, then stably sorted by time.
void sort_as_loaded(std::vector<ClientEvent>& events, int clients) {
    std::vector<int> by_name(static_cast<std::size_t>(clients));
    std::iota(by_name.begin(), by_name.end(), 0);
    std::ranges::sort(by_name, {}, [](int c) { return std::to_string(c) + "."; });
    std::vector<int> rank(static_cast<std::size_t>(clients));
    for (std::size_t i = 0; i < by_name.size(); ++i) rank[static_cast<std::size_t>(by_name[i])] = static_cast<int>(i);
    const auto before = [&](const ClientEvent& a, const ClientEvent& b) {
        if (a.t_ns != b.t_ns) return a.t_ns < b.t_ns;
        return rank[static_cast<std::size_t>(a.client)] < rank[static_cast<std::size_t>(b.client)];
    };
    // The recorders append in virtual-time order already: only a tie between clients can be
    // out of place.
    if (!std::ranges::is_sorted(events, before)) std::ranges::stable_sort(events, before);
}

}  // namespace

RunOutcome run_simulated(const Scenario& s, const RunSpec& run, std::uint64_t seed, const fs::path& run_dir,
                         const std::function<void()>& started) {
    if (started) started();
    if (const auto why = unsupported(run)) throw std::runtime_error("run " + run.name + ": " + *why);
    fs::create_directories(run_dir / "history");
    SimRun r = simulate(s, run, seed, Records{&run_dir, nullptr, false});
    r.out.final_counter = write_store_log(run_dir, r.log, r.counter);
    return r.out;
}

SimVerdict simulate_verdict(const Scenario& s, const RunSpec& run, std::uint64_t seed, bool stop_early) {
    RunHistory h;
    const SimRun r = simulate(s, run, seed, Records{nullptr, &h, stop_early});
    h.clients = run.workload.clients;
    sort_as_loaded(h.events, h.clients);
    for (const Value& e : r.log.elements) parse_store_text(e.str, h);
    h.final_counter = r.counter.is_nil() ? 0 : std::stoll(r.counter.str);
    const CheckResult c = check(h, {.max_witnesses = 0});
    return {c.safety.mutual_exclusion_violations, c.safety.stale_writes_accepted, c.safety.lost_updates,
            r.stopped_early, static_cast<long long>(r.out.sim_events.value_or(0))};
}

}  // namespace lockbench::sim
