#include "sim/virtual/sim_nemesis.h"

#include <stdexcept>

#include "sim/engine/run_setup.h"

namespace lockbench::sim {

namespace {
constexpr VTime kMs = 1'000'000;
}  // namespace

SimNemesis::SimNemesis(World& world, Net& net, std::vector<Process>& processes, std::size_t store,
                       std::vector<FaultSpec> faults, const std::filesystem::path& log)
    : world_(world), net_(net), processes_(processes), store_(store),
      schedule_(
          std::move(faults), *this, log.empty() ? FaultSchedule::LogSink{} : [this](const std::string& line) { log_ << line; },
          [this](long long at_ns, std::size_t timer) {
              world_.at(at_ns, [this, timer] {
                  schedule_.run_timer(timer, world_.now());
                  if (changed_) changed_();
              });
          }) {
    if (log.empty()) return;
    log_.open(log);
    if (!log_) throw std::runtime_error(log.string() + ": cannot write");
}

void SimNemesis::start(VTime start_at, std::uint64_t seed) {
    schedule_.start(static_cast<int>(processes_.size()), start_at, world_.now(), seed);
}

// Read from the modelled store at this instant, as the live nemesis asks the real one.
std::optional<int> SimNemesis::current_holder() {
    const auto holder = ask_store(store_holder_command());
    return holder ? holder_from(*holder) : std::nullopt;
}

std::optional<Value> SimNemesis::ask_store(const Command& command) {
    SimNode& store = net_.node(store_);
    std::string error;
    return store.model.execute(command, store.wall_ms(world_.now()), &error);
}

// A client held at a gate sleeps here until its end timer wakes it; a killed one has
// unwound already (kill() does not return to it).
void SimNemesis::reached(int client, Point p) {
    const auto answer = schedule_.reach(client, p, world_.now());
    if (changed_) changed_();
    if (answer == FaultSchedule::Answer::held) world_.wait();
}

bool SimNemesis::pause(int client) {
    process(client).paused = true;
    return true;
}

void SimNemesis::resume(int client) {
    Process& p = process(client);
    p.paused = false;
    auto waiting = std::move(p.on_resume);
    p.on_resume.clear();
    for (auto& w : waiting) w();
}

// The client's background fibers stop at their next sleep's end or command (sim_env.cpp).
void SimNemesis::pause_background(int client) { process(client).background_paused = true; }

void SimNemesis::resume_background(int client) {
    Process& p = process(client);
    p.background_paused = false;
    auto waiting = std::move(p.on_background_resume);
    p.on_background_resume.clear();
    for (auto& w : waiting) w();
}

void SimNemesis::kill(int client) {
    Process& p = process(client);
    p.dead = true;
    for (Fiber* fiber : p.fibers)
        if (fiber != world_.current()) world_.kill(fiber);
    world_.kill(world_.current());  // when a point fired it: unwinds right here
}

// Called from the client's own fiber, before reached() makes it wait.
void SimNemesis::hold(int client) { held_[client] = Held{world_.current(), world_.prepare_wait()}; }

void SimNemesis::let_go(int client) {
    const auto it = held_.find(client);
    if (it == held_.end()) return;
    const Held h = it->second;
    held_.erase(it);
    world_.wake(h.fiber, h.token);
}

SimClock& SimNemesis::clock_of(ClockOf clock) {
    if (clock.whose == ClockOf::Whose::node) return net_.node(static_cast<std::size_t>(clock.index)).clock;
    return process(clock.index).clock;
}

void SimNemesis::step_clock(ClockOf clock, long long jump_ms) { clock_of(clock).jump(jump_ms * kMs); }
void SimNemesis::drift_clock(ClockOf clock, double rate) { clock_of(clock).set_rate(rate, world_.now()); }

void SimNemesis::set_link(LinkPath path, std::optional<Direction> direction, const LinkFault& fault) {
    switch (path.to) {
        case LinkPath::To::replication: net_.set_replication_fault(direction, fault); break;
        case LinkPath::To::node: net_.set_fault(path.client, static_cast<std::size_t>(path.node), direction, fault); break;
        case LinkPath::To::store: net_.set_fault(path.client, store_, direction, fault); break;
        case LinkPath::To::peer: throw std::logic_error("the simulator models no links between lock servers");
    }
}

FaultActuator::HeldPath SimNemesis::held_path(LinkPath path) {
    if (path.to != LinkPath::To::node) return HeldPath::answered;
    const Path& p = net_.path(path.client, static_cast<std::size_t>(path.node));
    if (p.down.last_held > p.down.hold_from && p.down.last_held > p.up.last) return HeldPath::answered;
    return p.up.last > p.down.hold_from ? HeldPath::asked : HeldPath::quiet;
}

long long SimNemesis::first_request(LinkPath path) {
    if (path.to != LinkPath::To::node) return 0;
    return net_.first_since_mark(net_.path(path.client, static_cast<std::size_t>(path.node)).up);
}

void SimNemesis::crash(int node) { net_.crash(static_cast<std::size_t>(node)); }

std::optional<bool> SimNemesis::restart(int node) {
    net_.restart(static_cast<std::size_t>(node));
    return true;
}

bool SimNemesis::pause_node(int) { throw std::logic_error("the simulator cannot pause a lock server"); }
void SimNemesis::resume_node(int) { throw std::logic_error("the simulator cannot pause a lock server"); }

bool SimNemesis::has_leader() { throw std::logic_error("the simulator models no service with a leader"); }

int SimNemesis::resolve_node(int node) {
    if (node < 0) throw std::logic_error("the simulator models no service with a leader");
    return node;
}

}  // namespace lockbench::sim
