// The simulator's nemesis: the run's FaultSchedule (sim/engine/fault_schedule.h), the live
// one's, carried out inside the world.
//
//   client fiber ──reached(point)──► FaultSchedule ──► this actuator: Process.paused / dead,
//        ▲                               │             a held fiber's wait, SimClock, Net
//        └── world_.wait() while held    └── each timer booked as one World event at its time
//
// The world's events are the only clock: every timer the schedule sets becomes one event at
// its time, booked as it is set, so a run replays byte for byte. A simulated run ends with
// the world; nothing is healed after it, so nemesis.jsonl has no heal lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/fault_actuator.h"
#include "sim/engine/fault_schedule.h"
#include "sim/virtual/sim_env.h"
#include "sim/virtual/world.h"

namespace lockbench::sim {

class SimNemesis final : private FaultActuator {
public:
    // `store` is the Net node of the protected store; the fault log goes to `log` (nowhere
    // when it is empty).
    SimNemesis(World& world, Net& net, std::vector<Process>& processes, std::size_t store,
               std::vector<FaultSpec> faults, const std::filesystem::path& log);

    // Faults at a time: at 0, before any client starts; later, from `start_at`.
    // `seed` seeds a repeating fault's draws.
    void start(VTime start_at, std::uint64_t seed = 0);
    // A client reached a point (from its fiber); returns once the client may go on.
    void reached(int client, Point p);

    void set_start_after(std::optional<StartAfter> s) { schedule_.set_start_after(s); }
    nlohmann::json report() const { return schedule_.report(); }
    long long injected() const { return schedule_.injected(); }
    std::vector<std::string> unmet() const { return schedule_.unmet(); }
    // See FaultSchedule::spent(); `changed` is called after every timer or point that may
    // have changed it (the early stop's watch, sim_run.cpp).
    bool spent() const { return schedule_.spent(); }
    void on_change(std::function<void()> changed) { changed_ = std::move(changed); }

private:
    bool pause(int client) override;
    void resume(int client) override;
    void pause_background(int client) override;
    void resume_background(int client) override;
    void kill(int client) override;
    void hold(int client) override;
    void let_go(int client) override;
    void step_clock(ClockOf clock, long long jump_ms) override;
    void drift_clock(ClockOf clock, double rate) override;
    void set_link(LinkPath path, std::optional<Direction> direction, const LinkFault& fault) override;
    HeldPath held_path(LinkPath path) override;
    void mark_requests() override { net_.mark_messages(); }
    long long first_request(LinkPath path) override;
    void crash(int node) override;
    std::optional<bool> restart(int node) override;  // at once: a modelled node has nothing to start
    // The model has no server process to stop and no service with a leader: runs with such
    // faults are skipped (sim_run.h: unsupported), so these are never called.
    bool pause_node(int node) override;
    void resume_node(int node) override;
    int resolve_node(int node) override;
    bool has_leader() override;
    int node_count() const override { return static_cast<int>(store_); }
    std::optional<int> current_holder() override;
    std::optional<Value> ask_store(const Command& command) override;
    Process& process(int client) { return processes_.at(static_cast<std::size_t>(client)); }
    SimClock& clock_of(ClockOf clock);

    struct Held {
        Fiber* fiber = nullptr;
        std::uint64_t token = 0;
    };
    World& world_;
    Net& net_;
    std::vector<Process>& processes_;
    std::size_t store_;
    std::ofstream log_;
    std::function<void()> changed_;
    std::map<int, Held> held_;  // by client: the fiber a gate holds, and its wake token
    FaultSchedule schedule_;
};

}  // namespace lockbench::sim
