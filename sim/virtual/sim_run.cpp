#include "sim/virtual/sim_run.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "sim/engine/recorder.h"
#include "sim/virtual/sim_env.h"
#include "sim/engine/worker.h"
#include "sim/engine/workload.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::optional<std::string> unsupported(const RunSpec& run) {
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

// The faults of one run, carried out inside the world: the live Nemesis's rules, minus the
// signals and sockets.
class SimNemesis {
public:
    SimNemesis(World& world, Net& net, std::vector<Process>& processes, std::size_t store,
               std::vector<FaultSpec> faults, const fs::path& log)
        : world_(world), net_(net), processes_(processes), store_(store), log_(log) {
        if (!log_) throw std::runtime_error(log.string() + ": cannot write");
        for (auto& f : faults) armed_.push_back(Armed{std::move(f)});
    }

    // Faults at a time: at 0, before any client starts; later, from the start instant.
    void start(VTime start_at) {
        for (Armed& f : armed_) {
            if (!f.spec.at_ms) continue;
            const int client = f.spec.client.value_or(0);
            if (*f.spec.at_ms == 0) fire(f, client);
            else world_.at(start_at + *f.spec.at_ms * kMs, [this, &f, client] { if (!f.done) fire(f, client); });
        }
    }

    // A client reached a point (from its fiber).
    void reached(int client, Point p) {
        std::vector<Armed*> due;
        for (Armed& f : armed_) {
            if (f.done || f.spec.point != p || (f.spec.client && *f.spec.client != client)) continue;
            if (++f.seen >= f.spec.occurrence) due.push_back(&f);
        }
        // As the live nemesis: every due fault is put in place first; a kill or a gate, which
        // do not let this client go on, come last.
        const auto blocks = [](const Armed* f) {
            return f->spec.kind == FaultSpec::Kind::kill || f->spec.kind == FaultSpec::Kind::gate;
        };
        std::ranges::stable_partition(due, [&](const Armed* f) { return !blocks(f); });
        for (Armed* f : due) fire(*f, client);
    }

    nlohmann::json report() const {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& f : armed_)
            out.push_back({{"fault", fault_kind_name(f.spec.kind)}, {"label", f.spec.label()},
                           {"fired", f.fired_on.size()}, {"clients", f.fired_on}});
        return out;
    }
    long long injected() const {
        long long n = 0;
        for (const auto& f : armed_) n += static_cast<long long>(f.fired_on.size());
        return n;
    }

private:
    struct Armed {
        FaultSpec spec;
        int seen = 0;
        std::vector<int> fired_on;
        struct Held {
            Fiber* fiber;
            std::uint64_t token;
            int client;
        };
        std::vector<Held> held;  // gate
        bool done = false;
    };

    void log(const char* type, const Armed& f, int client) {
        log_ << "{\"t_ns\":" << world_.now() << ",\"op\":\"fault\",\"type\":\"" << type << "\",\"fault\":\""
             << fault_kind_name(f.spec.kind) << "\",\"label\":\"" << f.spec.label() << "\",\"client\":" << client << "}\n";
    }

    void resume(Process& p) {
        p.paused = false;
        auto waiting = std::move(p.on_resume);
        p.on_resume.clear();
        for (auto& w : waiting) w();
    }

    void set_links(const FaultSpec& f, int client, bool heal) {
        const LinkFault fault = heal ? LinkFault::pass() : f.link;
        if (f.link_replication) net_.set_replication_fault(f.direction, fault);  // one link, whoever the client
        for (int c = 0; c < static_cast<int>(processes_.size()); ++c) {
            if (!f.all_clients && c != client) continue;
            std::vector<std::size_t> targets(f.link_nodes.begin(), f.link_nodes.end());
            if (f.link_store) targets.push_back(store_);
            for (std::size_t n : targets) net_.set_fault(c, n, f.direction, fault);
        }
    }

    void fire(Armed& f, int client) {
        Process& p = processes_.at(static_cast<std::size_t>(client));
        f.fired_on.push_back(client);
        f.done = f.spec.kind != FaultSpec::Kind::gate;  // a gate fires once per client it holds
        switch (f.spec.kind) {
            case FaultSpec::Kind::pause:
                p.paused = true;
                log("start", f, client);
                world_.at(world_.now() + f.spec.duration_ms * kMs, [this, &f, &p, client] {
                    resume(p);
                    log("end", f, client);
                });
                break;
            case FaultSpec::Kind::kill:
                log("start", f, client);
                p.dead = true;
                for (Fiber* fiber : p.fibers)
                    if (fiber != world_.current()) world_.kill(fiber);
                world_.kill(world_.current());  // when a point fired it: unwinds right here
                break;
            case FaultSpec::Kind::clock: {
                SimClock& clock = f.spec.node ? net_.node(static_cast<std::size_t>(*f.spec.node)).clock : p.clock;
                clock.jump(f.spec.jump_ms * kMs);
                if (f.spec.rate) clock.set_rate(*f.spec.rate, world_.now());
                log("start", f, client);
                break;
            }
            case FaultSpec::Kind::link:
                set_links(f.spec, client, false);
                log("start", f, client);
                if (f.spec.duration_ms)
                    world_.at(world_.now() + f.spec.duration_ms * kMs, [this, &f, client] {
                        set_links(f.spec, client, true);
                        log("end", f, client);
                    });
                break;
            case FaultSpec::Kind::crash:
                net_.crash(static_cast<std::size_t>(*f.spec.node));
                log("start", f, client);
                if (f.spec.restart_after_ms)
                    world_.at(world_.now() + *f.spec.restart_after_ms * kMs, [this, &f, client] {
                        net_.restart(static_cast<std::size_t>(*f.spec.node));
                        log("end", f, client);
                    });
                break;
            case FaultSpec::Kind::gate: gate(f, client); break;
        }
    }

    // Holds clients at the point until `count` are there, then lets them go `stagger` apart.
    void gate(Armed& f, int client) {
        log("start", f, client);
        f.held.push_back({world_.current(), world_.prepare_wait(), client});
        if (static_cast<int>(f.held.size()) >= f.spec.count) {
            f.done = true;
            for (std::size_t i = 0; i < f.held.size(); ++i)
                world_.at(world_.now() + static_cast<VTime>(i) * f.spec.stagger_ms * kMs, [this, &f, h = f.held[i]] {
                    log("end", f, h.client);
                    world_.wake(h.fiber, h.token);
                });
            f.held.clear();
        }
        world_.wait();
    }

    World& world_;
    Net& net_;
    std::vector<Process>& processes_;
    std::size_t store_;
    std::ofstream log_;
    std::vector<Armed> armed_;
};

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
    nemesis.start(start_at);
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
