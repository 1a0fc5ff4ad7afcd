#include "sim/engine/fault_schedule.h"

#include "sim/engine/fault_kind.h"

#include "sim/engine/recorder.h"  // json_escape
#include "sim/engine/store.h"     // StoreKeys

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace lockbench {

namespace {

constexpr long long kNsPerMs = 1'000'000;
constexpr long long kRestartPollNs = 5 * kNsPerMs;  // how often a starting node is asked whether it is back
constexpr long long kRepliesPollNs = 5 * kNsPerMs;  // how often a start asks whether held replies came
constexpr long long kHoldPollNs = 2 * kNsPerMs;     // how often a fault "until another enters" reads the store's log
constexpr long long kLeaderPollNs = 20 * kNsPerMs;  // how often a gate "until a leader" asks the servers (a connection each)

// What every fault line starts with, up to the label; the caller adds the rest and the "}".
std::string fault_line_head(long long t_ns, const char* type, const FaultSpec& fault) {
    return "{\"t_ns\":" + std::to_string(t_ns) + ",\"op\":\"fault\",\"type\":\"" + type + "\",\"fault\":\"" +
           fault_kind_name(fault.kind) + "\",\"label\":" + json_escape(fault.label());
}

}  // namespace

std::string fault_log_line(long long t_ns, const char* type, const FaultSpec& fault, int client,
                           std::optional<int> node, const std::string& extra) {
    return fault_line_head(t_ns, type, fault) + ",\"client\":" + std::to_string(client) +
           (node ? ",\"node\":" + std::to_string(*node) : "") + extra + "}\n";
}

FaultSchedule::FaultSchedule(std::vector<FaultSpec> faults, FaultActuator& world, LogSink log, TimerBooked booked)
    : specs_(std::move(faults)), state_(specs_.size()), world_(world), log_(std::move(log)),
      booked_(std::move(booked)) {}

std::vector<std::string> FaultSchedule::armed_points() const {
    std::vector<std::string> names;
    for (const auto& f : specs_)
        if (f.point) names.push_back(point_name(*f.point));
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].keep_holder_ms) {  // where the holder is kept, the others' next tries
            names.push_back(point_name(kept_at(i)));
            names.push_back(point_name(Point::before_acquire));
            names.push_back(point_name(Point::in_line));
        }
    if (start_after_) {
        names.push_back(point_name(Point::before_acquire));
        names.push_back(point_name(start_after_->point));
    }
    std::ranges::sort(names);
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

void FaultSchedule::start(int clients, long long start_at_ns, long long now_ns, std::uint64_t seed) {
    clients_ = clients;
    start_at_ns_ = start_at_ns;
    killed_.assign(static_cast<std::size_t>(clients), false);
    gone_.assign(static_cast<std::size_t>(clients), false);
    last_point_.assign(static_cast<std::size_t>(clients), std::nullopt);
    start_reached_.assign(static_cast<std::size_t>(clients), false);
    start_open_ = !start_after_ || clients < 2;
    if (!start_open_) book(start_at_ns + start_after_->max_ms * kNsPerMs, Timer::What::open_start, 0, 0);
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const FaultSpec& f = specs_[i];
        if (f.repeats()) {
            state_[i].rng = Rng(derive_seed(seed, 1000 + i));
            const long long first_ns = f.at_ms ? *f.at_ms * kNsPerMs : draw_ns(i, *f.every_ms);
            if (!before_until(i, start_at_ns + first_ns)) continue;  // the first is past the end too
            if (first_ns == 0) fire_repeat(i, now_ns);
            else book(start_at_ns + first_ns, Timer::What::fire, i, 0);
            continue;
        }
        if (!f.at_ms) continue;
        if (*f.at_ms == 0) fire(i, f.client.value_or(0), now_ns);
        else book(start_at_ns + *f.at_ms * kNsPerMs, Timer::What::fire, i, f.client.value_or(0));
    }
}

// Every fault armed at this point counts the reach; those that are due are all put in place
// before the client hears anything. A kill or a gate, which do not let this client go on,
// come last, and nothing fires after a kill.
FaultSchedule::Answer FaultSchedule::reach(int client, Point point, long long now_ns) {
    if (client >= 0 && client < clients_) last_point_.at(static_cast<std::size_t>(client)) = point;
    if (point == Point::before_acquire) std::erase(in_line_, client);  // a new attempt
    if (point == Point::in_line && std::ranges::find(in_line_, client) == in_line_.end()) in_line_.push_back(client);
    std::vector<bool> kept_before(specs_.size());
    for (std::size_t i = 0; i < specs_.size(); ++i) kept_before[i] = state_[i].keeping.has_value();
    bool answer = true;
    for (std::size_t i : due_at(client, point)) {
        answer = fire(i, client, now_ns) && answer;
        if (killed(client)) return Answer::killed;
    }
    // After its faults: the start opens even when a gate holds this client there.
    const bool held = start_holds(client, point, now_ns) || !answer;
    if (keep_holds(client, point, now_ns, !held, kept_before) || held) return Answer::held;
    return armed_at(client, point) || start_waits_for(client, point) ? Answer::go : Answer::disarm;
}

// The start: the first client reaching its point opens it (after its faults there are in
// place: the others set out into what they did); until then the others wait at their first
// acquire.
bool FaultSchedule::start_holds(int client, Point point, long long now_ns) {
    if (start_open_) return false;
    if (client == start_after_->client) {
        if (point == start_after_->point) open_start(now_ns);
        return false;
    }
    if (point != Point::before_acquire || start_reached_.at(static_cast<std::size_t>(client))) return false;
    start_reached_.at(static_cast<std::size_t>(client)) = true;
    start_held_.push_back(client);
    world_.hold(client);
    return true;
}

// Opened from a client's reach, the others are let go by a timer due at once, as a gate's
// are: the simulator switches to a client's fiber only from the world, never from another's.
// A node that a crash there restarts at once is part of what the others set out into: they
// wait until it is back (restart_outcome opens the start then). How long a server takes to
// start is the machine's; an acquire sent while it starts can fail with its outcome unknown (a
// key written, a refusal reported) and tell another story than the case's.
//
// A client whose replies a link fault holds (held-replies) has reached its point before it
// sends: the others set out once its request has reached its nodes, so that they meet a lock
// it holds there rather than race its send (a library under load has taken over 70 ms to send
// its first command). That is asked of the world every few milliseconds until then.
void FaultSchedule::open_start(long long now_ns) {
    if (start_open_) return;
    start_point_reached_ = true;
    if (restarting_at_once()) return;
    if (replies_pending()) {
        if (!replies_polling_) book(now_ns + kRepliesPollNs, Timer::What::replies_check, 0, 0);
        replies_polling_ = true;
        return;
    }
    start_open_ = true;
    book(now_ns, Timer::What::open_start, 0, 0);
}

// A hold of the start's client's replies (downstream only) set at the start's point: every
// node path it has sent on since has had its last request answered into the hold, and one
// path has (a path it has not sent on is not waited for: a ZooKeeper server it is not
// connected to, or the next node of a Redlock that writes them one after another; but so is
// one a slow client has not sent on yet: its case's start stagger makes that rare, and
// check_overtaken() finds another client there first). A hold let go before then: the others
// set out into a story that did not begin. The order requests reach the nodes in is marked
// before the paths are asked: a request after the mark shows in its path's answer or counts
// as sent after the start opened.
bool FaultSchedule::replies_pending() {
    const int client = start_after_->client;
    if (start_client_gone_) return false;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const FaultSpec& f = specs_[i];
        State& s = state_[i];
        if (f.link.kind != LinkFault::Kind::hold ||
            f.direction != Direction::downstream || f.point != start_after_->point || s.replies_came ||
            std::ranges::find(s.fired_on, client) == s.fired_on.end())
            continue;
        const bool in_force = std::ranges::find(s.in_force, client) != s.in_force.end() ||
                              (!f.duration_ms && !f.duration_drawn_ms && !s.healed);
        if (!in_force) {
            unmet_.push_back(f.label() + ": client " + std::to_string(client) +
                             "'s replies were let go before its request had reached its nodes (start_after)");
            s.replies_came = true;  // said once
            continue;
        }
        world_.mark_requests();
        std::vector<int> sent;
        for (int n : f.link_nodes) {
            const FaultActuator::HeldPath path = world_.held_path({LinkPath::To::node, client, n});
            if (path == FaultActuator::HeldPath::asked) return true;
            if (path == FaultActuator::HeldPath::answered) sent.push_back(n);
        }
        if (sent.empty() && !f.link_nodes.empty()) return true;
        s.replies_came = true;
        overtaking_ = Overtaking{i, std::move(sent)};
    }
    return false;
}

// The others set out once the start's client's request had reached the nodes it had sent to;
// a node it sent to only later, still within the hold, may have seen another client's request
// first (a library that sends its SETs in parallel but slowly under load): that client then
// took the node. When so many were taken that the rest are no majority of the hold's nodes,
// the late answers that were the story could not make one: not as written. Asked when the
// hold ends (what the client sends after it, a Redlock writing its nodes one by one, is not
// the hold's); a node it did not send to meanwhile was taken by nobody from it. A request is
// any bytes: a reconnect's handshake counts as one.
void FaultSchedule::check_overtaken(std::size_t i, int client) {
    if (!overtaking_ || overtaking_->fault != i || client != start_after_->client) return;
    const Overtaking watch = *std::exchange(overtaking_, std::nullopt);
    const std::vector<int>& nodes = specs_[i].link_nodes;
    std::string taken;  // "node 3 by client 2, node 4 by client 1"
    std::size_t lost = 0;
    for (int n : nodes) {
        if (std::ranges::find(watch.sent, n) != watch.sent.end()) continue;
        const long long own = world_.first_request({LinkPath::To::node, client, n});
        if (!own) continue;  // not sent to while its replies were held
        for (int other = 0; other < clients_; ++other) {
            const long long theirs = other == client ? 0 : world_.first_request({LinkPath::To::node, other, n});
            if (!theirs || theirs > own) continue;
            taken += (lost++ ? ", node " : "node ") + std::to_string(n) + " by client " + std::to_string(other);
            break;
        }
    }
    if (!lost || nodes.size() - lost >= nodes.size() / 2 + 1) return;  // none taken: no story lost
    unmet_.push_back(specs_[i].label() + ": another client's request reached " + taken + " before client " +
                     std::to_string(client) + "'s, which it sent there while its replies were held: the rest are no " +
                     "majority of " + std::to_string(nodes.size()) + " (start_after)");
}

// Why the start opened by its bound: its client never got to its point, or got there and its
// held replies did not come.
std::string FaultSchedule::start_missed() const {
    const std::string what = start_point_reached_ ? "'s request, its replies held, had not reached its nodes"
                                                  : " did not reach " + std::string(point_name(start_after_->point));
    return "client " + std::to_string(start_after_->client) + what + " within " + std::to_string(start_after_->max_ms) +
           " ms of the start (start_after)";
}

bool FaultSchedule::restarting_at_once() const {
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].restart_after_ms == 0 && !state_[i].in_force.empty())  // a crash's
            return true;
    return false;
}

void FaultSchedule::let_go_start() {
    start_open_ = true;
    for (int c : start_held_) world_.let_go(c);
    start_held_.clear();
}

// Whether a client must go on reporting a point for the start's sake.
bool FaultSchedule::start_waits_for(int client, Point point) const {
    if (start_open_) return false;
    if (client == start_after_->client) return point == start_after_->point && !start_point_reached_;
    return point == Point::before_acquire && !start_reached_.at(static_cast<std::size_t>(client));
}

std::vector<std::size_t> FaultSchedule::due_at(int client, Point point) {
    std::vector<std::size_t> due;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const FaultSpec& f = specs_[i];
        if (state_[i].done || f.point != point || (f.client && *f.client != client)) continue;
        if (++state_[i].seen >= f.occurrence) due.push_back(i);
    }
    std::ranges::stable_partition(due, [&](std::size_t i) { return !fault_kind(specs_[i].kind).blocks_client; });
    return due;
}

bool FaultSchedule::armed_at(int client, Point point) const {
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if ((!state_[i].done && specs_[i].point == point && (!specs_[i].client || *specs_[i].client == client)) ||
            keep_armed(i, client, point))
            return true;
    return false;
}

// Puts the fault in place; each action comes before its log line, except a kill's (in the
// simulator it does not return) and a gate's (the line says the client arrived). Returns
// false when the client must not be answered now (killed, or held at a gate).
bool FaultSchedule::fire(std::size_t i, int client, long long now_ns) {
    const FaultSpec& f = specs_[i];
    State& s = state_[i];
    s.fired_on.push_back(client);
    s.fired_ns = now_ns;
    s.done = !f.repeats();  // a gate is done once it has gathered its clients (gate(), hold_until())
    if (f.node) s.node = world_.resolve_node(*f.node);  // "leader": whoever leads now
    FaultFiring on(*this, i, client, now_ns);
    return fault_kind(f.kind).fire(on);
}

// ---- what a kind acts through (fault_kind.h) ----------------------------------------------

const FaultSpec& FaultFiring::spec() const { return schedule_.specs_[fault_]; }
FaultActuator& FaultFiring::world() { return schedule_.world_; }
int FaultFiring::node() const { return schedule_.state_[fault_].node; }
void FaultFiring::log(const char* type) { schedule_.log(now_ns_, type, fault_, client_, occurrence_); }
void FaultFiring::not_in_place(const std::string& why) { schedule_.unmet_.push_back(spec().label() + ": " + why); }
void FaultFiring::ended() { schedule_.ended(fault_, client_); }
void FaultFiring::set_links(bool heal) { schedule_.set_links(fault_, client_, heal); }

void FaultFiring::lasts() {
    schedule_.state_[fault_].in_force.push_back(client_);
    schedule_.book(now_ns_ + schedule_.length_ns(fault_), FaultSchedule::Timer::What::end, fault_, client_);
}

void FaultFiring::restarts_after(long long after_ms) {
    schedule_.state_[fault_].in_force.push_back(client_);
    schedule_.book(now_ns_ + after_ms * kNsPerMs, FaultSchedule::Timer::What::restart, fault_, client_);
}

void FaultFiring::killed() { schedule_.killed_.at(static_cast<std::size_t>(client_)) = true; }

// A gate fires once per client it gathers: done once all are there, or at once "until".
bool FaultFiring::gate() {
    schedule_.state_[fault_].done = false;
    return spec().until_another_enters || spec().until_leader ? schedule_.hold_until(fault_, client_, now_ns_)
                                                              : schedule_.gate(fault_, client_, now_ns_);
}

// Holds the client at its point until the store's log shows another client's enter after
// this moment (the forced form of "another client takes the lock while this one still
// believes it holds it"), or until a server leads ("until": "leader"), or until max_ms is up.
// The store is read every couple of milliseconds, the servers every kLeaderPollNs.
bool FaultSchedule::hold_until(std::size_t i, int client, long long now_ns) {
    State& s = state_[i];
    s.done = true;
    log(now_ns, "start", i, client);
    s.held.push_back(client);
    world_.hold(client);
    s.waiting = true;
    s.wait_began_ns = now_ns;
    if (!specs_[i].until_leader) mark_store_log(i);  // a leader is asked of the servers, not the store
    s.bound_left_ns = specs_[i].max_ms * kNsPerMs;
    start_counting(i, now_ns);
    check_end(i, client, now_ns);
    return false;  // check_end lets it go
}

// A wait's bound counts only once no crashed node is still coming back: another client can
// enter only then, and how long a node takes to restart is the machine's, not the lock's. Until
// then the wait is unbounded; heal() ends it at the run's end, which the case did not write.
void FaultSchedule::start_counting(std::size_t i, long long now_ns) {
    State& s = state_[i];
    if (healing_ || s.counting_from_ns || node_coming_back()) return;
    s.counting_from_ns = now_ns;
    s.hold_ends_ns = now_ns + s.bound_left_ns;
}

bool FaultSchedule::node_coming_back() const {
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (specs_[i].restart_after_ms &&  // a crash's
            (!state_[i].in_force.empty() || state_[i].unasked))
            return true;
    return false;
}

void FaultSchedule::mark_store_log(std::size_t i) {
    const auto length = world_.ask_store({"LLEN", StoreKeys{}.log});
    state_[i].log_mark = length && length->type == Value::Type::integer ? length->integer : 0;
}

// A pause or a link fault "until another enters" whose duration is over lasts on until the
// store's log shows another client's enter after this moment, up to max_ms in all (a gate
// waits so from the start, hold_until).
void FaultSchedule::wait_for_another(const Timer& t, long long now_ns) {
    State& s = state_[t.fault];
    s.waiting = true;
    s.wait_began_ns = now_ns;
    mark_store_log(t.fault);
    s.bound_left_ns = (specs_[t.fault].max_ms - specs_[t.fault].duration_ms) * kNsPerMs;
    start_counting(t.fault, now_ns);
    check_end(t.fault, t.client, now_ns);
}

void FaultSchedule::check_end(std::size_t i, int client, long long now_ns) {
    State& s = state_[i];
    if (!s.waiting) return;  // ended already (the run was healed, or its gated client is gone)
    start_counting(i, now_ns);
    const bool entered = specs_[i].until_leader ? world_.has_leader() : entered_since(s.log_mark, client).has_value();
    if (!entered && (!s.counting_from_ns || now_ns < s.hold_ends_ns)) {
        const long long next_ns = now_ns + (specs_[i].until_leader ? kLeaderPollNs : kHoldPollNs);
        book(s.counting_from_ns ? std::min(next_ns, s.hold_ends_ns) : next_ns, Timer::What::until_check, i, client);
        return;
    }
    end_waiting(i, client, now_ns, !entered);
}

// Ends a fault "until another enters": its client let go, resumed, or its links healed. Its
// window is kept for the report (and so for the check that others tried meanwhile). Another
// client entering is the story, whenever it comes (a node can answer before its restart is
// reported done); a wait the run's end cut before its bound began to count is one that did not
// happen.
void FaultSchedule::end_waiting(std::size_t i, int client, long long now_ns, bool by_bound) {
    State& s = state_[i];
    s.waiting = false;
    if (!s.counting_from_ns && by_bound) {
        unmet_.push_back(specs_[i].label() + ": a crashed node was still coming back when the run ended");
    } else {
        waits_.resize(specs_.size());
        // How far past max_ms it lasted, the wait for a crashed node aside: the nemesis's own
        // lateness (a stalled machine), which as_written.cpp judges.
        const long long deferred_ns = s.counting_from_ns.value_or(now_ns) - s.wait_began_ns;
        const long long late_ns = now_ns - s.fired_ns - deferred_ns - specs_[i].max_ms * kNsPerMs;
        waits_[i].push_back({{"client", client}, {"from_ns", s.counting_from_ns.value_or(now_ns)}, {"to_ns", now_ns},
                             {"bound", by_bound}, {"late_ns", std::max(0LL, late_ns)}});
    }
    s.counting_from_ns.reset();
    if (specs_[i].keep_holder_ms && !s.keep_over) {
        // Whoever is inside its section now (the store's log ends with its enter), not the
        // first to have entered: on a late look that one may have left already.
        const auto holder = by_bound ? std::nullopt : world_.current_holder();
        s.keep_over = !holder || *holder == client || by_bound;
        if (holder && *holder != client) begin_keep(i, *holder, now_ns);
        else if (!by_bound) nobody_to_keep(i, client, now_ns);
    }
    std::erase(state_[i].held, client);  // a gate's
    end(i, client, now_ns);
}

// The first client (not `other_than`; only `only`, if given) whose enter the store's log
// shows after `log_mark`.
std::optional<int> FaultSchedule::entered_since(long long log_mark, int other_than, std::optional<int> only) {
    const auto records = world_.ask_store({"LRANGE", StoreKeys{}.log, std::to_string(log_mark), "-1"});
    if (!records) return std::nullopt;
    for (const Value& r : records->elements) {
        const auto j = nlohmann::json::parse(r.str, nullptr, false);
        if (!j.is_object() || j.value("kind", "") != "enter" || !j.contains("client") || !j.at("client").is_number_integer())
            continue;
        const int c = j.at("client").get<int>();
        if (c != other_than && (!only || c == *only)) return c;
    }
    return std::nullopt;
}

// ---- keep_holder_ms: the holder stays until the late answer has come ---------------------

// The client that entered stays in its section: held when it reaches its before_release,
// until the fault's client has entered (the store's log, read every couple of milliseconds),
// is back at its before_acquire (its acquire failed) or waits in its library's queue behind
// the holder (in_line: its adapter said so), or keep_holder_ms is up.
void FaultSchedule::begin_keep(std::size_t i, int holder, long long now_ns) {
    State& s = state_[i];
    s.keeping = holder;
    s.keep_from_ns = now_ns;
    s.keep_bound_from_ns = now_ns;
    // Its acquire said it waits in line before the holder entered: it waits behind the holder now.
    if (std::ranges::find(in_line_, specs_[i].client.value_or(0)) != in_line_.end())
        return end_keep(i, now_ns, "in line");
    book(now_ns + kHoldPollNs, Timer::What::keep_check, i, holder);
}

// Another entered, but nobody is inside its section when the wait ends (it looked late): the
// late answer would meet nobody, which as_written.cpp says.
void FaultSchedule::nobody_to_keep(std::size_t i, int client, long long now_ns) {
    kept_.resize(specs_.size());
    kept_[i].push_back({{"client", client}, {"from_ns", now_ns}, {"to_ns", now_ns}, {"ended", "nobody inside"},
                        {"keep_ms", specs_[i].keep_holder_ms}, {"late_ns", 0}});
}

bool FaultSchedule::keep_armed(std::size_t i, int client, Point point) const {
    const FaultSpec& f = specs_[i];
    if (!f.keep_holder_ms || state_[i].keep_over) return false;
    if (keeps_after_end(i))  // anyone may be the holder, anyone's answer ends it
        return point == kept_at(i) || point == Point::before_acquire || point == Point::in_line;
    const bool kept_for = client == f.client.value_or(0);
    return (point == Point::before_release && !kept_for) ||
           ((point == Point::before_acquire || point == Point::in_line) && kept_for);
}

// The kept-for client back at before_acquire ends the keep whatever else holds it there; the
// holder is held here only when nothing else holds it already (`may_hold`).
bool FaultSchedule::keep_holds(int client, Point point, long long now_ns, bool may_hold,
                               const std::vector<bool>& kept_before) {
    bool hold = false;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        State& s = state_[i];
        if (s.watching && (point == Point::before_acquire || point == Point::in_line) && client != s.keeping) {
            s.answered.at(static_cast<std::size_t>(client)) = true;  // its acquire answered: no lock (or in line)
            s.last_answered = client;
        }
        // Kept after the fault's end: the first client to report `entered` (its enter landed)
        // since is the holder, held there at once, inside its section (a look at the log could
        // come after it left).
        if (s.watching && !s.keeping && may_hold && point == kept_at(i) && entered_since(s.log_mark, -1, client)) {
            s.keeping = client;
            s.keep_from_ns = now_ns;
        }
        if (!s.keeping) continue;
        if (may_hold && point == kept_at(i) && client == *s.keeping && !s.keep_held) {
            s.keep_held = true;
            world_.hold(client);
            hold = true;
        } else if (s.watching) {
            continue;  // ended by check_watch alone
        } else if (point == Point::before_acquire && client == specs_[i].client.value_or(0) && kept_before[i]) {
            end_keep(i, now_ns, "failed");  // its acquire answered: no lock (this reach's own wait aside)
        } else if (point == Point::in_line && client == specs_[i].client.value_or(0)) {
            end_keep(i, now_ns, "in line");  // its late answer met the holder: it waits behind it
        }
    }
    return hold;
}

void FaultSchedule::check_keep(std::size_t i, long long now_ns) {
    State& s = state_[i];
    if (s.watching) return check_watch(i, now_ns);
    if (!s.keeping) return;
    const int kept_for = specs_[i].client.value_or(0);
    const long long ends_ns = s.keep_from_ns + specs_[i].keep_holder_ms * kNsPerMs;
    if (entered_since(s.log_mark, -1, kept_for)) return end_keep(i, now_ns, "entered");
    if (now_ns >= ends_ns) return end_keep(i, now_ns, "bound");
    book(std::min(now_ns + kHoldPollNs, ends_ns), Timer::What::keep_check, i, *s.keeping);
}

// Its record says how it ended: "entered", "failed" (the kept-for client's acquire), "in line"
// (the kept-for client waits in its library's queue behind the holder), "bound",
// "holder gone", "client gone", "run ended" (or, from nobody_to_keep, "nobody inside");
// as_written.cpp reads it.
void FaultSchedule::end_keep(std::size_t i, long long now_ns, const char* how, std::optional<int> client) {
    State& s = state_[i];
    if (s.watching && !s.keeping) return end_watch(i, now_ns, how);
    if (!s.keeping) return;
    kept_.resize(specs_.size());
    const long long late_ns = now_ns - s.keep_bound_from_ns - specs_[i].keep_holder_ms * kNsPerMs;
    kept_[i].push_back({{"holder", *s.keeping}, {"from_ns", s.keep_from_ns}, {"to_ns", now_ns}, {"ended", how},
                        {"keep_ms", specs_[i].keep_holder_ms}, {"late_ns", std::max(0LL, late_ns)}});
    // Kept for the fault's client; after a fault's end, for every other (the one that entered
    // or answered last, when there is one).
    if (!keeps_after_end(i)) kept_[i].back()["client"] = specs_[i].client.value_or(0);
    else if (client) kept_[i].back()["client"] = *client;
    if (keeps_after_end(i)) kept_[i].back()["for"] = "others";
    if (s.keep_held) book(now_ns, Timer::What::let_holder_go, i, *s.keeping);
    s.keeping.reset();
    s.keep_held = false;
    s.keep_over = true;
    s.watching = false;
}

// ---- keep_holder_ms without "until": the first to enter after the fault, kept ------------

bool FaultSchedule::keeps_after_end(std::size_t i) const { return specs_[i].keeps_after_end(); }

// Where a kept holder waits: with "until", at its release (the lock held: the late answer
// meets it); after a fault's end, right after its enter landed, inside its section in the
// store (the two holders the late answers made are inside together, whether or not the first
// then writes).
Point FaultSchedule::kept_at(std::size_t i) const {
    return keeps_after_end(i) ? Point::entered : Point::before_release;
}

// The fault is over: every client's acquire in flight is answered from now on (a disk stall's
// flushes done). A client with none in flight (its last point reported was not before_acquire
// or in_line: it is inside a section, or past one) has nothing to answer. The store's log is
// read every couple of milliseconds for another's enter.
void FaultSchedule::watch_after_end(std::size_t i, long long now_ns) {
    State& s = state_[i];
    if (s.keep_over || s.watching || healing_) return;
    s.watching = true;
    s.keep_bound_from_ns = now_ns;
    s.answered.assign(static_cast<std::size_t>(clients_), true);
    for (int c = 0; c < clients_; ++c) {
        const auto last = last_point_.at(static_cast<std::size_t>(c));
        const bool in_flight = last == Point::before_acquire || last == Point::in_line;
        s.answered.at(static_cast<std::size_t>(c)) = gone_.at(static_cast<std::size_t>(c)) || !in_flight;
    }
    mark_store_log(i);
    book(now_ns + kHoldPollNs, Timer::What::keep_check, i, 0);
}

// Every client but `but` has answered since the fault ended (or is gone).
bool FaultSchedule::all_answered(std::size_t i, std::optional<int> but) const {
    for (int c = 0; c < clients_; ++c)
        if (c != but && !state_[i].answered.at(static_cast<std::size_t>(c))) return false;
    return true;
}

// Nobody is kept yet: the first to report `entered` since the fault ended
// will be (keep_holds); every acquire answered with none entered ends the watch ("none
// entered": the lock refused them all). Kept: another's enter ends it ("entered"), so does
// every other client's acquire answered ("failed"), or the bound.
void FaultSchedule::check_watch(std::size_t i, long long now_ns) {
    State& s = state_[i];
    if (!s.keeping && !entered_since(s.log_mark, -1) && all_answered(i, std::nullopt))
        return end_watch(i, now_ns, "none entered");
    if (s.keeping) {
        if (const auto other = entered_since(s.log_mark, *s.keeping)) return end_keep(i, now_ns, "entered", other);
        if (all_answered(i, s.keeping))
            return end_keep(i, now_ns, "failed", s.last_answered >= 0 && s.last_answered != *s.keeping
                                                       ? std::optional(s.last_answered) : std::nullopt);
    }
    const long long ends_ns = s.keep_bound_from_ns + specs_[i].keep_holder_ms * kNsPerMs;
    if (now_ns >= ends_ns) return s.keeping ? end_keep(i, now_ns, "bound") : end_watch(i, now_ns, "bound");
    book(std::min(now_ns + kHoldPollNs, ends_ns), Timer::What::keep_check, i, 0);
}

// A watch that ends with nobody kept: its record has no holder.
void FaultSchedule::end_watch(std::size_t i, long long now_ns, const char* how) {
    State& s = state_[i];
    kept_.resize(specs_.size());
    const long long late_ns = now_ns - s.keep_bound_from_ns - specs_[i].keep_holder_ms * kNsPerMs;
    kept_[i].push_back({{"from_ns", s.keep_bound_from_ns}, {"to_ns", now_ns}, {"ended", how},
                        {"keep_ms", specs_[i].keep_holder_ms}, {"late_ns", std::max(0LL, late_ns)}});
    s.watching = false;
    s.keep_over = true;
}

// Holds clients at the point until `count` are there, then lets them go `stagger_ms` apart.
bool FaultSchedule::gate(std::size_t i, int client, long long now_ns) {
    const FaultSpec& f = specs_[i];
    State& s = state_[i];
    log(now_ns, "start", i, client);
    s.held.push_back(client);
    world_.hold(client);
    if (static_cast<int>(s.held.size()) < f.count) return false;
    s.done = true;
    for (std::size_t k = 0; k < s.held.size(); ++k)
        book(now_ns + static_cast<long long>(k) * f.stagger_ms * kNsPerMs, Timer::What::end, i, s.held[k]);
    s.held.clear();
    return false;  // their end timers answer them
}

void FaultSchedule::book(long long at_ns, Timer::What what, std::size_t fault, int client) {
    // The start's opening, and its asking after held replies, are the timers of no fault.
    const bool repeats = what != Timer::What::open_start && what != Timer::What::replies_check && specs_[fault].repeats();
    const auto occurrence = repeats ? std::optional(state_[fault].occurrences) : std::nullopt;
    timers_.push_back({at_ns, what, fault, client, true, occurrence});
    if (booked_) booked_(at_ns, timers_.size() - 1);
}

void FaultSchedule::run_due(long long now_ns) {
    std::vector<std::size_t> due;
    for (std::size_t t = 0; t < timers_.size(); ++t)
        if (timers_[t].pending && timers_[t].at_ns <= now_ns) due.push_back(t);
    for (std::size_t t : due) run_timer(t, now_ns);
}

void FaultSchedule::run_timer(std::size_t timer, long long now_ns) {
    if (timer >= timers_.size() || !timers_[timer].pending) return;
    timers_[timer].pending = false;
    run(Timer(timers_[timer]), now_ns);  // a copy: running it may set new timers
}

std::optional<long long> FaultSchedule::next_due_ns() const {
    std::optional<long long> next;
    for (const Timer& t : timers_)
        if (t.pending && (!next || t.at_ns < *next)) next = t.at_ns;
    return next;
}

void FaultSchedule::run(const Timer& t, long long now_ns) {
    switch (t.what) {
        case Timer::What::fire:
            if (specs_[t.fault].repeats()) fire_repeat(t.fault, now_ns);
            else if (!state_[t.fault].done) fire(t.fault, t.client, now_ns);
            break;
        case Timer::What::aim_again: strike_repeat(t.fault, aim(t.fault), now_ns); break;
        case Timer::What::end:  // a gate "until" ends by its wait alone (hold_until)
            if (specs_[t.fault].until_another_enters) {
                wait_for_another(t, now_ns);
            } else {
                end(t.fault, t.client, now_ns, t.occurrence);
                if (keeps_after_end(t.fault)) watch_after_end(t.fault, now_ns);
            }
            break;
        case Timer::What::until_check: check_end(t.fault, t.client, now_ns); break;
        case Timer::What::keep_check: check_keep(t.fault, now_ns); break;
        case Timer::What::let_holder_go: world_.let_go(t.client); break;
        case Timer::What::open_start:
            // Its bound, not its client: the others set out into a story that did not begin.
            // (Its client got there and a node is restarting: restart_outcome opens it.)
            if (!start_open_ && start_point_reached_ && restarting_at_once()) break;
            if (!start_open_) unmet_.push_back(start_missed());
            let_go_start();
            break;
        case Timer::What::replies_check:
            replies_polling_ = false;
            // The bound passed while a node restarted at once: it counts now.
            if (!start_open_ && now_ns >= start_at_ns_ + start_after_->max_ms * kNsPerMs) {
                unmet_.push_back(start_missed());
                let_go_start();
                break;
            }
            open_start(now_ns);
            break;
        case Timer::What::restart:
            // What the node's persistence kept (nothing, without AOF) comes back; a failed
            // restart is recorded, and the checker sees a node that stayed down.
            restart_outcome(t, world_.restart(state_[t.fault].node), now_ns);
            break;
        case Timer::What::restart_check: restart_outcome(t, world_.restarted(state_[t.fault].node, false), now_ns); break;
        case Timer::What::asked_check: asked_outcome(t, now_ns); break;
    }
}

// A node that is back ends its crash; one still starting is asked again in a few milliseconds.
void FaultSchedule::restart_outcome(const Timer& t, std::optional<bool> back, long long now_ns) {
    if (!back) {
        timers_.push_back({now_ns + kRestartPollNs, Timer::What::restart_check, t.fault, t.client, true, t.occurrence});
        if (booked_) booked_(timers_.back().at_ns, timers_.size() - 1);
        return;
    }
    ended(t.fault, t.client);
    // The others waited for this node (while healing, heal() lets them go: no timer is booked
    // while it walks the timers).
    if (start_point_reached_ && !healing_) open_start(now_ns);
    if (!*back) unmet_.push_back(specs_[t.fault].label() + ": node " + std::to_string(state_[t.fault].node) + " did not come back");
    log(now_ns, *back ? "end" : "failed", t.fault, t.client, t.occurrence);
    if (*back) {
        state_[t.fault].unasked = true;
        asked_outcome(t, now_ns);
    }
}

// The node is back once a client has asked it something (a library reconnects on its own
// schedule, under load a second or more after the node answers lockbench): that is the event
// the waits were waiting for, and their bounds count from then. Until then it is asked again
// in a few milliseconds.
void FaultSchedule::asked_outcome(const Timer& t, long long now_ns) {
    if (!world_.asked_since_restart(state_[t.fault].node)) {
        if (healing_) return;
        timers_.push_back({now_ns + kRestartPollNs, Timer::What::asked_check, t.fault, t.client, true, t.occurrence});
        if (booked_) booked_(timers_.back().at_ns, timers_.size() - 1);
        return;
    }
    state_[t.fault].unasked = false;
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (state_[i].waiting) start_counting(i, now_ns);
}

// Its kind's end: a pause resumed, a gate's client let go, a link healed.
void FaultSchedule::end(std::size_t fault, int client, long long now_ns, std::optional<int> occurrence) {
    FaultFiring on(*this, fault, client, now_ns, occurrence);
    if (const FaultKind& k = fault_kind(specs_[fault].kind); k.end) k.end(on);  // only a kind that lasts books an end
}

void FaultSchedule::client_gone(int gone, long long now_ns) {
    std::erase(start_held_, gone);
    if (gone >= 0 && gone < clients_) gone_.at(static_cast<std::size_t>(gone)) = true;
    if (start_after_ && gone == start_after_->client) {  // it will get nowhere now
        start_client_gone_ = true;
        open_start(now_ns);
    }
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        State& s = state_[i];
        if (s.keeping && *s.keeping == gone) {
            s.keep_held = false;  // nobody to let go
            end_keep(i, now_ns, "holder gone");
        }
        if (s.watching && gone >= 0 && gone < clients_) s.answered.at(static_cast<std::size_t>(gone)) = true;
        if (!keeps_after_end(i) && s.keeping && specs_[i].client.value_or(0) == gone) end_keep(i, now_ns, "client gone");
        if (!keeps_after_end(i) && specs_[i].keep_holder_ms && specs_[i].client.value_or(0) == gone) s.keep_over = true;  // nobody to keep for
        if (std::erase(s.held, gone) == 0) continue;
        for (int c : s.held) end(i, c, now_ns);
        s.held.clear();
        s.waiting = false;  // a gate "until another enters" had only it to let go
        s.done = true;
    }
}

// Pending ends first, in the order they were set; then held gates and links set for good.
// A node that is down stays down: the run is over.
void FaultSchedule::heal(long long now_ns) {
    healing_ = true;  // what ends now ends with the run: no wait begins to count
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        // A fault kept after its end that the run ended first: its watch never began.
        if (keeps_after_end(i) && !state_[i].fired_on.empty() && !state_[i].keep_over && !state_[i].watching) {
            state_[i].watching = true;
            state_[i].keep_bound_from_ns = now_ns;
        }
        end_keep(i, now_ns, "run ended");  // its let-go timer runs below
    }
    for (Timer& t : timers_) {
        if (!t.pending) continue;
        t.pending = false;
        if (t.what == Timer::What::end) end(t.fault, t.client, now_ns, t.occurrence);
        if (t.what == Timer::What::let_holder_go) world_.let_go(t.client);
        if (t.what == Timer::What::until_check && state_[t.fault].waiting) end_waiting(t.fault, t.client, now_ns, true);
        if (t.what == Timer::What::restart_check) restart_outcome(Timer(t), world_.restarted(state_[t.fault].node, true), now_ns);
    }
    let_go_start();
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        State& s = state_[i];
        for (int c : s.held) end(i, c, now_ns);
        s.held.clear();
        const FaultKind& k = fault_kind(specs_[i].kind);  // one that stays and has an end: a link set for good
        if (!k.stays || !k.stays(specs_[i]) || !k.end || s.fired_on.empty() || s.healed) continue;
        s.healed = true;
        end(i, s.fired_on.front(), now_ns);
    }
}

// The paths a link fault names: the replication link once, then of every client or of
// `client` only, its lock nodes' paths and its store path; or a server's links to its peers.
void FaultSchedule::set_links(std::size_t i, int client, bool heal) {
    const FaultSpec& f = specs_[i];
    if (heal) check_overtaken(i, client);
    const LinkFault fault = heal ? LinkFault::pass() : f.link;
    if (f.link_replication) world_.set_link({LinkPath::To::replication, client, 0}, f.direction, fault);
    for (int peer = 0; f.link_peers && peer < world_.node_count(); ++peer)
        if (peer != state_[i].node) world_.set_link({LinkPath::To::peer, client, state_[i].node, peer}, f.direction, fault);
    for (int c = 0; c < clients_; ++c) {
        if (!f.all_clients && c != client) continue;
        for (int n : f.link_nodes) world_.set_link({LinkPath::To::node, c, n}, f.direction, fault);
        if (f.link_store) world_.set_link({LinkPath::To::store, c, 0}, f.direction, fault);
    }
}

// A repeating fault's start line names its occurrence (the current one) and drawn length.
void FaultSchedule::log(long long t_ns, const char* type, std::size_t fault, int client,
                        std::optional<int> occurrence) {
    const FaultSpec& f = specs_[fault];
    const bool by_role = f.node && *f.node < 0;
    std::string extra;
    if (f.repeats()) {
        const bool starts = std::string(type) == "start";
        extra = ",\"occurrence\":" + std::to_string(starts ? state_[fault].occurrences : occurrence.value_or(0));
        if (starts && f.duration_drawn_ms) extra += ",\"duration_ms\":" + std::to_string(length_ns(fault) / kNsPerMs);
    }
    if (log_) log_(fault_log_line(t_ns, type, f, client, by_role ? std::optional(state_[fault].node) : std::nullopt, extra));
}

bool FaultSchedule::spent() const {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const FaultSpec& f = specs_[i];
        const State& s = state_[i];
        if (!s.done || !s.in_force.empty() || !s.held.empty() || f.repeats()) return false;
        if (f.keep_holder_ms && !s.keep_over) return false;
        if (const FaultKind& k = fault_kind(f.kind); k.stays && k.stays(f)) return false;
    }
    return start_open_ && start_held_.empty() &&
           std::ranges::none_of(timers_, [](const Timer& t) {
               return t.pending && t.what != Timer::What::open_start && t.what != Timer::What::replies_check;
           });
}

bool FaultSchedule::killed(int client) const {
    return client >= 0 && static_cast<std::size_t>(client) < killed_.size() && killed_[static_cast<std::size_t>(client)];
}

nlohmann::json FaultSchedule::report() const {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        out.push_back({{"fault", fault_kind_name(specs_[i].kind)}, {"label", specs_[i].label()},
                       {"fired", state_[i].fired_on.size()}, {"clients", state_[i].fired_on}});
        if (specs_[i].repeats()) out.back()["skipped"] = state_[i].skipped;
        if (i < waits_.size() && !waits_[i].empty()) out.back()["waits"] = waits_[i];
        if (specs_[i].lease_live) out.back()["lease_live"] = true;
        if (specs_[i].taken_first) out.back()["taken_first"] = true;
        if (specs_[i].until_another_enters || specs_[i].until_leader) out.back()["max_ms"] = specs_[i].max_ms;
        if (specs_[i].until_leader) out.back()["until"] = "leader";
        if (i < kept_.size() && !kept_[i].empty()) out.back()["kept"] = kept_[i];
    }
    return out;
}

// ---- the repeating nemesis ---------------------------------------------------------------

// One occurrence: aimed (a random client, the holder), its length drawn, the next booked one
// drawn interval on while that is still within the run; then struck.
void FaultSchedule::fire_repeat(std::size_t i, long long now_ns) {
    const FaultSpec& f = specs_[i];
    State& s = state_[i];
    ++s.occurrences;
    const std::optional<int> client = aim(i);
    if (f.duration_drawn_ms) s.length_ns = capped_draw_ns(i, now_ns);
    const long long next_ns = now_ns + draw_ns(i, *f.every_ms);
    const bool again = before_until(i, next_ns);
    s.next_ns = again ? next_ns : start_at_ns_ + f.until_ms.value_or(0) * kNsPerMs;
    if (again) book(next_ns, Timer::What::fire, i, 0);
    strike_repeat(i, client, now_ns);
}

// The holder is the client inside its section now (the store's log ends with its enter): an
// occurrence aimed at it while none is waits for one, looking every 2 ms, until the next
// occurrence is due, so that a holder is struck inside its section however slow its acquire
// on this machine; only then is it skipped. One whose target is still under the previous
// occurrence is skipped; any other fires with its drawn length.
void FaultSchedule::strike_repeat(std::size_t i, std::optional<int> client, long long now_ns) {
    const FaultSpec& f = specs_[i];
    State& s = state_[i];
    constexpr long long kHolderLookNs = 2 * kNsPerMs;
    if (!client && f.target == FaultSpec::Target::holder && now_ns + kHolderLookNs < s.next_ns) {
        book(now_ns + kHolderLookNs, Timer::What::aim_again, i, 0);
        return;
    }
    const bool busy = client && (f.node ? !s.in_force.empty() : std::ranges::find(s.in_force, *client) != s.in_force.end());
    if (!client) log_skipped(now_ns, i, std::nullopt, "nobody inside a section");
    else if (busy) log_skipped(now_ns, i, client, "its previous occurrence is still in force");
    else fire(i, *client, now_ns);
}

// An occurrence is booked only before until_ms, the first as every other: both worlds then
// fire the same ones, although the simulator runs on past the deadline and the live run stops.
bool FaultSchedule::before_until(std::size_t i, long long at_ns) const {
    return at_ns < start_at_ns_ + specs_[i].until_ms.value_or(0) * kNsPerMs;
}

// A drawn length is unbounded (an exponential's tail): it is cut so that the occurrence ends
// when the clients stop, as a length that is stated must.
long long FaultSchedule::capped_draw_ns(std::size_t i, long long now_ns) {
    const long long drawn_ns = draw_ns(i, *specs_[i].duration_drawn_ms);
    if (!specs_[i].ends_by_ms) return drawn_ns;
    return std::clamp(start_at_ns_ + *specs_[i].ends_by_ms * kNsPerMs - now_ns, 0LL, drawn_ns);
}

// The client this occurrence strikes; a fault on a node strikes the node its `node` names.
std::optional<int> FaultSchedule::aim(std::size_t i) {
    const FaultSpec& f = specs_[i];
    switch (f.target) {
        case FaultSpec::Target::named: return f.client.value_or(0);
        case FaultSpec::Target::random:
            return static_cast<int>(state_[i].rng.next() % static_cast<std::uint64_t>(std::max(clients_, 1)));
        case FaultSpec::Target::holder: return world_.current_holder();
    }
    return std::nullopt;
}

// A draw in ns, at least 1 ms: an interval of 0 would fire the fault forever at one instant.
long long FaultSchedule::draw_ns(std::size_t i, const Distribution& d) {
    return std::max(kNsPerMs, static_cast<long long>(d.sample_ms(state_[i].rng) * static_cast<double>(kNsPerMs)));
}

long long FaultSchedule::length_ns(std::size_t i) const {
    return specs_[i].duration_drawn_ms ? state_[i].length_ns : specs_[i].duration_ms * kNsPerMs;
}

void FaultSchedule::ended(std::size_t i, int client) {
    if (specs_[i].node) state_[i].in_force.clear();
    else std::erase(state_[i].in_force, client);
}

void FaultSchedule::log_skipped(long long t_ns, std::size_t i, std::optional<int> client, const char* why) {
    ++state_[i].skipped;
    std::string line = fault_line_head(t_ns, "skipped", specs_[i]);
    if (client) line += ",\"client\":" + std::to_string(*client);
    line += ",\"occurrence\":" + std::to_string(state_[i].occurrences) + ",\"why\":\"" + why + "\"}\n";
    if (log_) log_(line);
}

long long FaultSchedule::injected() const {
    long long n = 0;
    for (const State& s : state_) n += static_cast<long long>(s.fired_on.size());
    return n;
}

}  // namespace lockbench
