// The fault schedule of one run: which fault fires when, and what it logs. Both worlds run
// the same one; each carries the faults out through its FaultActuator (fault_actuator.h).
//
//   start(clients, start_at) ── at_ms 0: fire now; later at_ms: a "fire" timer
//   reach(client, point) ────── count the reach of every fault armed there; those due fire,
//                               a kill or a gate last; answer go / disarm / held / killed
//   run_due(now) / run_timer ── pauses end, gates let clients go (stagger apart), links heal,
//                               crashed nodes restart, at_ms faults fire; a repeating fault
//                               (every_ms) fires again and books its next occurrence
//   heal(now) ───────────────── the end of a run: whatever is still in force ends
//
// Pure: no threads, no sockets, no clock of its own. Every call takes the time (ns, on the
// world's clock) from the caller; a world that polls asks next_due_ns(), a world with its own
// event queue (the simulator) books each timer as it is set (TimerBooked) and runs exactly
// that one with run_timer(). Every fault's start and end is one nemesis.jsonl line:
//   {"t_ns":…,"op":"fault","type":"start"|"end"|"failed","fault":"pause","label":"…","client":0}
// A repeating fault's lines also carry "occurrence" (1, 2, …) and, when drawn, the length;
// an occurrence aimed at the holder waits for a client inside its section until the next is
// due; one that finds none by then, or its target still under the previous one, is
// skipped: {"type":"skipped","occurrence":3,"why":"…"} (with "client" when it had one).
// Its draws (intervals, random clients, lengths) come from one Rng per fault, seeded from
// the run's seed and the fault's index, so the simulator replays them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockimpl/env.h"
#include "sim/engine/fault_actuator.h"
#include "sim/engine/fault_spec.h"
#include "sim/engine/workload.h"

namespace lockbench {

// One line of nemesis.jsonl, with its newline.
// `node`: the server a fault by role (leader, follower) struck, when it names one.
// `extra`: more fields, each starting with a comma (a repeating fault's occurrence).
std::string fault_log_line(long long t_ns, const char* type, const FaultSpec& fault, int client,
                           std::optional<int> node = std::nullopt, const std::string& extra = "");

class FaultSchedule {
public:
    using LogSink = std::function<void(const std::string& line)>;
    using TimerBooked = std::function<void(long long at_ns, std::size_t timer)>;
    // What a client that reached a point hears: go on (the point stays armed for it), go on
    // and stop reporting this point (nothing is armed there for it any more), nothing yet
    // (held at a gate: let_go() answers it), or nothing at all (killed).
    enum class Answer { go, disarm, held, killed };

    FaultSchedule(std::vector<FaultSpec> faults, FaultActuator& world, LogSink log, TimerBooked booked = {});

    const std::vector<FaultSpec>& faults() const { return specs_; }
    // Point names some fault is armed at (sorted, once each): clients report only these.
    std::vector<std::string> armed_points() const;

    // The workload's start_after (before start()): every other client is held at its first
    // before_acquire until that client has reached its point, or max_ms after the start. A
    // node that a crash at that point restarts at once (restart_after_ms 0) is back first, and
    // a request of that client whose replies a link fault holds has reached its nodes first.
    // It is no fault: it counts in no fault's figures and writes no nemesis.jsonl line.
    void set_start_after(std::optional<StartAfter> start_after) { start_after_ = start_after; }

    // The clients are 0..clients-1; at_ms counts from start_at_ns. A fault at 0 ms fires now,
    // before any client starts, rather than racing the first one.
    // `seed` seeds the draws of repeating faults (the run's seed).
    void start(int clients, long long start_at_ns, long long now_ns, std::uint64_t seed = 0);
    Answer reach(int client, Point point, long long now_ns);

    // Runs every timer due at now_ns, in the order they were set; those they set run later.
    void run_due(long long now_ns);
    // Runs one booked timer (once; a timer already run or healed does nothing).
    void run_timer(std::size_t timer, long long now_ns);
    std::optional<long long> next_due_ns() const;

    // A client that is gone (finished or killed) cannot complete a gate: the others it
    // gathered go on.
    void client_gone(int client, long long now_ns);
    // Ends whatever is still in force: paused clients resume, held ones go on, links heal.
    void heal(long long now_ns);

    // Every fault has fired and ended, and none can fire again: nothing is in force or held,
    // no timer is pending. A client's clock fault never ends (a stepped or rated clock stays
    // so), nor does a node's drifting clock, a link set for good, a crash with no restart, or a
    // repeating fault; a node's clock step ends once it struck.
    bool spent() const;

    bool killed(int client) const;
    // Per fault: its label and how often it fired, on which clients; a fault "until another
    // enters" also lists each wait's window on the world's clock ("waits": from_ns, the moment
    // its bound began to count, to_ns, and "bound": true when the bound ended it, not an enter).
    nlohmann::json report() const;
    // What did not happen as the case wrote it, outside the lock: the start's client never got
    // to its point, a crashed node that did not come back, a wait whose bound never began to
    // count. One sentence each; empty when the story happened (summary.h: not_as_written).
    const std::vector<std::string>& unmet() const { return unmet_; }
    long long injected() const;

private:
    friend class FaultFiring;  // a kind's view of one firing (fault_kind.h)
    struct State {
        int seen = 0;               // reaches of its point so far
        std::vector<int> fired_on;  // the clients it struck
        std::vector<int> held;      // gate: the clients held now
        long long log_mark = 0;     // until another enters: the store's log length when it waits
        long long hold_ends_ns = 0; // and when it ends at the latest (once its bound counts)
        long long bound_left_ns = 0;  // until another enters: the bound, while a node is still coming back
        std::optional<long long> counting_from_ns;  // when its bound began to count
        bool waiting = false;       // until another enters: waiting for that enter now
        bool done = false;
        bool healed = false;        // a link set for good, healed at the end
        int node = 0;               // the server its `node` named when it fired
        bool unasked = false;       // crash: back, but no client has asked the node anything yet
        std::vector<int> in_force;  // the clients (or the node) it holds now: a pause or link
                                    // not yet ended, a node not yet restarted
        int occurrences = 0;        // repeating: how often its timer came, skipped or not
        long long skipped = 0;
        long long length_ns = 0;    // repeating: this occurrence's drawn length
        long long next_ns = 0;      // repeating: when the next occurrence comes (or the run ends)
        Rng rng{0};                 // repeating: its draws
        // keep_holder_ms: the client that entered, kept until the fault's client enters or
        // fails (an enter after log_mark: its wait held it till then); its start, and
        // whether it is held at its before_release now.
        long long fired_ns = 0;     // when it fired (once): a wait's length counts from it
        long long wait_began_ns = 0;  // until another enters: when its wait began
        bool keep_over = false;     // kept and let go, or nobody to keep
        std::optional<int> keeping;
        long long keep_from_ns = 0;
        bool keep_held = false;
        long long keep_bound_from_ns = 0;  // where keep_holder_ms counts from
        // keep_holder_ms on a fault without "until" (after_end): from its end, the first client
        // to enter is kept until another enters or every other client's acquire in flight at
        // the end has answered; `answered`: none in flight then, back at before_acquire or in
        // line since, or gone.
        bool watching = false;
        std::vector<bool> answered;
        int last_answered = -1;
        bool replies_came = false;  // a hold of the start's client's replies: they came (or it ended)
    };
    struct Timer {
        enum class What { fire, aim_again, end, restart, restart_check, asked_check, until_check, keep_check, let_holder_go, open_start, replies_check };
        long long at_ns = 0;
        What what = What::fire;
        std::size_t fault = 0;
        int client = 0;
        bool pending = true;
        std::optional<int> occurrence;  // a repeating fault's: its end line names it
    };
    // The start: what a reach does to it (true: the client is held there), and its opening.
    bool start_holds(int client, Point point, long long now_ns);
    void open_start(long long now_ns);
    bool restarting_at_once() const;  // a crash with restart_after_ms 0 whose node is not back
    bool replies_pending();           // the start's client's request not yet answered in a hold
    std::string start_missed() const; // the unmet line of a start opened by its bound
    void let_go_start();
    bool start_waits_for(int client, Point point) const;

    std::vector<std::size_t> due_at(int client, Point point);
    bool armed_at(int client, Point point) const;
    bool fire(std::size_t fault, int client, long long now_ns);
    bool gate(std::size_t fault, int client, long long now_ns);
    bool hold_until(std::size_t fault, int client, long long now_ns);
    void wait_for_another(const Timer& t, long long now_ns);
    void check_end(std::size_t fault, int client, long long now_ns);
    void end_waiting(std::size_t fault, int client, long long now_ns, bool by_bound);
    void mark_store_log(std::size_t fault);
    std::optional<int> entered_since(long long log_mark, int other_than, std::optional<int> only = std::nullopt);
    void begin_keep(std::size_t fault, int holder, long long now_ns);
    // `kept_before`: which faults were keeping a holder before this reach's own faults fired (a
    // keep that this reach began does not end on it).
    bool keep_holds(int client, Point point, long long now_ns, bool may_hold, const std::vector<bool>& kept_before);
    void nobody_to_keep(std::size_t fault, int client, long long now_ns);
    void check_keep(std::size_t fault, long long now_ns);
    void end_keep(std::size_t fault, long long now_ns, const char* how, std::optional<int> client = std::nullopt);
    bool keeps_after_end(std::size_t fault) const;
    Point kept_at(std::size_t fault) const;
    void watch_after_end(std::size_t fault, long long now_ns);
    void check_watch(std::size_t fault, long long now_ns);
    bool all_answered(std::size_t fault, std::optional<int> but) const;
    void end_watch(std::size_t fault, long long now_ns, const char* how);
    bool keep_armed(std::size_t fault, int client, Point point) const;
    void start_counting(std::size_t fault, long long now_ns);
    bool node_coming_back() const;
    void fire_repeat(std::size_t fault, long long now_ns);
    void strike_repeat(std::size_t fault, std::optional<int> client, long long now_ns);
    std::optional<int> aim(std::size_t fault);
    long long draw_ns(std::size_t fault, const Distribution& d);
    bool before_until(std::size_t fault, long long at_ns) const;
    long long capped_draw_ns(std::size_t fault, long long now_ns);
    long long length_ns(std::size_t fault) const;
    void ended(std::size_t fault, int client);
    void restart_outcome(const Timer& t, std::optional<bool> back, long long now_ns);
    void asked_outcome(const Timer& t, long long now_ns);
    void log_skipped(long long t_ns, std::size_t fault, std::optional<int> client, const char* why);
    void book(long long at_ns, Timer::What what, std::size_t fault, int client);
    void run(const Timer& t, long long now_ns);
    void end(std::size_t fault, int client, long long now_ns, std::optional<int> occurrence = std::nullopt);
    void set_links(std::size_t fault, int client, bool heal);
    void check_overtaken(std::size_t fault, int client);
    void log(long long t_ns, const char* type, std::size_t fault, int client,
             std::optional<int> occurrence = std::nullopt);

    std::vector<FaultSpec> specs_;
    std::vector<State> state_;
    std::vector<Timer> timers_;
    std::vector<bool> killed_;
    std::vector<bool> gone_;           // finished or killed (client_gone)
    std::vector<std::optional<Point>> last_point_;  // per client: the last point it reported
    int clients_ = 0;
    long long start_at_ns_ = 0;
    std::optional<StartAfter> start_after_;
    bool start_client_gone_ = false;  // the start's client finished or was killed
    bool replies_polling_ = false;    // a replies_check is booked
    // The hold of the start's client's replies that opened the start, and the nodes its
    // client had sent to by then: on the others, another client may have got there first.
    struct Overtaking {
        std::size_t fault = 0;
        std::vector<int> sent;
    };
    std::optional<Overtaking> overtaking_;
    bool start_open_ = true;           // no start_after, or its client got there (or max_ms passed)
    bool start_point_reached_ = false; // its client got there (the start may wait for a restart)
    std::vector<bool> start_reached_;  // the others: reached their first acquire already
    std::vector<int> start_held_;      // the others held there now
    std::vector<int> in_line_;         // clients whose acquire in flight said it waits in line
    std::vector<std::string> unmet_;
    bool healing_ = false;
    std::vector<std::vector<nlohmann::json>> waits_;  // per fault: its waits (report())
    std::vector<std::vector<nlohmann::json>> kept_;   // per fault: the holders it kept (report())
    FaultActuator& world_;
    LogSink log_;
    TimerBooked booked_;
};

}  // namespace lockbench
