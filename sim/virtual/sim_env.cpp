#include "sim/virtual/sim_env.h"

#include <algorithm>
#include <numeric>
#include <exception>

namespace lockbench::sim {

long long SimClock::wall_ns(VTime t) const {
    const VTime since = t - anchor;
    const long long scaled = rate == 1.0 ? since : static_cast<long long>(static_cast<double>(since) * rate);
    return kEpochNs + anchor + offset_ns + scaled;
}

void SimClock::set_rate(double r, VTime now) {
    const long long wall = wall_ns(now);
    anchor = now;
    rate = r;
    offset_ns = wall - kEpochNs - now;  // no step now
}

// ---- Net ----

SimNode& Net::add_node(std::string name, bool keeps_data) {
    nodes_.push_back(std::make_unique<SimNode>());
    nodes_.back()->name = std::move(name);
    nodes_.back()->keeps_data = keeps_data;
    return *nodes_.back();
}

VTime Net::latency() {
    const auto span = static_cast<std::uint64_t>(latency_max_ - latency_min_ + 1);
    return latency_min_ + static_cast<VTime>(world_.random()() % span);
}

// One message onto one direction of a link, by the rules of faults/link_fault.h.
void Net::travel(Link& link, std::function<void()> deliver) {
    link.last = ++messages_;
    if (link.first <= mark_) link.first = link.last;
    if (link.fault.kind == LinkFault::Kind::hold) link.last_held = link.last;
    VTime due = world_.now() + latency();
    switch (link.fault.kind) {
        case LinkFault::Kind::blackhole:
        case LinkFault::Kind::reset: return;
        case LinkFault::Kind::hold: link.held.push_back(std::move(deliver)); return;
        case LinkFault::Kind::delay: {
            const auto jitter = static_cast<std::uint64_t>(link.fault.jitter.count()) * 1'000'000 + 1;
            due += link.fault.latency.count() * 1'000'000 + static_cast<VTime>(world_.random()() % jitter);
            break;
        }
        case LinkFault::Kind::pass: break;
    }
    due = std::max(due, link.last_due);  // a link never reorders
    link.last_due = due;
    world_.at(due, std::move(deliver));
}

// Sets the fault of one or both directions of a link pair; lifting a hold delivers, in order,
// what it held.
void Net::set_link(Link& up, Link& down, std::optional<Direction> direction, const LinkFault& fault) {
    for (Link* link : {&up, &down}) {
        if (direction && (link == &up) != (*direction == Direction::upstream)) continue;
        link->fault = fault;
        if (fault.kind == LinkFault::Kind::hold) link->hold_from = messages_;
        if (fault.kind == LinkFault::Kind::reset) link->held.clear();  // a reset destroys them
        if (fault.kind != LinkFault::Kind::pass && fault.kind != LinkFault::Kind::delay) continue;
        auto held = std::move(link->held);
        link->held.clear();
        for (auto& d : held) travel(*link, std::move(d));
    }
}

void Net::set_fault(int client, std::size_t node, std::optional<Direction> direction, const LinkFault& fault) {
    Path& p = path(client, node);
    set_link(p.up, p.down, direction, fault);
    if (fault.kind == LinkFault::Kind::reset)  // its connections are gone
        for (auto& [key, c] : conns_)
            if (c.client == client && key.second == node) {
                ++c.connection;
                c.connected = false;
            }
}

void Net::crash(std::size_t n) {
    SimNode& node = *nodes_.at(n);
    node.up = false;
    ++node.incarnation;
    node.model.restart(node.keeps_data);
    for (auto& [key, c] : conns_)
        if (c.physical == n) {
            ++c.connection;
            c.connected = false;
        }
    if (ReplicaGroup* g = group_of_master(n)) failover(*g, n);
}

void Net::restart(std::size_t n) { nodes_.at(n)->up = true; }

std::size_t Net::resolve(int, std::size_t node) {
    const auto g = groups_.find(node);
    return g == groups_.end() ? node : g->second.master;
}

ReplicaGroup* Net::group_of_master(std::size_t physical) {
    for (auto& [name, g] : groups_)
        if (g.master == physical) return &g;
    return nullptr;
}

void Net::add_replica(std::size_t master, std::size_t replica,
                      std::function<void(const std::string&, const std::string&)> sentinel_log) {
    ReplicaGroup& g = groups_[master];
    g.master = master;
    g.replica = replica;
    g.log = std::move(sentinel_log);
    nodes_.at(master)->model.track_changes();
}

void Net::set_replication_fault(std::optional<Direction> direction, const LinkFault& fault) {
    // The replica is the side that connects: upstream is its acks, downstream the data.
    for (auto& [name, g] : groups_) set_link(g.to_master, g.to_replica, direction, fault);
}

// The keys the last command changed go to the replica, in order; its ack comes back.
void Net::replicate(ReplicaGroup& g) {
    auto changes = nodes_.at(g.master)->model.take_changes();
    if (changes.empty() || !g.has_replica) return;
    const long long offset = ++g.offset;
    travel(g.to_replica, [this, &g, changes = std::move(changes), offset] {
        SimNode& replica = *nodes_.at(g.replica);
        if (!g.has_replica || !replica.up) return;
        replica.model.apply(changes);
        travel(g.to_master, [this, &g, offset] {
            if (!g.has_replica || !nodes_.at(g.master)->up) return;
            g.acked = std::max(g.acked, offset);
            auto waiting = std::move(g.waiting);
            g.waiting.clear();
            for (auto& [target, answer] : waiting) {
                if (target <= g.acked) answer();
                else g.waiting.emplace_back(target, std::move(answer));
            }
        });
    });
}

// WAIT numreplicas timeout: the replicas that acknowledged every write so far, once enough
// have or the timeout passes (0: no timeout). Without a replica, 0 after the timeout.
void Net::wait_for_replica(ReplicaGroup& g, const Command& cmd, std::function<void(Value)> answer) {
    const long long wanted = cmd.args.size() > 1 ? std::stoll(cmd.args[1]) : 0;
    const long long timeout_ms = cmd.args.size() > 2 ? std::stoll(cmd.args[2]) : 0;
    const long long target = g.offset;
    const bool replica = g.has_replica;
    const auto count = [&g, target, replica] { return replica && g.has_replica && g.acked >= target ? 1LL : 0LL; };
    auto once = std::make_shared<bool>(false);
    auto reply = [once, answer = std::move(answer), count] {
        if (*once) return;
        *once = true;
        Value v;
        v.type = Value::Type::integer;
        v.integer = count();
        answer(v);
    };
    if (count() >= wanted) return reply();
    if (replica) g.waiting.emplace_back(target, reply);
    if (timeout_ms > 0) world_.at(world_.now() + timeout_ms * 1'000'000, reply);
}

// Sentinel: the dead master is seen down, agreed down, and its replica promoted.
void Net::failover(ReplicaGroup& g, std::size_t crashed) {
    if (!g.has_replica) return;
    const std::string name = "master lockbench sim " + nodes_.at(crashed)->name;
    const VTime t = world_.now();
    constexpr VTime ms = 1'000'000;
    world_.at(t + 250 * ms, [&g, name] { g.log("+sdown", name); });
    world_.at(t + 800 * ms, [&g, name] { g.log("+odown", name + " #quorum 3/2"); });
    world_.at(t + 2000 * ms, [this, &g, crashed, name] {
        if (nodes_.at(crashed)->up || g.master != crashed) return;
        g.master = g.replica;
        g.has_replica = false;
        g.log("+failover-end", name);
        g.log("+switch-master", "lockbench sim " + nodes_.at(crashed)->name + " sim " + nodes_.at(g.master)->name);
    });
}

bool Net::send(int channel, std::size_t n, std::shared_ptr<const Command> shared, std::function<void(Reply)> done) {
    Conn& c = conn(channel, n);
    const int client = c.client;
    Path& p = path(client, n);
    if (!c.connected) c.physical = resolve(client, n);  // Sentinel is asked on (re)connecting
    const std::size_t target = c.physical;
    if (!nodes_.at(target)->up || p.up.fault.kind == LinkFault::Kind::reset) {
        c.connected = false;
        return false;
    }
    c.connected = true;
    const std::uint64_t connection = c.connection, incarnation = nodes_.at(target)->incarnation;
    travel(p.up, [this, channel, client, n, target, shared = std::move(shared), done = std::move(done), connection,
                  incarnation]() mutable {
        const Command& cmd = *shared;
        SimNode& node = *nodes_[target];
        if (!node.up || node.incarnation != incarnation) return;  // lost with the node
        auto respond = [this, channel, client, n, connection, done = std::move(done)](Reply r) {
            travel(path(client, n).down, [this, channel, n, r = std::move(r), done, connection] {
                if (conn(channel, n).connection == connection) done(r);  // else the client hung up
            });
        };
        const auto ok = [respond](Value v) { respond(Reply{NodeId{0}, Reply::Status::ok, std::move(v), "", false}); };
        ReplicaGroup* g = group_of_master(target);
        if (!cmd.args.empty() && (cmd.args[0] == "WAIT" || cmd.args[0] == "wait")) {
            if (g) return wait_for_replica(*g, cmd, ok);
            ReplicaGroup none;  // no replica: 0 after the timeout
            none.has_replica = false;
            return wait_for_replica(none, cmd, ok);
        }
        std::string error;
        Value v = node.model.execute(cmd, node.wall_ms(world_.now()), &error);
        if (g) replicate(*g);
        respond(Reply{NodeId{0}, Reply::Status::ok, std::move(v), error, !error.empty()});
    });
    return true;
}

// ---- SimEnv ----

SimEnv::SimEnv(Net& net, Process& process, std::vector<std::size_t> targets, std::function<void(Point)> on_point)
    : net_(net), process_(process), channel_(net.new_channel(process.id)), targets_(std::move(targets)),
      on_point_(std::move(on_point)) {}

void SimEnv::run_if_paused(World& world, Process& process) {
    while (process.paused) {
        Fiber* f = world.current();
        const std::uint64_t token = world.prepare_wait();
        process.on_resume.push_back([&world, f, token] { world.wake(f, token); });
        world.wait();
    }
}

void SimEnv::run_if_background_paused(World& world, Process& process, std::uint64_t* token, const bool* stopped) {
    run_if_paused(world, process);
    while (process.background_paused && !(stopped && *stopped)) {
        Fiber* f = world.current();
        const std::uint64_t t = world.prepare_wait();
        if (token) *token = t;
        process.on_background_resume.push_back([&world, f, t] { world.wake(f, t); });
        world.wait();
        run_if_paused(world, process);
    }
}

std::vector<Reply> SimEnv::exchange(const std::vector<int>& requests, const Command& cmd, Duration timeout,
                                    std::optional<Point> after_send) {
    World& w = net_.world();
    if (background_) run_if_background_paused(w, process_, wait_token_, stopped_);  // a held task sends nothing
    if (stopped_ && *stopped_) {
        std::vector<Reply> replies;
        for (const int id : requests)
            replies.push_back(Reply{NodeId{id}, Reply::Status::unknown, {}, "background task stopped", false});
        return replies;
    }
    struct Call {
        std::vector<Reply> replies;
        std::vector<bool> done;
        std::size_t left = 0;
        bool alive = true;
        Fiber* fiber = nullptr;
        std::uint64_t token = 0;
        bool waiting = false;
    };
    auto call = std::make_shared<Call>();
    call->fiber = w.current();
    call->left = requests.size();
    call->done.assign(requests.size(), false);
    const auto finish = [&w, call](std::size_t i, Reply r) {
        if (!call->alive || call->done[i]) return;
        r.node = call->replies[i].node;
        call->replies[i] = std::move(r);
        call->done[i] = true;
        if (--call->left == 0 && call->waiting) w.wake(call->fiber, call->token);
    };
    const auto shared = std::make_shared<const Command>(cmd);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const int id = requests[i];
        call->replies.push_back(Reply{NodeId{id}, Reply::Status::unknown, {}, "", false});
        const std::size_t target = targets_.at(static_cast<std::size_t>(id));
        if (!net_.send(channel_, target, shared, [finish, i](Reply r) { finish(i, std::move(r)); }))
            finish(i, Reply{NodeId{id}, Reply::Status::error, {}, "Connection refused", false});
    }
    // The timeout is judged by the client: not while it is paused, and a reply that arrived
    // meanwhile wins, as it would be waiting in the socket.
    std::function<void()> expire = [this, call, finish] {
        if (!call->alive) return;  // the call is over (answered, or its fiber killed)
        for (std::size_t i = 0; i < call->done.size(); ++i) {
            if (call->done[i]) continue;
            Conn& c = net_.conn(channel_, targets_.at(static_cast<std::size_t>(call->replies[i].node.value)));
            ++c.connection;  // the connection is dropped, as LiveEnv drops it
            c.connected = false;
            finish(i, Reply{call->replies[i].node, Reply::Status::unknown, {}, "timed out", false});
        }
    };
    w.at(w.now() + timeout.count(), [this, call, expire] {
        if (!call->alive || call->left == 0) return;
        if (process_.paused) process_.on_resume.push_back(expire);
        else expire();
    });
    // However this ends (answered, or the fiber killed at a point), late events find it over.
    struct Over {
        std::shared_ptr<Call> call;
        ~Over() { call->alive = false; }
    } over{call};
    if (after_send) reach(*after_send);
    while (call->left > 0) {
        call->token = w.prepare_wait();
        call->waiting = true;
        w.wait();
        call->waiting = false;
        run_if_paused(w, process_);
    }
    return std::move(call->replies);
}

Reply SimEnv::command(NodeId node, const Command& cmd, Duration timeout, std::optional<Point> after_send) {
    return exchange({node.value}, cmd, timeout, after_send).front();
}

std::vector<Reply> SimEnv::fan_out(const Command& cmd, Duration timeout, std::optional<Point> after_send) {
    std::vector<int> requests(static_cast<std::size_t>(node_count()));
    std::iota(requests.begin(), requests.end(), 0);
    return exchange(requests, cmd, timeout, after_send);
}

void SimEnv::sleep(Duration d) {
    World& w = net_.world();
    w.sleep_until(w.now() + std::max<long long>(0, d.count()));
    if (background_) run_if_background_paused(w, process_, wait_token_, stopped_);
    else run_if_paused(w, process_);
}

void SimEnv::reach(Point p) {
    if (on_point_) on_point_(p);
    run_if_paused(net_.world(), process_);
}

namespace {

// A background task (the watchdog): a fiber of the same process, with its own env.
class SimTask final : public BackgroundTask, public StopSignal {
public:
    SimTask(Net& net, Process& process, std::vector<std::size_t> targets, std::function<void(Point)> on_point,
            std::function<void(Env&, StopSignal&)> task)
        : world_(net.world()), process_(process), env_(net, process, std::move(targets), std::move(on_point)) {
        env_.mark_background(&sleep_token_, &stop_);
        fiber_ = world_.spawn("task", [this, task = std::move(task)] {
            task(env_, *this);
            if (stopper_) world_.at(world_.now(), [w = &world_, f = stopper_, t = stopper_token_] { w->wake(f, t); });
        });
        process_.fibers.push_back(fiber_);
    }
    ~SimTask() override {
        try {
            stop();
        } catch (const FiberKilled&) {  // its process was killed while waiting for the task
            world_.kill(fiber_);
        }
    }

    bool sleep_unless_stopped(Duration d) override {
        if (stop_) return false;
        sleep_token_ = world_.prepare_wait();
        world_.at(world_.now() + d.count(), [w = &world_, f = fiber_, t = sleep_token_] { w->wake(f, t); });
        world_.wait();
        // Held, the sleep ends only when the tasks are resumed (at once, if it was over).
        SimEnv::run_if_background_paused(world_, process_, &sleep_token_, &stop_);
        return !stop_;
    }

    void stop() override {
        if (stop_) return;
        stop_ = true;
        Fiber* me = world_.current();
        if (fiber_->finished()) return;
        if (!me || me->killed() || std::uncaught_exceptions() > 0) {  // its process is gone
            world_.kill(fiber_);
            return;
        }
        // Wake it from its sleep, and wait until it has returned.
        world_.at(world_.now(), [w = &world_, f = fiber_, t = sleep_token_] { w->wake(f, t); });
        stopper_ = me;
        stopper_token_ = world_.prepare_wait();
        world_.wait();
    }

private:
    World& world_;
    Process& process_;
    SimEnv env_;
    Fiber* fiber_ = nullptr;
    bool stop_ = false;
    std::uint64_t sleep_token_ = 0;
    Fiber* stopper_ = nullptr;
    std::uint64_t stopper_token_ = 0;
};

}  // namespace

std::unique_ptr<BackgroundTask> SimEnv::background(std::function<void(Env&, StopSignal&)> task) {
    return std::make_unique<SimTask>(net_, process_, targets_, on_point_, std::move(task));
}

}  // namespace lockbench::sim
