// The fault schedule alone (sim/engine/fault_schedule.h): no Redis, no threads, no sockets,
// no clock. A fake world records what it was told to do; times are passed in by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/engine/fault_kind.h"
#include "sim/engine/fault_schedule.h"
#include "sim/engine/run_setup.h"
#include "sim/engine/store.h"

namespace lockbench {
namespace {

constexpr long long kMs = 1'000'000;

// Every actuator call as one short line: "pause 1", "link c0-n3 blackhole", ...
class FakeWorld final : public FaultActuator {
public:
    std::vector<std::string> calls;
    bool restart_works = true;
    bool pause_lands = true;  // false: a paused client still runs at the bound

    bool pause(int c) override {
        calls.push_back("pause " + std::to_string(c));
        return pause_lands;
    }
    void resume(int c) override { calls.push_back("resume " + std::to_string(c)); }
    void pause_background(int c) override { calls.push_back("pause background " + std::to_string(c)); }
    void resume_background(int c) override { calls.push_back("resume background " + std::to_string(c)); }
    void kill(int c) override { calls.push_back("kill " + std::to_string(c)); }
    void hold(int c) override { calls.push_back("hold " + std::to_string(c)); }
    void let_go(int c) override { calls.push_back("let_go " + std::to_string(c)); }
    void step_clock(ClockOf k, long long jump_ms) override {
        calls.push_back(whose(k) + " step " + std::to_string(jump_ms));
    }
    void drift_clock(ClockOf k, double rate) override { calls.push_back(whose(k) + " rate " + std::to_string(rate)); }
    void set_link(LinkPath p, std::optional<Direction>, const LinkFault& f) override {
        std::string to = "repl";
        if (p.to == LinkPath::To::node) to = "c" + std::to_string(p.client) + "-n" + std::to_string(p.node);
        if (p.to == LinkPath::To::store) to = "c" + std::to_string(p.client) + "-store";
        if (p.to == LinkPath::To::peer) to = "s" + std::to_string(p.node) + "-s" + std::to_string(p.peer);
        calls.push_back("link " + to + " " + describe(f));
    }
    void crash(int n) override { calls.push_back("crash " + std::to_string(n)); }
    // A restart that takes a while: "not yet" from restart() and from each ask until the
    // this-many-th, which says whether it worked (as does a wait, at once).
    int restart_takes_asks = 0;
    std::optional<bool> restart(int n) override {
        calls.push_back("restart " + std::to_string(n));
        asks_left = restart_takes_asks;
        return asks_left > 0 ? std::nullopt : std::optional<bool>(restart_works);
    }
    std::optional<bool> restarted(int n, bool wait) override {
        calls.push_back(std::string(wait ? "wait " : "ask ") + std::to_string(n));
        if (!wait && --asks_left > 0) return std::nullopt;
        return restart_works;
    }
    int asks_left = 0;
    // Whether a client has asked the restarted node anything yet (its library reconnected).
    bool asked = true;
    int asked_questions = 0;
    bool asked_since_restart(int) override {
        ++asked_questions;
        return asked;
    }
    // Per lock node, what client 0's path to it shows while its replies are held (quiet if
    // unset), and how often it was asked.
    std::map<int, HeldPath> held;
    int held_questions = 0;
    HeldPath held_path(LinkPath p) override {
        ++held_questions;
        const auto it = held.find(p.node);
        return it == held.end() ? HeldPath::quiet : it->second;
    }
    // Per (client, lock node), where its first request since the last mark came (none if
    // unset); what a mark clears.
    std::map<std::pair<int, int>, long long> first;
    int marks = 0;
    void mark_requests() override {
        ++marks;
        first.clear();
    }
    long long first_request(LinkPath p) override {
        const auto it = first.find({p.client, p.node});
        return it == first.end() ? 0 : it->second;
    }
    bool pause_node(int n) override {
        calls.push_back("pause node " + std::to_string(n));
        return true;
    }
    void resume_node(int n) override { calls.push_back("resume node " + std::to_string(n)); }
    void stall_disk(int n, bool stalled) override { calls.push_back(std::string(stalled ? "stall" : "unstall") + " disk of node " + std::to_string(n)); }
    // The leader is whoever `leader` says at the moment the fault fires.
    int resolve_node(int n) override {
        if (n < 0) calls.push_back("resolve " + node_text(n));
        return n == kLeaderNode ? leader : n == kFollowerNode ? (leader + 1) % nodes : n;
    }
    int node_count() const override { return nodes; }
    // Whether a server leads now: `leads`, asked so many times (a wait's polls).
    bool leads = true;
    int leader_questions = 0;
    bool has_leader() override {
        ++leader_questions;
        return leads;
    }
    std::optional<int> current_holder() override { return holder; }
    // The store's log, as LLEN and LRANGE from..-1 read it.
    std::optional<Value> ask_store(const Command& c) override {
        if (c.args.at(0) == "LLEN")
            return Value{Value::Type::integer, static_cast<long long>(store_log.size()) - enters_after_mark, "", {}};
        Value records{Value::Type::array, 0, "", {}};
        for (size_t i = std::stoul(c.args.at(2)); i < store_log.size(); ++i)
            records.elements.push_back(Value{Value::Type::string, 0, store_log[i], {}});
        return records;
    }
    int leader = 1;
    int nodes = 3;
    std::optional<int> holder;  // whom the store saw enter last
    std::vector<std::string> store_log;
    long long enters_after_mark = 0;  // the log's last records landed just after LLEN read it

private:
    static std::string whose(ClockOf k) {
        return (k.whose == ClockOf::Whose::node ? "node " : "client ") + std::to_string(k.index);
    }
};

FaultSpec at_point(FaultSpec::Kind kind, Point p, int occurrence = 1) {
    FaultSpec f;
    f.kind = kind;
    f.point = p;
    f.occurrence = occurrence;
    return f;
}

FaultSpec at_time(FaultSpec::Kind kind, long long at_ms, int client = 0) {
    FaultSpec f;
    f.kind = kind;
    f.at_ms = at_ms;
    f.client = client;
    return f;
}

// A schedule over a fake world, its log lines kept as "<type> <fault> c<client> @<t_ms>".
struct ScheduleRun {
    FakeWorld world;
    std::vector<std::string> log;
    std::vector<std::pair<long long, std::size_t>> booked;
    FaultSchedule schedule;

    std::vector<nlohmann::json> lines;  // every log line as written

    explicit ScheduleRun(std::vector<FaultSpec> faults, int clients = 3, std::uint64_t seed = 0,
                         std::optional<StartAfter> start_after = std::nullopt)
        : schedule(std::move(faults), world, [this](const std::string& line) {
              log.push_back(brief(line));
              lines.push_back(nlohmann::json::parse(line));
          },
                   [this](long long at_ns, std::size_t timer) { booked.emplace_back(at_ns, timer); }) {
        schedule.set_start_after(start_after);
        schedule.start(clients, 0, 0, seed);
    }

    // Runs every timer up to `to_ms` at its own time, as a world would.
    void advance(long long to_ms) {
        while (const auto next = schedule.next_due_ns()) {
            if (*next > to_ms * kMs) break;
            schedule.run_due(*next);
        }
    }

    static std::string brief(const std::string& line) {
        const auto j = nlohmann::json::parse(line);
        const std::string client = j.contains("client") ? " c" + std::to_string(j["client"].get<int>()) : "";
        return j["type"].get<std::string>() + " " + j["fault"].get<std::string>() + client + " @" +
               std::to_string(j["t_ns"].get<long long>() / kMs);
    }
};

using Strings = std::vector<std::string>;

TEST(FaultSchedule, APointFaultFiresOnItsOccurrenceAndThenDisarms) {
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::before_write, 3);
    pause.duration_ms = 600;
    ScheduleRun r({pause});
    EXPECT_EQ(r.schedule.reach(0, Point::before_write, 1 * kMs), FaultSchedule::Answer::go);
    EXPECT_EQ(r.schedule.reach(1, Point::after_acquire, 2 * kMs), FaultSchedule::Answer::disarm);  // nothing there
    EXPECT_EQ(r.schedule.reach(1, Point::before_write, 3 * kMs), FaultSchedule::Answer::go);
    EXPECT_TRUE(r.world.calls.empty());
    // The third reach, by any client, is the one.
    EXPECT_EQ(r.schedule.reach(2, Point::before_write, 4 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.world.calls, Strings{"pause 2"});
    EXPECT_EQ(r.schedule.reach(0, Point::before_write, 5 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.world.calls, Strings{"pause 2"});
    EXPECT_EQ(r.log, Strings{"start pause c2 @4"});
}

// A pause is in place only once the client has stopped (live: every process of its group,
// every thread); one that still ran at the bound is a fault that did not happen as written,
// named, while one that landed leaves nothing unmet.
TEST(FaultSchedule, APauseThatDidNotStopTheClientIsNotAsWritten) {
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::after_acquire);
    pause.duration_ms = 100;
    ScheduleRun landed({pause});
    landed.schedule.reach(1, Point::after_acquire, 1 * kMs);
    landed.advance(200);
    EXPECT_EQ(landed.world.calls, (Strings{"pause 1", "resume 1"}));
    EXPECT_TRUE(landed.schedule.unmet().empty());

    ScheduleRun missed({pause});
    missed.world.pause_lands = false;
    missed.schedule.reach(1, Point::after_acquire, 1 * kMs);
    missed.advance(200);
    ASSERT_EQ(missed.schedule.unmet().size(), 1u);
    EXPECT_NE(missed.schedule.unmet()[0].find("client 1 did not stop"), std::string::npos) << missed.schedule.unmet()[0];
}

// A background pause reaches the client's background tasks alone, at a point or a time,
// and ends (or is healed) the same way.
TEST(FaultSchedule, ABackgroundPauseHoldsOnlyTheBackgroundTasks) {
    FaultSpec watchdog = at_point(FaultSpec::Kind::pause, Point::after_acquire);
    watchdog.background = true;
    watchdog.duration_ms = 600;
    FaultSpec timed = at_time(FaultSpec::Kind::pause, 100, 2);
    timed.background = true;
    timed.duration_ms = 5000;
    ScheduleRun r({watchdog, timed});
    EXPECT_EQ(r.schedule.reach(1, Point::after_acquire, 10 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.world.calls, Strings{"pause background 1"});
    r.schedule.run_due(100 * kMs);
    r.schedule.run_due(610 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"pause background 1", "pause background 2", "resume background 1"}));
    r.schedule.heal(700 * kMs);
    EXPECT_EQ(r.world.calls.back(), "resume background 2");
    EXPECT_EQ(r.log, (Strings{"start pause c1 @10", "start pause c2 @100", "end pause c1 @610", "end pause c2 @700"}));
}

TEST(FaultSchedule, AFaultForOneClientCountsOnlyThatClientsReaches) {
    FaultSpec kill = at_point(FaultSpec::Kind::kill, Point::after_acquire, 2);
    kill.client = 1;
    ScheduleRun r({kill});
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 0), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.schedule.reach(1, Point::after_acquire, 0), FaultSchedule::Answer::go);
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 0), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.schedule.reach(1, Point::after_acquire, 0), FaultSchedule::Answer::killed);
    EXPECT_EQ(r.world.calls, Strings{"kill 1"});
    EXPECT_TRUE(r.schedule.killed(1));
    EXPECT_FALSE(r.schedule.killed(0));
}

TEST(FaultSchedule, ATimedFaultIsDueAtItsTimeAfterTheStart) {
    FaultSpec link = at_time(FaultSpec::Kind::link, 200);
    link.link = LinkFault::blackhole();
    link.link_nodes = {3, 4};
    link.all_clients = true;
    link.duration_ms = 1000;
    FaultSpec clock = at_time(FaultSpec::Kind::clock, 0, 1);
    clock.jump_ms = 2000;
    FakeWorld world;
    std::vector<std::string> log;
    FaultSchedule s({link, clock}, world, [&](const std::string& line) { log.push_back(ScheduleRun::brief(line)); });
    s.start(2, 10 * kMs, 5 * kMs);
    // At 0 ms: in place before any client starts.
    EXPECT_EQ(world.calls, Strings{"client 1 step 2000"});
    EXPECT_EQ(s.next_due_ns(), 210 * kMs);
    s.run_due(209 * kMs);
    EXPECT_EQ(world.calls.size(), 1u);
    s.run_due(210 * kMs);
    EXPECT_EQ(world.calls, (Strings{"client 1 step 2000", "link c0-n3 blackhole", "link c0-n4 blackhole",
                                    "link c1-n3 blackhole", "link c1-n4 blackhole"}));
    EXPECT_EQ(s.next_due_ns(), 1210 * kMs);
    s.run_due(1300 * kMs);
    EXPECT_EQ(world.calls.back(), "link c1-n4 pass");
    EXPECT_EQ(s.next_due_ns(), std::nullopt);
    EXPECT_EQ(log, (Strings{"start clock c1 @5", "start link c0 @210", "end link c0 @1300"}));
}

TEST(FaultSchedule, AtOnePointAKillOrAGateComesLast) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_acquire);
    gate.count = 2;
    FaultSpec kill = at_point(FaultSpec::Kind::kill, Point::after_acquire);
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::after_acquire);
    pause.duration_ms = 100;
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 2;
    ScheduleRun r({gate, kill, pause, crash});
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 0), FaultSchedule::Answer::killed);
    // The pause and the crash are in place before the gate holds and the kill strikes; nothing
    // fires after a kill.
    EXPECT_EQ(r.world.calls, (Strings{"pause 0", "crash 2", "hold 0", "kill 0"}));
    EXPECT_EQ(r.log, (Strings{"start pause c0 @0", "start crash c0 @0", "start gate c0 @0", "start kill c0 @0"}));
}

TEST(FaultSchedule, AGateHoldsUntilItsCountThenLetsThemGoStaggerApart) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_seen_expired);
    gate.count = 2;
    gate.stagger_ms = 20;
    ScheduleRun r({gate});
    EXPECT_EQ(r.schedule.reach(1, Point::after_seen_expired, 5 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.schedule.reach(0, Point::after_seen_expired, 8 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 0"}));
    // Booked for a world with its own event queue: first come, first let go.
    ASSERT_EQ(r.booked.size(), 2u);
    EXPECT_EQ(r.booked[0].first, 8 * kMs);
    EXPECT_EQ(r.booked[1].first, 28 * kMs);
    r.schedule.run_timer(r.booked[1].second, 28 * kMs);
    r.schedule.run_timer(r.booked[0].second, 28 * kMs);
    r.schedule.run_timer(r.booked[0].second, 29 * kMs);  // once only
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 0", "let_go 0", "let_go 1"}));
    EXPECT_EQ(r.log, (Strings{"start gate c1 @5", "start gate c0 @8", "end gate c0 @28", "end gate c1 @28"}));
    EXPECT_EQ(r.schedule.report()[0]["clients"], (std::vector<int>{1, 0}));
}

// A gate "until": "another-enters" holding client 0 at after_acquire, at most max_ms.
FaultSpec gate_until_another_enters(long long max_ms) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_acquire);
    gate.client = 0;
    gate.until_another_enters = true;
    gate.max_ms = max_ms;
    return gate;
}

// The client stays at its point until the store's log shows an enter of another client after
// the hold began (its own records, and others' exits, do not count), else until max_ms is up.
TEST(FaultSchedule, AGateUntilAnotherEntersLetsGoAtTheNextEnterOfAnotherClient) {
    ScheduleRun r({gate_until_another_enters(100)});
    r.world.store_log = {R"({"kind":"enter","client":1})"};  // before the hold: does not count
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 10 * kMs), FaultSchedule::Answer::held);
    r.world.store_log.push_back(R"({"kind":"exit","client":1})");
    r.world.store_log.push_back(R"({"kind":"enter","client":0})");
    r.advance(30);
    EXPECT_EQ(r.world.calls, (Strings{"hold 0"}));
    r.world.store_log.push_back(R"({"kind":"enter","client":2})");
    r.advance(40);
    EXPECT_EQ(r.world.calls, (Strings{"hold 0", "let_go 0"}));
    EXPECT_EQ(r.log, (Strings{"start gate c0 @10", "end gate c0 @32"}));
    EXPECT_EQ(r.schedule.next_due_ns(), std::nullopt);
}

TEST(FaultSchedule, AGateUntilAnotherEntersLetsGoAfterItsDurationWhenNobodyEnters) {
    ScheduleRun r({gate_until_another_enters(25)});
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 10 * kMs), FaultSchedule::Answer::held);
    r.advance(34);
    EXPECT_EQ(r.world.calls, (Strings{"hold 0"}));
    r.advance(35);
    EXPECT_EQ(r.log, (Strings{"start gate c0 @10", "end gate c0 @35"}));
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 40 * kMs), FaultSchedule::Answer::disarm);  // once

    ScheduleRun cut({gate_until_another_enters(25)});  // the run ends while it holds: let go then, once
    cut.schedule.reach(0, Point::after_acquire, 10 * kMs);
    cut.schedule.heal(20 * kMs);
    EXPECT_EQ(cut.world.calls, (Strings{"hold 0", "let_go 0"}));
    EXPECT_EQ(cut.log, (Strings{"start gate c0 @10", "end gate c0 @20"}));
    EXPECT_EQ(cut.schedule.next_due_ns(), std::nullopt);

    ScheduleRun gone({gate_until_another_enters(25)});  // its client dies while held: nothing to let go
    gone.schedule.reach(0, Point::after_acquire, 10 * kMs);
    gone.schedule.client_gone(0, 15 * kMs);
    gone.advance(20);  // its wait's next check finds nobody to let go
    gone.schedule.heal(30 * kMs);
    EXPECT_EQ(gone.world.calls, (Strings{"hold 0"}));
    EXPECT_EQ(gone.log, (Strings{"start gate c0 @10"}));
    ScheduleRun gone_then_healed({gate_until_another_enters(25)});  // healed before that check
    gone_then_healed.schedule.reach(0, Point::after_acquire, 10 * kMs);
    gone_then_healed.schedule.client_gone(0, 11 * kMs);
    gone_then_healed.schedule.heal(11 * kMs);
    EXPECT_EQ(gone_then_healed.world.calls, (Strings{"hold 0"}));
    EXPECT_EQ(gone_then_healed.log, (Strings{"start gate c0 @10"}));
}

// A link fault "until another enters" lasts its duration, then on until the store's log shows
// another client's enter after that (at most max_ms in all); healing the run ends it too.
// Client 0's replies from node 0 held 50 ms at its first acquire, then until another enters
// (at most 200 ms in all).
FaultSpec link_until_another_enters() {
    FaultSpec link = at_point(FaultSpec::Kind::link, Point::before_acquire);
    link.client = 0;
    link.link_nodes = {0};
    link.link = LinkFault::hold();
    link.duration_ms = 50;
    link.until_another_enters = true;
    link.max_ms = 200;
    return link;
}

TEST(FaultSchedule, ALinkUntilAnotherEntersLastsItsDurationThenUntilTheNextEnterOfAnotherClient) {
    const FaultSpec link = link_until_another_enters();
    ScheduleRun r({link});
    EXPECT_EQ(r.schedule.reach(0, Point::before_acquire, 0), FaultSchedule::Answer::disarm);
    r.world.store_log = {R"({"kind":"enter","client":1})"};  // within its duration: does not count
    r.advance(60);
    EXPECT_EQ(r.log, (Strings{"start link c0 @0"}));
    r.world.store_log.push_back(R"({"kind":"exit","client":1})");
    r.advance(70);
    EXPECT_EQ(r.log, (Strings{"start link c0 @0"}));
    r.world.store_log.push_back(R"({"kind":"enter","client":2})");
    r.advance(80);
    EXPECT_EQ(r.log, (Strings{"start link c0 @0", "end link c0 @72"}));
    EXPECT_EQ(r.schedule.next_due_ns(), std::nullopt);

    ScheduleRun nobody({link});  // nobody enters: it ends at max_ms
    nobody.schedule.reach(0, Point::before_acquire, 0);
    nobody.advance(300);
    EXPECT_EQ(nobody.log, (Strings{"start link c0 @0", "end link c0 @200"}));

    ScheduleRun cut({link});  // the run ends while it waits: healed then, once
    cut.schedule.reach(0, Point::before_acquire, 0);
    cut.advance(100);
    cut.schedule.heal(110 * kMs);
    EXPECT_EQ(cut.log, (Strings{"start link c0 @0", "end link c0 @110"}));
}

// A pause "until another enters" resumes the client only once another client has entered
// after its duration (the holder stays stopped until the lock has been taken from it).
TEST(FaultSchedule, APauseUntilAnotherEntersResumesAfterTheNextEnterOfAnotherClient) {
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::before_write);
    pause.client = 0;
    pause.duration_ms = 40;
    pause.until_another_enters = true;
    pause.max_ms = 500;
    ScheduleRun r({pause});
    EXPECT_EQ(r.schedule.reach(0, Point::before_write, 0), FaultSchedule::Answer::disarm);
    r.advance(100);
    EXPECT_EQ(r.world.calls, (Strings{"pause 0"}));
    r.world.store_log.push_back(R"({"kind":"enter","client":3})");
    r.advance(110);
    EXPECT_EQ(r.world.calls, (Strings{"pause 0", "resume 0"}));
    EXPECT_EQ(r.log, (Strings{"start pause c0 @0", "end pause c0 @102"}));  // the next read after the enter

    ScheduleRun cut({pause});  // the run ends while it waits: resumed then, once
    cut.schedule.reach(0, Point::before_write, 0);
    cut.advance(60);
    cut.schedule.heal(70 * kMs);
    EXPECT_EQ(cut.world.calls, (Strings{"pause 0", "resume 0"}));
    EXPECT_EQ(cut.log, (Strings{"start pause c0 @0", "end pause c0 @70"}));
}

// held-replies' link: client 0's replies held 50 ms, then until another enters (at most
// 200), then whoever entered kept in its section for client 0 (at most keep_ms).
FaultSpec held_replies_keeping(long long keep_ms) {
    FaultSpec link = link_until_another_enters();
    link.keep_holder_ms = keep_ms;
    return link;
}

// Client 0's replies held; client 2 enters at 60 ms, so they are let go at the next look
// (62) and client 2 becomes the holder kept for client 0.
ScheduleRun& keep_client_2(ScheduleRun& r) {
    EXPECT_EQ(r.schedule.reach(0, Point::before_acquire, 0), FaultSchedule::Answer::go);  // its next try counts
    r.advance(60);
    EXPECT_EQ(r.schedule.reach(1, Point::before_release, 60 * kMs), FaultSchedule::Answer::go);  // nobody kept yet
    r.world.store_log.push_back(R"({"kind":"enter","client":2})");
    r.world.holder = 2;  // the log ends with its enter: it is inside its section
    r.advance(62);
    EXPECT_EQ(r.log, (Strings{"start link c0 @0", "end link c0 @62"}));
    EXPECT_EQ(r.schedule.reach(2, Point::before_release, 63 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.world.calls.back(), "hold 2");
    return r;
}

// A gate at client 0's before_acquire whose wait ends at once (another's enter landed right
// after the gate marked the log) begins its keep within that same reach: the reach is client
// 0's first try, not its next one, so it does not end the keep as "failed".
TEST(FaultSchedule, AKeepBegunByTheKeptForClientsOwnReachDoesNotEndOnIt) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::before_acquire);
    gate.client = 0;
    gate.until_another_enters = true;
    gate.max_ms = 200;
    gate.keep_holder_ms = 100;
    ScheduleRun r({gate});
    r.world.store_log.push_back(R"({"kind":"enter","client":1})");
    r.world.enters_after_mark = 1;
    r.world.holder = 1;
    r.schedule.reach(0, Point::before_acquire, 0);
    EXPECT_EQ(r.world.calls.back(), "let_go 0");
    EXPECT_FALSE(r.schedule.report()[0].contains("kept"));  // still keeping client 1
    EXPECT_EQ(r.schedule.reach(1, Point::before_release, 5 * kMs), FaultSchedule::Answer::held);
    r.schedule.reach(0, Point::in_line, 10 * kMs);
    r.advance(10);
    EXPECT_EQ(r.schedule.report()[0]["kept"][0]["ended"], "in line");
}

// The client whose enter ended the wait stays in its section until client 0 has entered (the
// store's log) or is back at before_acquire (its acquire failed), or the keep's bound; its
// record says which. Other clients leave as they like; it is kept once.
TEST(FaultSchedule, KeepHolderKeepsWhoeverEnteredUntilTheHeldClientEntersOrFails) {
    ScheduleRun entered({held_replies_keeping(100)});
    keep_client_2(entered);
    entered.advance(70);
    EXPECT_EQ(entered.world.calls.back(), "hold 2");
    EXPECT_EQ(entered.schedule.reach(1, Point::before_release, 70 * kMs), FaultSchedule::Answer::go);
    entered.world.store_log.push_back(R"({"kind":"enter","client":1})");  // not client 0: still kept
    entered.advance(74);
    EXPECT_EQ(entered.world.calls.back(), "hold 2");
    entered.world.store_log.push_back(R"({"kind":"enter","client":0})");
    entered.advance(80);
    EXPECT_EQ(entered.world.calls.back(), "let_go 2");
    const auto kept = entered.schedule.report()[0]["kept"];
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0]["holder"], 2);
    EXPECT_EQ(kept[0]["ended"], "entered");
    EXPECT_EQ(kept[0]["from_ns"], 62 * kMs);
    EXPECT_EQ(kept[0]["to_ns"], 76 * kMs);
    EXPECT_EQ(entered.schedule.reach(2, Point::before_release, 90 * kMs), FaultSchedule::Answer::disarm);  // once
    EXPECT_TRUE(entered.schedule.spent());

    ScheduleRun failed({held_replies_keeping(100)});
    keep_client_2(failed);
    EXPECT_EQ(failed.schedule.reach(0, Point::before_acquire, 70 * kMs), FaultSchedule::Answer::disarm);
    failed.advance(70);
    EXPECT_EQ(failed.world.calls.back(), "let_go 2");
    EXPECT_EQ(failed.schedule.report()[0]["kept"][0]["ended"], "failed");

    // Its adapter says its acquire waits in the library's queue behind the holder: the late
    // answer met the lock held, and the holder may go (its leaving lets client 0 in, in turn).
    ScheduleRun in_line({held_replies_keeping(100)});
    keep_client_2(in_line);
    EXPECT_EQ(in_line.schedule.reach(1, Point::in_line, 68 * kMs), FaultSchedule::Answer::disarm);  // not client 0's
    in_line.advance(69);
    EXPECT_EQ(in_line.world.calls.back(), "hold 2");
    EXPECT_NE(in_line.schedule.reach(0, Point::in_line, 70 * kMs), FaultSchedule::Answer::held);
    in_line.advance(70);
    EXPECT_EQ(in_line.world.calls.back(), "let_go 2");
    EXPECT_EQ(in_line.schedule.report()[0]["kept"][0]["ended"], "in line");
    EXPECT_EQ(in_line.schedule.report()[0]["kept"][0]["to_ns"], 70 * kMs);

    // In line already before the holder entered (and the attempt still in flight): it waits
    // behind whoever holds now, so the keep ends as it begins. A new attempt forgets it.
    ScheduleRun queued({held_replies_keeping(100)});
    EXPECT_EQ(queued.schedule.reach(0, Point::before_acquire, 0), FaultSchedule::Answer::go);
    EXPECT_EQ(queued.schedule.reach(0, Point::in_line, 30 * kMs), FaultSchedule::Answer::go);
    queued.advance(60);
    queued.world.store_log.push_back(R"({"kind":"enter","client":2})");  // after the hold's 50 ms
    queued.world.holder = 2;
    queued.advance(62);
    EXPECT_EQ(queued.schedule.report()[0]["kept"][0]["ended"], "in line");
    EXPECT_EQ(queued.schedule.reach(2, Point::before_release, 63 * kMs), FaultSchedule::Answer::disarm);  // not held

    ScheduleRun bound({held_replies_keeping(100)});
    keep_client_2(bound);
    bound.advance(161);
    EXPECT_EQ(bound.world.calls.back(), "hold 2");
    EXPECT_FALSE(bound.schedule.spent());
    bound.advance(162);
    EXPECT_EQ(bound.world.calls.back(), "let_go 2");
    EXPECT_EQ(bound.schedule.report()[0]["kept"][0]["ended"], "bound");

    ScheduleRun cut({held_replies_keeping(100)});
    keep_client_2(cut);
    cut.schedule.heal(100 * kMs);
    EXPECT_EQ(cut.world.calls.back(), "let_go 2");
    EXPECT_EQ(cut.schedule.report()[0]["kept"][0]["ended"], "run ended");

    ScheduleRun holder_gone({held_replies_keeping(100)});
    keep_client_2(holder_gone);
    holder_gone.schedule.client_gone(2, 70 * kMs);
    holder_gone.advance(200);
    EXPECT_EQ(holder_gone.world.calls.back(), "hold 2");  // nobody to let go
    EXPECT_EQ(holder_gone.schedule.report()[0]["kept"][0]["ended"], "holder gone");
}

// The client kept is whoever is inside its section when the wait ends, not the first to have
// entered: a late look may find that one gone, and then nobody is kept, which is said.
TEST(FaultSchedule, KeepHolderKeepsWhoeverIsInsideNowOrSaysNobodyWas) {
    ScheduleRun r({held_replies_keeping(100)});
    r.schedule.reach(0, Point::before_acquire, 0);
    r.world.store_log = {R"({"kind":"enter","client":1})"};  // during the 50 ms: does not count
    r.advance(60);
    r.world.store_log.push_back(R"({"kind":"exit","client":1})");
    r.world.store_log.push_back(R"({"kind":"enter","client":2})");
    r.world.store_log.push_back(R"({"kind":"exit","client":2})");
    r.world.store_log.push_back(R"({"kind":"enter","client":3})");
    r.world.holder = 3;
    r.advance(62);
    EXPECT_EQ(r.schedule.reach(2, Point::before_release, 63 * kMs), FaultSchedule::Answer::go);
    EXPECT_EQ(r.schedule.reach(3, Point::before_release, 63 * kMs), FaultSchedule::Answer::held);

    ScheduleRun left({held_replies_keeping(100)});
    left.schedule.reach(0, Point::before_acquire, 0);
    left.advance(60);
    left.world.store_log.push_back(R"({"kind":"enter","client":2})");
    left.world.store_log.push_back(R"({"kind":"exit","client":2})");  // gone by the look
    left.advance(62);
    EXPECT_EQ(left.schedule.report()[0]["kept"][0]["ended"], "nobody inside");
    EXPECT_EQ(left.schedule.reach(2, Point::before_release, 63 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_TRUE(left.schedule.spent());

    ScheduleRun gone({held_replies_keeping(100)});  // client 0 gone while its replies were held
    gone.schedule.reach(0, Point::before_acquire, 0);
    gone.schedule.client_gone(0, 30 * kMs);
    gone.advance(60);
    gone.world.store_log.push_back(R"({"kind":"enter","client":2})");
    gone.world.holder = 2;
    gone.advance(62);
    EXPECT_EQ(gone.schedule.reach(2, Point::before_release, 63 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_FALSE(gone.schedule.report()[0].contains("kept"));
}

// How far past its bound the nemesis ended a wait or a keep (its timers run late on a stalled
// machine) is recorded; on time, nothing.
TEST(FaultSchedule, AWaitOrAKeepEndedLateSaysByHowMuch) {
    ScheduleRun on_time({held_replies_keeping(100)});
    keep_client_2(on_time);
    on_time.advance(200);
    EXPECT_EQ(on_time.schedule.report()[0]["waits"][0]["late_ns"], 0);
    EXPECT_EQ(on_time.schedule.report()[0]["max_ms"], 200);
    EXPECT_EQ(on_time.schedule.report()[0]["kept"][0]["late_ns"], 0);

    ScheduleRun late({held_replies_keeping(100)});
    late.schedule.reach(0, Point::before_acquire, 0);
    late.schedule.run_due(330 * kMs);  // its 50 ms duration's timer runs at 330: the machine stalled
    late.world.store_log.push_back(R"({"kind":"enter","client":2})");
    late.world.holder = 2;
    late.advance(334);  // the next look sees the enter: 332 ms in all, at most 200
    EXPECT_EQ(late.schedule.report()[0]["waits"][0]["late_ns"], 132 * kMs);
    late.schedule.run_due(500 * kMs);  // the keep's 100 ms bound, looked at 168 ms after it began
    EXPECT_EQ(late.schedule.report()[0]["kept"][0]["ended"], "bound");
    EXPECT_EQ(late.schedule.report()[0]["kept"][0]["late_ns"], 68 * kMs);
}

// Nobody entered while the replies were held: nobody is kept, and nobody waits at its leaving.
TEST(FaultSchedule, KeepHolderKeepsNobodyWhenNobodyEntered) {
    ScheduleRun r({held_replies_keeping(100)});
    r.schedule.reach(0, Point::before_acquire, 0);
    r.advance(300);
    EXPECT_EQ(r.log, (Strings{"start link c0 @0", "end link c0 @200"}));
    EXPECT_EQ(r.schedule.reach(1, Point::before_release, 300 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_FALSE(r.schedule.report()[0].contains("kept"));
    EXPECT_TRUE(r.schedule.spent());
}

TEST(FaultSchedule, AClientThatIsGoneLetsTheOthersAtItsGateGo) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::before_write);
    gate.count = 3;
    ScheduleRun r({gate});
    r.schedule.reach(0, Point::before_write, 0);
    r.schedule.reach(1, Point::before_write, 0);
    r.schedule.client_gone(0, 7 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"hold 0", "hold 1", "let_go 1"}));
    EXPECT_EQ(r.log.back(), "end gate c1 @7");
    EXPECT_EQ(r.schedule.reach(2, Point::before_write, 0), FaultSchedule::Answer::disarm);  // done
}

// The workload's start_after: the others wait at their first acquire until client 0 has
// reached its point, and set out once the faults armed there are in place.
TEST(StartAfter, TheOthersWaitAtTheirFirstAcquireUntilTheFirstClientReachesItsPoint) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.client = 0;
    crash.node = 0;
    ScheduleRun r({crash}, 3, 0, StartAfter{0, Point::after_acquire, 500});
    EXPECT_EQ(r.schedule.armed_points(), (Strings{"after_acquire", "before_acquire"}));
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 1 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.schedule.reach(2, Point::before_acquire, 1 * kMs), FaultSchedule::Answer::held);
    // Client 0 is not held, and has nothing at before_acquire to report.
    EXPECT_EQ(r.schedule.reach(0, Point::before_acquire, 2 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 2"}));
    EXPECT_FALSE(r.schedule.spent());
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 30 * kMs), FaultSchedule::Answer::disarm);
    // Let go by a timer due at once (the simulator wakes a fiber only from the world).
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 2", "crash 0"}));
    r.advance(30);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 2", "crash 0", "let_go 1", "let_go 2"}));
    // Once open, nothing holds: a later acquire of the others goes on, and stops reporting.
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 40 * kMs), FaultSchedule::Answer::disarm);
    r.advance(1000);  // its max_ms passes: nobody is let go twice
    EXPECT_EQ(r.world.calls.size(), 5u);
    EXPECT_EQ(r.log, (Strings{"start crash c0 @30"})) << "the start is no fault: no line of its own";
    EXPECT_EQ(r.schedule.injected(), 1);
}

// A node that a crash at the start's point restarts at once is back before the others set
// out, however long it takes (an acquire sent to a server still starting can fail with its
// outcome unknown); the start's max_ms, reached meanwhile, is no miss: its client got there.
TEST(StartAfter, TheOthersSetOutOnceANodeRestartedAtOnceIsBack) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.client = 0;
    crash.node = 0;
    crash.restart_after_ms = 0;
    ScheduleRun r({crash}, 2, 0, StartAfter{0, Point::after_acquire, 500});
    r.world.restart_takes_asks = 200;  // back at the 200th ask, 5 ms apart: about 1 s
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::held);
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 30 * kMs), FaultSchedule::Answer::disarm);
    r.advance(600);  // past max_ms: still held, the node is not back
    EXPECT_EQ(std::ranges::count(r.world.calls, "let_go 1"), 0);
    r.advance(1100);
    EXPECT_EQ(std::ranges::count(r.world.calls, "let_go 1"), 1);
    EXPECT_EQ(r.log, (Strings{"start crash c0 @30", "end crash c0 @1030"}));
    EXPECT_EQ(r.world.calls.back(), "let_go 1") << "let go after the node was back";
    EXPECT_TRUE(r.schedule.unmet().empty()) << r.schedule.unmet().front();

    // The run healed while the node is still coming back: the others are let go, once.
    ScheduleRun healed({crash}, 2, 0, StartAfter{0, Point::after_acquire, 500});
    healed.world.restart_takes_asks = 1000;
    EXPECT_EQ(healed.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::held);
    healed.schedule.reach(0, Point::after_acquire, 30 * kMs);
    healed.advance(100);
    healed.schedule.heal(100 * kMs);
    EXPECT_EQ(std::ranges::count(healed.world.calls, "let_go 1"), 1);
    EXPECT_EQ(healed.world.calls.back(), "let_go 1");
    EXPECT_FALSE(healed.schedule.next_due_ns()) << "nothing booked while healing";

    // A crash that keeps its node down a while is the story the others meet: no wait.
    crash.restart_after_ms = 300;
    ScheduleRun down({crash}, 2, 0, StartAfter{0, Point::after_acquire, 500});
    EXPECT_EQ(down.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::held);
    down.schedule.reach(0, Point::after_acquire, 30 * kMs);
    down.advance(30);
    EXPECT_EQ(down.world.calls, (Strings{"hold 1", "crash 0", "let_go 1"}));
}

// held-replies: client 0's replies held from its before_acquire, the start's point. The
// others set out once its request has reached the nodes: every path it sent on has its last
// request answered into the hold, and one has; a path it never sent on (a server it is not
// connected to) is not waited for. Not in time: the others go at max_ms, and the story did
// not happen. A hold let go first is not the story either; a hold in both directions (its
// requests never reach the nodes) is not waited for.
TEST(StartAfter, HeldRepliesOpenTheStartOnceTheFirstClientsRequestReachedItsNodes) {
    FaultSpec hold = at_point(FaultSpec::Kind::link, Point::before_acquire);
    hold.client = 0;
    hold.link_nodes = {0, 1, 2};
    hold.link = LinkFault::hold();
    hold.direction = Direction::downstream;
    hold.duration_ms = 2200;
    ScheduleRun r({hold}, 3, 0, StartAfter{0, Point::before_acquire, 1000});
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 1 * kMs), FaultSchedule::Answer::held);
    r.schedule.reach(0, Point::before_acquire, 2 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "link c0-n0 hold", "link c0-n1 hold", "link c0-n2 hold"}));
    r.advance(20);  // nothing sent yet
    r.world.held = {{0, FaultActuator::HeldPath::answered}, {1, FaultActuator::HeldPath::asked}};
    r.advance(40);  // node 1 has not answered
    EXPECT_EQ(r.world.calls.size(), 4u);
    EXPECT_GE(r.world.held_questions, 6);
    r.world.held[1] = FaultActuator::HeldPath::answered;  // node 2: never sent to
    r.advance(50);
    EXPECT_EQ(r.world.calls.back(), "let_go 1");
    EXPECT_EQ(r.schedule.reach(2, Point::before_acquire, 60 * kMs), FaultSchedule::Answer::disarm);
    r.advance(1100);
    EXPECT_TRUE(r.schedule.unmet().empty());

    ScheduleRun late({hold}, 3, 0, StartAfter{0, Point::before_acquire, 1000});
    late.schedule.reach(1, Point::before_acquire, 1 * kMs);
    late.schedule.reach(0, Point::before_acquire, 2 * kMs);
    late.world.held = {{0, FaultActuator::HeldPath::asked}};
    late.advance(999);
    EXPECT_NE(late.world.calls.back(), "let_go 1");
    late.advance(1000);
    EXPECT_EQ(late.world.calls.back(), "let_go 1");
    ASSERT_EQ(late.schedule.unmet().size(), 1u);
    EXPECT_EQ(late.schedule.unmet()[0],
              "client 0's request, its replies held, had not reached its nodes within 1000 ms of the start (start_after)");

    FaultSpec short_hold = hold;
    short_hold.duration_ms = 100;
    ScheduleRun let_go({short_hold}, 3, 0, StartAfter{0, Point::before_acquire, 1000});
    let_go.schedule.reach(1, Point::before_acquire, 1 * kMs);
    let_go.schedule.reach(0, Point::before_acquire, 2 * kMs);
    let_go.world.held = {{0, FaultActuator::HeldPath::asked}};
    let_go.advance(150);  // the hold ended at 102 ms: the next look lets the others go
    EXPECT_EQ(let_go.world.calls.back(), "let_go 1");
    ASSERT_EQ(let_go.schedule.unmet().size(), 1u);
    EXPECT_NE(let_go.schedule.unmet()[0].find("replies were let go before its request had reached its nodes"),
              std::string::npos);

    FaultSpec both = hold;
    both.direction.reset();
    ScheduleRun both_ways({both}, 3, 0, StartAfter{0, Point::before_acquire, 1000});
    both_ways.schedule.reach(1, Point::before_acquire, 1 * kMs);
    both_ways.schedule.reach(0, Point::before_acquire, 2 * kMs);
    both_ways.advance(2);
    EXPECT_EQ(both_ways.world.calls.back(), "let_go 1");
    EXPECT_EQ(both_ways.world.held_questions, 0);
}

// A five-node library under load: client 0's first SET answered, it sends the rest only after
// the others set out. Other clients' requests reaching so many of those nodes before its own
// that the rest are no majority: its late answers could not make one, not as written. A node
// it sent to before the start opened, or not at all while its replies were held, is not
// taken from it.
TEST(StartAfter, OtherClientsTakingTheMajorityBeforeTheHeldClientsLateRequestsIsNotAsWritten) {
    FaultSpec hold = at_point(FaultSpec::Kind::link, Point::before_acquire);
    hold.client = 0;
    hold.link_nodes = {0, 1, 2, 3, 4};
    hold.link = LinkFault::hold();
    hold.direction = Direction::downstream;
    hold.duration_ms = 2200;
    using First = std::map<std::pair<int, int>, long long>;  // (client, node) → its first request
    const auto run = [&](First first) {
        auto r = std::make_unique<ScheduleRun>(std::vector<FaultSpec>{hold}, 3, 0,
                                               StartAfter{0, Point::before_acquire, 1000});
        r->schedule.reach(1, Point::before_acquire, 1 * kMs);
        r->schedule.reach(0, Point::before_acquire, 2 * kMs);
        r->world.held = {{0, FaultActuator::HeldPath::answered}};
        r->advance(10);
        EXPECT_EQ(r->world.calls.back(), "let_go 1");
        EXPECT_GE(r->world.marks, 1);
        r->world.first = std::move(first);
        r->advance(2300);  // the hold ended at 2202 ms
        EXPECT_EQ(r->world.calls.back(), "link c0-n4 pass");
        return r->schedule.unmet();
    };
    // Nodes 2, 3 and 4 taken first: 2 of 5 left.
    const auto overtaken = run({{{0, 1}, 4}, {{1, 1}, 5}, {{2, 2}, 6}, {{0, 2}, 7}, {{1, 3}, 8},
                                {{2, 3}, 9}, {{0, 3}, 10}, {{2, 4}, 11}, {{0, 4}, 12}});
    ASSERT_EQ(overtaken.size(), 1u);
    EXPECT_EQ(overtaken[0], "link hold n0 n1 n2 n3 n4 for 2200 ms at before_acquire #1 on client 0: another "
                            "client's request reached node 2 by client 2, node 3 by client 1, node 4 by client 2 "
                            "before client 0's, which it sent there while its replies were held: the rest are no "
                            "majority of 5 (start_after)");
    // Two taken: 3 of 5 left, a majority.
    EXPECT_TRUE(run({{{0, 1}, 4}, {{2, 2}, 6}, {{0, 2}, 7}, {{1, 3}, 8}, {{0, 3}, 10}, {{0, 4}, 12}}).empty());
    // Node 0 was sent to before the start opened: another's later request there takes nothing.
    EXPECT_TRUE(run({{{1, 0}, 3}, {{0, 0}, 20}, {{2, 2}, 6}, {{0, 2}, 7}, {{1, 3}, 8}, {{0, 3}, 10}}).empty());
    // Nothing more sent while its replies were held (a Redlock writing its nodes one by one).
    EXPECT_TRUE(run({{{1, 1}, 3}, {{2, 2}, 4}, {{1, 3}, 5}, {{2, 4}, 6}}).empty());
    // First everywhere.
    EXPECT_TRUE(run({{{0, 1}, 1}, {{0, 2}, 2}, {{0, 3}, 3}, {{0, 4}, 4}, {{1, 1}, 5}, {{2, 4}, 6}}).empty());
}

// A hold on no lock node (the store's link alone) has no majority to lose: the overtake check
// has nothing to say of it.
TEST(StartAfter, AHoldOnNoLockNodeIsNeverOvertaken) {
    FaultSpec hold = at_point(FaultSpec::Kind::link, Point::before_acquire);
    hold.client = 0;
    hold.link_store = true;
    hold.link = LinkFault::hold();
    hold.direction = Direction::downstream;
    hold.duration_ms = 2200;
    ScheduleRun r({hold}, 3, 0, StartAfter{0, Point::before_acquire, 1000});
    r.schedule.reach(1, Point::before_acquire, 1 * kMs);
    r.schedule.reach(0, Point::before_acquire, 2 * kMs);
    r.advance(10);
    EXPECT_EQ(r.world.calls.back(), "let_go 1");
    r.world.first = {{{1, 0}, 1}, {{2, 0}, 2}};
    r.advance(2300);
    EXPECT_TRUE(r.schedule.unmet().empty());
}

// node-restart-empty's shape: client 0 is held at its point until another enters, so the
// others must set out while it is held there.

TEST(StartAfter, AFirstClientHeldAtItsPointStillLetsTheOthersGo) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_acquire);
    gate.client = 0;
    gate.until_another_enters = true;
    gate.max_ms = 400;
    ScheduleRun r({gate}, 2, 0, StartAfter{0, Point::after_acquire, 500});
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::held);
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 10 * kMs), FaultSchedule::Answer::held);
    r.advance(10);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 0", "let_go 1"}));
}

TEST(StartAfter, AfterMaxMsTheOthersGoWhetherOrNotTheFirstGotThere) {
    ScheduleRun r({}, 3, 0, StartAfter{0, Point::after_acquire, 500});
    EXPECT_EQ(r.schedule.reach(2, Point::before_acquire, 10 * kMs), FaultSchedule::Answer::held);
    r.advance(499);
    EXPECT_EQ(r.world.calls, (Strings{"hold 2"}));
    r.advance(500);
    EXPECT_EQ(r.world.calls, (Strings{"hold 2", "let_go 2"}));
    EXPECT_EQ(r.schedule.reach(1, Point::before_acquire, 600 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_TRUE(r.schedule.spent());
}

TEST(StartAfter, TheFirstClientGoneOrTheRunHealedLetsTheOthersGo) {
    ScheduleRun gone({}, 3, 0, StartAfter{1, Point::before_write, 500});
    EXPECT_EQ(gone.schedule.reach(0, Point::before_acquire, 0), FaultSchedule::Answer::held);
    EXPECT_EQ(gone.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::disarm);  // not its point
    gone.schedule.client_gone(1, 5 * kMs);  // killed before it got to before_write
    gone.advance(5);
    EXPECT_EQ(gone.world.calls, (Strings{"hold 0", "let_go 0"}));
    EXPECT_EQ(gone.schedule.reach(2, Point::before_acquire, 6 * kMs), FaultSchedule::Answer::disarm);

    ScheduleRun healed({}, 3, 0, StartAfter{0, Point::after_acquire, 500});
    EXPECT_EQ(healed.schedule.reach(1, Point::before_acquire, 0), FaultSchedule::Answer::held);
    healed.schedule.heal(5 * kMs);
    EXPECT_EQ(healed.world.calls, (Strings{"hold 1", "let_go 1"}));
}

TEST(FaultSchedule, ACrashRestartsAfterItsDelayOrRecordsTheFailure) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 1;
    crash.restart_after_ms = 1100;
    ScheduleRun r({crash});
    r.world.restart_works = false;
    r.schedule.reach(0, Point::after_acquire, 100 * kMs);
    EXPECT_EQ(r.schedule.next_due_ns(), 1200 * kMs);
    r.schedule.run_due(1200 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"crash 1", "restart 1"}));
    EXPECT_EQ(r.log, (Strings{"start crash c0 @100", "failed crash c0 @1200"}));
}

// A node that takes a while to come back (a live server starting) is asked again every 5 ms,
// the schedule answering clients meanwhile; its crash ends when it says it is back. One still
// starting when the run heals is waited for.
TEST(FaultSchedule, ANodeSlowToComeBackEndsItsCrashWhenItIsBackAndClientsGoOnMeanwhile) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 1;
    crash.restart_after_ms = 0;
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::before_write);
    pause.duration_ms = 50;
    {
        ScheduleRun r({crash, pause});
        r.world.restart_takes_asks = 3;
        EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 100 * kMs), FaultSchedule::Answer::disarm);
        r.schedule.run_due(100 * kMs);  // restart asked for: not back yet
        EXPECT_EQ(r.schedule.reach(0, Point::before_write, 101 * kMs), FaultSchedule::Answer::disarm);  // paused meanwhile
        r.advance(200);
        EXPECT_EQ(r.world.calls, (Strings{"crash 1", "restart 1", "pause 0", "ask 1", "ask 1", "ask 1", "resume 0"}));
        EXPECT_EQ(r.log, (Strings{"start crash c0 @100", "start pause c0 @101", "end crash c0 @115", "end pause c0 @151"}));
    }
    {
        ScheduleRun r({crash});
        r.world.restart_takes_asks = 100;
        r.schedule.reach(0, Point::after_acquire, 100 * kMs);
        r.schedule.run_due(100 * kMs);
        r.schedule.heal(102 * kMs);
        EXPECT_EQ(r.world.calls, (Strings{"crash 1", "restart 1", "wait 1"}));
        EXPECT_EQ(r.log, (Strings{"start crash c0 @100", "end crash c0 @102"}));
    }
}

TEST(FaultSchedule, ACrashOfTheLeaderRestartsTheServerThatLedWhenItFired) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = kLeaderNode;
    crash.restart_after_ms = 500;
    std::vector<std::string> lines;
    FakeWorld world;
    FaultSchedule schedule({crash}, world, [&](const std::string& line) { lines.push_back(line); });
    schedule.start(2, 0, 0);
    world.leader = 2;
    schedule.reach(0, Point::after_acquire, 100 * kMs);
    world.leader = 0;  // a new leader was elected meanwhile
    schedule.run_due(600 * kMs);
    EXPECT_EQ(world.calls, (Strings{"resolve leader", "crash 2", "restart 2"}));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(nlohmann::json::parse(lines[0])["node"], 2);  // the log names the server it struck
    EXPECT_EQ(nlohmann::json::parse(lines[1])["label"], "crash node leader, restart after 500 ms at after_acquire #1");
}

TEST(FaultSchedule, APauseOfANodeStopsTheServerNotTheClientAndHealingResumesIt) {
    FaultSpec pause = at_time(FaultSpec::Kind::pause, 100);
    pause.client.reset();
    pause.node = kFollowerNode;
    pause.duration_ms = 300;
    FaultSpec forever = at_point(FaultSpec::Kind::pause, Point::before_write);
    forever.node = 0;
    forever.duration_ms = 5000;
    ScheduleRun r({pause, forever});
    r.schedule.run_due(100 * kMs);
    r.schedule.reach(1, Point::before_write, 200 * kMs);
    r.schedule.run_due(400 * kMs);
    r.schedule.heal(500 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"resolve follower", "pause node 2", "pause node 0", "resume node 2", "resume node 0"}));
}

// A disk stall strikes the server's disk alone: the client that reached the point is answered
// at once, and the stall ends after its duration (or when the run heals).
TEST(FaultSchedule, ADiskStallHoldsTheNodesFlushesForItsDurationOrUntilHealed) {
    FaultSpec stall = at_point(FaultSpec::Kind::disk_stall, Point::before_acquire);
    stall.node = 0;
    stall.duration_ms = 300;
    FaultSpec forever = at_time(FaultSpec::Kind::disk_stall, 1000);
    forever.client.reset();
    forever.node = 0;
    forever.duration_ms = 5000;
    ScheduleRun r({stall, forever});
    EXPECT_NE(r.schedule.reach(0, Point::before_acquire, 100 * kMs), FaultSchedule::Answer::held);
    r.schedule.run_due(399 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"stall disk of node 0"}));
    r.schedule.run_due(400 * kMs);
    r.schedule.run_due(1000 * kMs);
    r.schedule.heal(1100 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"stall disk of node 0", "unstall disk of node 0", "stall disk of node 0", "unstall disk of node 0"}));
}

// A disk stall kept after its end (keep_holder_ms, no "until"): the first client to reach the
// point `entered` (its enter landed in the store) since the stall's end is kept there, inside
// its section, until another client enters, or every other client's acquire that was in
// flight at the end has answered (back at before_acquire, in line, or gone); at most
// keep_holder_ms from the stall's end. Nobody entering while every acquire answered is the lock
// refusing them all.
FaultSpec stall_keeping(long long keep_ms) {
    FaultSpec stall = at_point(FaultSpec::Kind::disk_stall, Point::before_acquire);
    stall.client = 0;
    stall.node = 0;
    stall.duration_ms = 300;
    stall.keep_holder_ms = keep_ms;
    return stall;
}

// The stall from 0 to 300 ms, every client's acquire in flight through it; client 1 enters at
// 301 and, reaching `entered` before any look at the log, is held there.
ScheduleRun& stall_then_client_1_enters(ScheduleRun& r) {
    EXPECT_EQ(r.schedule.reach(0, Point::before_acquire, 0), FaultSchedule::Answer::go);
    r.schedule.reach(1, Point::before_acquire, 100 * kMs);
    r.schedule.reach(2, Point::before_acquire, 200 * kMs);
    r.advance(300);
    EXPECT_EQ(r.world.calls, (Strings{"stall disk of node 0", "unstall disk of node 0"}));
    r.world.store_log.push_back(R"({"kind":"enter","client":1})");
    r.world.holder = 1;
    EXPECT_EQ(r.schedule.reach(1, Point::entered, 301 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.world.calls.back(), "hold 1");
    return r;
}

TEST(FaultSchedule, KeptAfterItsEndTheFirstToEnterStaysUntilAnotherEntersOrEveryAcquireAnswered) {
    ScheduleRun entered({stall_keeping(500)});
    stall_then_client_1_enters(entered);
    entered.world.store_log.push_back(R"({"kind":"enter","client":0})");  // the late answer, believed
    entered.advance(306);
    EXPECT_EQ(entered.world.calls.back(), "let_go 1");
    auto kept = entered.schedule.report()[0]["kept"];
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0]["holder"], 1);
    EXPECT_EQ(kept[0]["client"], 0);
    EXPECT_EQ(kept[0]["ended"], "entered");
    EXPECT_EQ(entered.schedule.reach(1, Point::entered, 400 * kMs), FaultSchedule::Answer::disarm);  // once
    EXPECT_TRUE(entered.schedule.spent());

    // Client 0 refuses its late answer and client 2's fails: both back at before_acquire.
    ScheduleRun failed({stall_keeping(500)});
    stall_then_client_1_enters(failed);
    EXPECT_EQ(failed.schedule.reach(0, Point::before_acquire, 304 * kMs), FaultSchedule::Answer::go);
    failed.advance(306);
    EXPECT_EQ(failed.world.calls.back(), "hold 1");  // client 2 has not answered yet
    EXPECT_EQ(failed.schedule.reach(2, Point::in_line, 307 * kMs), FaultSchedule::Answer::go);
    failed.advance(308);
    EXPECT_EQ(failed.world.calls.back(), "let_go 1");
    EXPECT_EQ(failed.schedule.report()[0]["kept"][0]["ended"], "failed");
    EXPECT_EQ(failed.schedule.report()[0]["kept"][0]["client"], 2);

    // A client gone counts as answered; the bound lets the holder go and says so.
    ScheduleRun bound({stall_keeping(500)});
    stall_then_client_1_enters(bound);
    bound.schedule.client_gone(2, 310 * kMs);
    bound.advance(799);
    EXPECT_EQ(bound.world.calls.back(), "hold 1");
    bound.advance(800);
    EXPECT_EQ(bound.world.calls.back(), "let_go 1");
    EXPECT_EQ(bound.schedule.report()[0]["kept"][0]["ended"], "bound");
    EXPECT_FALSE(bound.schedule.report()[0]["kept"][0].contains("client"));
}

// Only an acquire in flight at the fault's end is waited for: a client inside its section then
// (its last point was not before_acquire) has nothing to answer, and its next attempt is not
// the story's.
TEST(FaultSchedule, KeptAfterItsEndOnlyAcquiresInFlightAtTheEndAreWaitedFor) {
    ScheduleRun r({stall_keeping(500)});
    r.schedule.reach(0, Point::before_acquire, 0);
    r.schedule.reach(1, Point::before_acquire, 100 * kMs);
    r.schedule.reach(2, Point::entered, 150 * kMs);  // inside a section through the stall's end
    r.advance(300);
    r.world.store_log.push_back(R"({"kind":"enter","client":1})");
    EXPECT_EQ(r.schedule.reach(1, Point::entered, 301 * kMs), FaultSchedule::Answer::held);
    r.schedule.reach(0, Point::before_acquire, 302 * kMs);  // client 0's late answer refused
    r.advance(304);
    EXPECT_EQ(r.world.calls.back(), "let_go 1");
    EXPECT_EQ(r.schedule.report()[0]["kept"][0]["ended"], "failed");
}

TEST(FaultSchedule, KeptAfterItsEndNobodyEnteringSaysWhetherEveryAcquireAnswered) {
    ScheduleRun refused({stall_keeping(500)});
    for (int c = 0; c < 3; ++c) refused.schedule.reach(c, Point::before_acquire, 0);
    refused.advance(300);
    for (int c = 0; c < 3; ++c) refused.schedule.reach(c, Point::before_acquire, 301 * kMs);
    refused.advance(303);
    const auto kept = refused.schedule.report()[0]["kept"];
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0]["ended"], "none entered");
    EXPECT_FALSE(kept[0].contains("holder"));
    EXPECT_TRUE(refused.schedule.spent());

    ScheduleRun quiet({stall_keeping(500)});  // client 2 never answers, nobody enters
    for (int c = 0; c < 3; ++c) quiet.schedule.reach(c, Point::before_acquire, 0);
    quiet.advance(300);
    quiet.schedule.reach(0, Point::before_acquire, 301 * kMs);
    quiet.schedule.reach(1, Point::before_acquire, 301 * kMs);
    quiet.advance(799);
    EXPECT_FALSE(quiet.schedule.report()[0].contains("kept"));
    EXPECT_FALSE(quiet.schedule.spent());
    quiet.advance(800);
    EXPECT_EQ(quiet.schedule.report()[0]["kept"][0]["ended"], "bound");

    ScheduleRun early({stall_keeping(500)});  // an enter during the stall is not the story's
    early.schedule.reach(0, Point::before_acquire, 0);
    early.world.store_log.push_back(R"({"kind":"enter","client":2})");
    early.world.holder = 2;
    early.advance(302);
    EXPECT_EQ(early.schedule.reach(2, Point::entered, 303 * kMs), FaultSchedule::Answer::go);

    ScheduleRun cut({stall_keeping(500)});  // the run ends during the stall: said, not silent
    cut.schedule.reach(0, Point::before_acquire, 0);
    cut.schedule.heal(200 * kMs);
    EXPECT_EQ(cut.schedule.report()[0]["kept"][0]["ended"], "run ended");
}

TEST(FaultSchedule, APeerLinkFaultCutsTheServerFromEveryOtherServerUntilItHeals) {
    FaultSpec cut = at_time(FaultSpec::Kind::link, 100);
    cut.client.reset();
    cut.node = kLeaderNode;
    cut.link_peers = true;
    cut.link.kind = LinkFault::Kind::blackhole;
    cut.duration_ms = 200;
    ScheduleRun r({cut});
    r.schedule.run_due(100 * kMs);
    r.world.leader = 0;
    r.schedule.run_due(300 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"resolve leader", "link s1-s0 blackhole", "link s1-s2 blackhole", "link s1-s0 pass",
                                      "link s1-s2 pass"}));
}

TEST(FaultSchedule, HealingEndsWhatIsStillInForce) {
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::before_write);
    pause.duration_ms = 5000;
    FaultSpec link = at_point(FaultSpec::Kind::link, Point::before_acquire);  // for good: no duration
    link.link = LinkFault::hold();
    link.link_replication = true;
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_acquire);
    gate.count = 2;
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::before_release);
    crash.node = 0;  // no restart: stays down
    ScheduleRun r({pause, link, gate, crash});
    r.schedule.reach(0, Point::before_acquire, 1 * kMs);
    r.schedule.reach(1, Point::after_acquire, 2 * kMs);
    r.schedule.reach(2, Point::before_write, 3 * kMs);
    r.schedule.reach(0, Point::before_release, 4 * kMs);
    r.world.calls.clear();
    r.log.clear();
    r.schedule.heal(9 * kMs);
    // Pending ends first, then each fault in its order: the link set for good, the gate.
    EXPECT_EQ(r.world.calls, (Strings{"resume 2", "link repl pass", "let_go 1"}));
    EXPECT_EQ(r.log, (Strings{"end pause c2 @9", "end link c0 @9", "end gate c1 @9"}));
    EXPECT_EQ(r.schedule.next_due_ns(), std::nullopt);
    r.world.calls.clear();
    r.schedule.heal(10 * kMs);  // once healed, nothing is left
    EXPECT_TRUE(r.world.calls.empty());
}

// A gate whose clients are let go one by one, stagger apart, and the run ends in between:
// the client still waiting for its turn is let go too, and its fault's end is logged like
// every other end, so the fault log shows no window left open.
TEST(FaultSchedule, HealingLogsTheEndOfAStaggeredReleaseStillPending) {
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::after_seen_expired);
    gate.count = 2;
    gate.stagger_ms = 20;
    ScheduleRun r({gate});
    r.schedule.reach(1, Point::after_seen_expired, 5 * kMs);
    r.schedule.reach(0, Point::after_seen_expired, 8 * kMs);
    r.schedule.run_due(8 * kMs);  // client 1 goes at once, client 0 would at 28 ms
    r.schedule.heal(10 * kMs);
    EXPECT_EQ(r.world.calls, (Strings{"hold 1", "hold 0", "let_go 1", "let_go 0"}));
    EXPECT_EQ(r.log, (Strings{"start gate c1 @5", "start gate c0 @8", "end gate c1 @8", "end gate c0 @10"}));
}

TEST(FaultSchedule, CountsWhatFiredOnWhichClients) {
    FaultSpec clock = at_point(FaultSpec::Kind::clock, Point::after_acquire);
    clock.node = 2;
    clock.jump_ms = 3000;
    clock.rate = 1.5;
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::before_write);
    gate.count = 2;
    FaultSpec never = at_point(FaultSpec::Kind::kill, Point::during_acquire);
    ScheduleRun r({clock, gate, never});
    r.schedule.reach(1, Point::after_acquire, 0);
    r.schedule.reach(0, Point::before_write, 0);
    r.schedule.reach(2, Point::before_write, 0);
    EXPECT_EQ(r.world.calls, (Strings{"node 2 step 3000", "node 2 rate 1.500000", "hold 0", "hold 2"}));
    EXPECT_EQ(r.schedule.injected(), 3);
    const auto report = r.schedule.report();
    ASSERT_EQ(report.size(), 3u);
    EXPECT_EQ(report[0]["fired"], 1);
    EXPECT_EQ(report[0]["clients"], std::vector<int>{1});
    EXPECT_EQ(report[1]["fired"], 2);
    EXPECT_EQ(report[2]["fired"], 0);
    EXPECT_EQ(report[2]["label"], "kill at during_acquire #1");
    EXPECT_EQ(r.schedule.armed_points(), (Strings{"after_acquire", "before_write", "during_acquire"}));
}

TEST(FaultSchedule, ALogLineIsOneJsonObjectWithTheFaultsLabel) {
    FaultSpec pause = at_point(FaultSpec::Kind::pause, Point::after_acquire);
    pause.duration_ms = 600;
    EXPECT_EQ(fault_log_line(42, "start", pause, 3),
              "{\"t_ns\":42,\"op\":\"fault\",\"type\":\"start\",\"fault\":\"pause\","
              "\"label\":\"pause 600 ms at after_acquire #1\",\"client\":3}\n");
}

// ---- the repeating nemesis (every_ms) -------------------------------------------------------

// A pause that repeats every `every_ms` until 2000 ms, on client `client` unless aimed otherwise.
FaultSpec repeating_pause(long long every_ms, long long pause_ms, int client = 1) {
    FaultSpec f;
    f.kind = FaultSpec::Kind::pause;
    f.every_ms = Distribution{Distribution::Kind::fixed, static_cast<double>(every_ms), 0};
    f.until_ms = 2000;
    f.client = client;
    f.duration_ms = pause_ms;
    return f;
}

std::vector<long long> occurrences(const ScheduleRun& r, const std::string& type) {
    std::vector<long long> out;
    for (const auto& j : r.lines)
        if (j["type"] == type) out.push_back(j["occurrence"].get<long long>());
    return out;
}

TEST(RepeatingFault, FiresEveryIntervalFromOneIntervalInUntilTheRunEnds) {
    ScheduleRun r({repeating_pause(500, 100)});
    EXPECT_TRUE(r.world.calls.empty());  // not at the start: one interval in
    r.advance(10'000);
    EXPECT_EQ(r.log, (Strings{"start pause c1 @500", "end pause c1 @600", "start pause c1 @1000", "end pause c1 @1100",
                              "start pause c1 @1500", "end pause c1 @1600"}));
    EXPECT_EQ(occurrences(r, "start"), (std::vector<long long>{1, 2, 3}));
    EXPECT_EQ(occurrences(r, "end"), (std::vector<long long>{1, 2, 3}));
    EXPECT_EQ(r.schedule.injected(), 3);
    EXPECT_EQ(r.schedule.report()[0]["fired"], 3);
    EXPECT_EQ(r.schedule.report()[0]["skipped"], 0);
}

TEST(RepeatingFault, AnAtMsStartsTheFirstOccurrenceThere) {
    FaultSpec f = repeating_pause(500, 100);
    f.at_ms = 0;
    ScheduleRun r({f});
    EXPECT_EQ(r.world.calls, Strings{"pause 1"});  // at 0 ms: now
    r.advance(10'000);
    EXPECT_EQ(r.schedule.injected(), 4);  // 0, 500, 1000, 1500
}

// Every draw is at least 1 ms, so with until_ms 1 the first draw always falls past the end;
// so does an at_ms after until_ms. Neither fires, in a world that runs on past the deadline.
TEST(RepeatingFault, AFirstOccurrencePastUntilMsIsNotBooked) {
    FaultSpec drawn = repeating_pause(0, 100);
    drawn.every_ms = Distribution{Distribution::Kind::exponential, 500, 0};
    drawn.until_ms = 1;
    FaultSpec late = repeating_pause(500, 100, 2);
    late.at_ms = 2500;
    ScheduleRun r({drawn, late}, 3, 5);
    EXPECT_FALSE(r.schedule.next_due_ns());
    r.advance(100'000);
    EXPECT_TRUE(r.log.empty());
    EXPECT_EQ(r.schedule.injected(), 0);
}

// A drawn length past the clients' duration ends with them: here at 2000 ms, not 5 s later.
TEST(RepeatingFault, ADrawnLengthIsCutToEndWithTheRun) {
    FaultSpec f = repeating_pause(1000, 0);
    f.duration_drawn_ms = Distribution{Distribution::Kind::uniform, 5000, 6000};
    f.ends_by_ms = 2000;
    ScheduleRun r({f});
    r.advance(100'000);
    EXPECT_EQ(r.log, (Strings{"start pause c1 @1000", "end pause c1 @2000"}));
    EXPECT_EQ(r.lines[0]["duration_ms"], 1000);
}

TEST(RepeatingFault, AnOccurrenceWhoseTargetIsStillPausedIsSkipped) {
    ScheduleRun r({repeating_pause(500, 700)});
    r.advance(10'000);
    // 500..1200 paused: the one at 1000 is skipped, the one at 1500 strikes again.
    EXPECT_EQ(r.log, (Strings{"start pause c1 @500", "skipped pause c1 @1000", "end pause c1 @1200",
                              "start pause c1 @1500", "end pause c1 @2200"}));
    EXPECT_EQ(r.world.calls, (Strings{"pause 1", "resume 1", "pause 1", "resume 1"}));
    EXPECT_EQ(r.schedule.report()[0]["skipped"], 1);
    EXPECT_EQ(occurrences(r, "start"), (std::vector<long long>{1, 3}));
}

// The holder is the client inside its section: an occurrence finding nobody there waits for
// one (looking every 2 ms) until the next is due, and only then is skipped.
TEST(RepeatingFault, AimedAtTheHolderItWaitsForAClientInsideItsSection) {
    FaultSpec f = repeating_pause(500, 100);
    f.client.reset();
    f.target = FaultSpec::Target::holder;
    ScheduleRun r({f});
    r.advance(700);  // nobody inside from 500 to 700: the occurrence of 500 waits
    EXPECT_TRUE(r.log.empty());
    r.world.holder = 2;  // client 2 enters
    r.advance(1200);
    r.world.holder.reset();  // and nobody is inside from 1200 on
    r.advance(10'000);
    EXPECT_EQ(r.log, (Strings{"start pause c2 @702", "end pause c2 @802", "start pause c2 @1000", "end pause c2 @1100",
                              "skipped pause @1998"}));
    EXPECT_EQ(r.lines.back()["why"], "nobody inside a section");
    EXPECT_EQ(occurrences(r, "start"), (std::vector<long long>{1, 2}));
    EXPECT_EQ(r.schedule.report()[0]["clients"], nlohmann::json::array({2, 2}));
}

// The store's log read for the holder: the client of its last record when that is an enter.
TEST(RepeatingFault, TheHolderIsTheClientWhoseEnterEndsTheStoresLog) {
    const auto reply = [](std::vector<std::string> records) {
        Value v;
        v.type = Value::Type::array;
        for (auto& r : records) {
            Value e;
            e.type = Value::Type::string;
            e.str = std::move(r);
            v.elements.push_back(std::move(e));
        }
        return v;
    };
    EXPECT_EQ(holder_from(reply({R"({"client":3,"kind":"enter","lease":"c3.1","read":0,"seq":7})"})), 3);
    EXPECT_EQ(holder_from(reply({R"({"client":3,"kind":"exit","lease":"c3.1","seq":9})"})), std::nullopt);
    EXPECT_EQ(holder_from(reply({})), std::nullopt);  // nobody has entered yet
    EXPECT_EQ(holder_from(reply({"not json"})), std::nullopt);
    EXPECT_EQ(store_holder_command().args, (std::vector<std::string>{"LRANGE", StoreKeys{}.log, "-1", "-1"}));
}

TEST(RepeatingFault, EachOccurrenceLastsItsOwnDrawnLength) {
    FaultSpec f = repeating_pause(1000, 0);
    f.until_ms = 20'000;
    f.duration_drawn_ms = Distribution{Distribution::Kind::uniform, 100, 300};
    ScheduleRun r({f}, 3, 7);
    r.advance(100'000);
    std::set<long long> lengths;
    long long started_ns = 0, length_ms = 0;
    for (const auto& j : r.lines) {
        if (j["type"] == "start") {
            started_ns = j["t_ns"].get<long long>();
            length_ms = j["duration_ms"].get<long long>();
            lengths.insert(length_ms);
            EXPECT_GE(length_ms, 100);
            EXPECT_LE(length_ms, 300);
        } else {
            EXPECT_EQ((j["t_ns"].get<long long>() - started_ns) / kMs, length_ms);  // it lasted its draw
        }
    }
    EXPECT_EQ(r.schedule.injected(), 19);
    EXPECT_GT(lengths.size(), 1u);  // drawn, not one length for all
}

// Random targets, exponential intervals and drawn lengths replay exactly from the seed.
TEST(RepeatingFault, TheSameSeedDrawsTheSameNemesisAndAnotherSeedAnother) {
    FaultSpec f = repeating_pause(0, 0);
    f.client.reset();
    f.target = FaultSpec::Target::random;
    f.every_ms = Distribution{Distribution::Kind::exponential, 200, 0};
    f.until_ms = 20'000;
    f.duration_drawn_ms = Distribution{Distribution::Kind::uniform, 10, 150};
    const auto log_of = [&](std::uint64_t seed) {
        ScheduleRun r({f}, 5, seed);
        r.advance(100'000);
        return r.log;
    };
    const Strings a = log_of(3);
    EXPECT_EQ(a, log_of(3));
    EXPECT_NE(a, log_of(4));
    std::set<std::string> struck;
    for (const auto& line : a)
        if (line.starts_with("start")) struck.insert(line.substr(0, line.find(" @")));
    EXPECT_EQ(struck.size(), 5u) << "every one of the five clients is struck at some point";
}

// A blackhole on client 2's path to node 0, every 600 ms until 1300 ms.
FaultSpec repeating_cut() {
    FaultSpec link;
    link.kind = FaultSpec::Kind::link;
    link.link = LinkFault::blackhole();
    link.link_nodes = {0};
    link.client = 2;
    link.every_ms = Distribution{Distribution::Kind::fixed, 600, 0};
    link.until_ms = 1300;
    return link;
}

TEST(RepeatingFault, ARepeatingLinkHealsAndACrashRestartsBetweenOccurrences) {
    FaultSpec link = repeating_cut();
    link.duration_ms = 100;
    FaultSpec crash;
    crash.kind = FaultSpec::Kind::crash;
    crash.node = 1;
    crash.restart_after_ms = 100;
    crash.every_ms = Distribution{Distribution::Kind::fixed, 1000, 0};
    crash.until_ms = 2500;
    ScheduleRun r({link, crash});
    r.advance(10'000);
    EXPECT_EQ(r.world.calls, (Strings{"link c2-n0 blackhole", "link c2-n0 pass", "crash 1", "restart 1",
                                      "link c2-n0 blackhole", "link c2-n0 pass", "crash 1", "restart 1"}));
}

// A repeating link fault whose lengths are drawn ends each occurrence by its own timer; the
// run's end heals what is still in force and writes no end line for an occurrence that ended
// already (a link set for good is one with no length at all).
TEST(RepeatingFault, ARepeatingLinkOfDrawnLengthsEndsEachOccurrenceOnce) {
    FaultSpec link = repeating_cut();
    link.duration_drawn_ms = Distribution{Distribution::Kind::uniform, 50, 100};
    ScheduleRun r({link});
    r.advance(1500);
    r.schedule.heal(1500 * kMs);
    long long starts = 0, ends = 0;
    for (const auto& j : r.lines) {
        starts += j["type"] == "start";
        ends += j["type"] == "end";
    }
    EXPECT_EQ(starts, 2);
    EXPECT_EQ(ends, 2);
    EXPECT_EQ(r.world.calls, (Strings{"link c2-n0 blackhole", "link c2-n0 pass", "link c2-n0 blackhole", "link c2-n0 pass"}));
}

// A gate "until": "leader" holds whichever client reaches its point first (once) until a
// server says it leads, asked every 20 ms; its bound, as another-enters', counts only once a
// crashed node is back, and the report says what it waited for.
TEST(FaultSchedule, AGateUntilALeaderHoldsTheFirstClientUntilAServerLeads) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = kLeaderNode;
    crash.restart_after_ms = 0;
    FaultSpec gate = at_point(FaultSpec::Kind::gate, Point::before_release);
    gate.until_leader = true;
    gate.max_ms = 100;
    ScheduleRun r({crash, gate});
    r.world.restart_takes_asks = 3;  // back 15 ms after the crash
    r.world.leads = false;
    EXPECT_EQ(r.schedule.reach(1, Point::after_acquire, 10 * kMs), FaultSchedule::Answer::disarm);
    EXPECT_EQ(r.schedule.reach(1, Point::before_release, 20 * kMs), FaultSchedule::Answer::held);
    EXPECT_EQ(r.schedule.reach(2, Point::before_release, 21 * kMs), FaultSchedule::Answer::disarm);  // once
    r.advance(110);  // its bound counts from 25 (the node back): 125
    EXPECT_EQ(r.world.calls, (Strings{"resolve leader", "crash 1", "hold 1", "restart 1", "ask 1", "ask 1", "ask 1"}));
    EXPECT_EQ(r.world.leader_questions, 5);  // at 20, 40, 60, 80, 100
    r.world.leads = true;
    r.advance(130);
    EXPECT_EQ(r.world.calls.back(), "let_go 1");
    EXPECT_EQ(r.log.back(), "end gate c1 @120");
    const nlohmann::json report = r.schedule.report()[1];
    EXPECT_EQ(report["until"], "leader");
    EXPECT_EQ(report["max_ms"], 100);
    EXPECT_EQ(report["waits"][0]["bound"], false);
    EXPECT_EQ(report["label"], "gate until a server leads (at most 100 ms) at before_release #1");

    ScheduleRun none({gate});  // no server ever leads: its bound lets it go, and says so
    none.world.leads = false;
    EXPECT_EQ(none.schedule.reach(0, Point::before_release, 0), FaultSchedule::Answer::held);
    none.advance(99);
    EXPECT_EQ(none.world.calls, (Strings{"hold 0"}));
    none.advance(100);
    EXPECT_EQ(none.world.calls, (Strings{"hold 0", "let_go 0"}));
    EXPECT_EQ(none.schedule.report()[0]["waits"][0]["bound"], true);

    ScheduleRun leads({gate});  // a server leads already: let go at once
    EXPECT_EQ(leads.schedule.reach(0, Point::before_release, 0), FaultSchedule::Answer::held);
    leads.advance(0);
    EXPECT_EQ(leads.world.calls, (Strings{"hold 0", "let_go 0"}));
}

// A wait "until another enters" begins to count its bound only once no crashed node is still
// coming back: nobody can enter before, and a restart's length is the machine's, not the lock's.
// Its window (from the moment it counts) is in the report, with whether its bound ended it.
TEST(FaultSchedule, AWaitUntilAnotherEntersCountsItsBoundFromTheRestartedNodeBeingBack) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 0;
    crash.restart_after_ms = 0;
    ScheduleRun r({crash, gate_until_another_enters(25)});
    r.world.restart_takes_asks = 3;  // back at the third ask, 15 ms after the crash
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 100 * kMs), FaultSchedule::Answer::held);
    r.advance(139);
    EXPECT_EQ(r.world.calls, (Strings{"crash 0", "hold 0", "restart 0", "ask 0", "ask 0", "ask 0"}));
    r.advance(140);  // 115 + 25: the bound, counted from the node being back
    EXPECT_EQ(r.world.calls.back(), "let_go 0");
    EXPECT_EQ(r.log, (Strings{"start crash c0 @100", "start gate c0 @100", "end crash c0 @115", "end gate c0 @140"}));
    const nlohmann::json wait = r.schedule.report()[1]["waits"][0];
    EXPECT_EQ(wait["from_ns"], 115 * kMs);
    EXPECT_EQ(wait["to_ns"], 140 * kMs);
    EXPECT_EQ(wait["bound"], true);
    EXPECT_TRUE(r.schedule.unmet().empty());

    ScheduleRun entered({crash, gate_until_another_enters(25)});  // another enters: not the bound
    entered.schedule.reach(0, Point::after_acquire, 100 * kMs);
    entered.advance(110);
    entered.world.store_log.push_back(R"({"kind":"enter","client":1})");
    entered.advance(112);
    EXPECT_EQ(entered.schedule.report()[1]["waits"][0]["bound"], false);

    // Another enters before the restart is reported done (the node answered first): the story
    // happened, nothing unmet.
    ScheduleRun early({crash, gate_until_another_enters(25)});
    early.world.restart_takes_asks = 1000;
    early.schedule.reach(0, Point::after_acquire, 100 * kMs);
    early.advance(150);
    early.world.store_log.push_back(R"({"kind":"enter","client":2})");
    early.advance(152);
    EXPECT_EQ(early.world.calls.back(), "let_go 0");
    EXPECT_TRUE(early.schedule.unmet().empty());
    EXPECT_EQ(early.schedule.report()[1]["waits"][0]["bound"], false);
}

// A node that answers lockbench is not yet back for the clients: their libraries reconnect on
// their own schedule (node-redlock 5's ioredis, under load, more than a second after the node
// answered). The bound counts from a client's first question to it; a node nobody asks before
// the run ends leaves the wait uncounted, and the repetition not as written.
TEST(FaultSchedule, AWaitCountsItsBoundFromAClientAskingTheRestartedNode) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 0;
    crash.restart_after_ms = 0;
    ScheduleRun r({crash, gate_until_another_enters(25)});
    r.world.asked = false;
    EXPECT_EQ(r.schedule.reach(0, Point::after_acquire, 100 * kMs), FaultSchedule::Answer::held);
    r.advance(200);  // back at once, but nobody asks it: the bound has not begun
    EXPECT_EQ(r.world.calls.back(), "restart 0");
    EXPECT_EQ(r.world.asked_questions, 21);  // at 100 and every 5 ms
    r.world.asked = true;  // asked between 200 and 205
    r.advance(229);
    EXPECT_NE(r.world.calls.back(), "let_go 0");
    r.advance(230);  // 205 + 25
    EXPECT_EQ(r.world.calls.back(), "let_go 0");
    EXPECT_EQ(r.schedule.report()[1]["waits"][0]["from_ns"], 205 * kMs);
    EXPECT_TRUE(r.schedule.unmet().empty());

    ScheduleRun never({crash, gate_until_another_enters(25)});
    never.world.asked = false;
    never.schedule.reach(0, Point::after_acquire, 100 * kMs);
    never.advance(400);
    EXPECT_EQ(never.world.calls.back(), "restart 0");
    never.schedule.heal(400 * kMs);
    ASSERT_EQ(never.schedule.unmet().size(), 1u);
    EXPECT_NE(never.schedule.unmet()[0].find("still coming back"), std::string::npos);
}

// What did not happen as written, outside the lock: a node still coming back when the run
// ended (so the wait never counted), a restart that failed, a start whose client never got
// to its point; none of them when the story happened.
TEST(FaultSchedule, WhatDidNotHappenAsWrittenIsNamed) {
    FaultSpec crash = at_point(FaultSpec::Kind::crash, Point::after_acquire);
    crash.node = 0;
    crash.restart_after_ms = 0;
    ScheduleRun slow({crash, gate_until_another_enters(25)});
    slow.world.restart_takes_asks = 1000;
    slow.schedule.reach(0, Point::after_acquire, 100 * kMs);
    slow.advance(300);
    EXPECT_EQ(slow.world.calls.back(), "ask 0");  // still held: the bound has not begun
    slow.schedule.heal(300 * kMs);
    ASSERT_EQ(slow.schedule.unmet().size(), 1u);
    EXPECT_NE(slow.schedule.unmet()[0].find("still coming back"), std::string::npos);

    ScheduleRun failed({crash});
    failed.world.restart_works = false;
    failed.schedule.reach(0, Point::after_acquire, 100 * kMs);
    failed.advance(200);
    ASSERT_EQ(failed.schedule.unmet().size(), 1u);
    EXPECT_NE(failed.schedule.unmet()[0].find("did not come back"), std::string::npos);

    ScheduleRun late({}, 3, 0, StartAfter{0, Point::after_acquire, 500});
    late.schedule.reach(1, Point::before_acquire, 0);
    late.advance(500);
    ASSERT_EQ(late.schedule.unmet().size(), 1u);
    EXPECT_EQ(late.schedule.unmet()[0], "client 0 did not reach after_acquire within 500 ms of the start (start_after)");

    ScheduleRun on_time({}, 3, 0, StartAfter{0, Point::after_acquire, 500});
    on_time.schedule.reach(1, Point::before_acquire, 0);
    on_time.schedule.reach(0, Point::after_acquire, 20 * kMs);
    on_time.advance(600);
    EXPECT_TRUE(on_time.schedule.unmet().empty());
}

}  // namespace
// Which runs may take servers kept across repetitions (sim/live/server_pool.h): those none of
// whose faults reaches a server. Each kind, aimed at a server and at a client or its links.
TEST(FaultSchedule, AFaultReachesTheServersWhenItPausesCrashesSkewsStallsOrCutsThem) {
    const auto reaches = [](FaultSpec f) { return reaches_servers(world_needs({f})); };
    FaultSpec node_pause = at_time(FaultSpec::Kind::pause, 100);
    node_pause.node = 0;
    FaultSpec node_clock = at_time(FaultSpec::Kind::clock, 100);
    node_clock.node = 1;
    FaultSpec peers = at_time(FaultSpec::Kind::link, 100);
    peers.link_peers = true;
    EXPECT_TRUE(reaches(node_pause));
    EXPECT_TRUE(reaches(at_time(FaultSpec::Kind::crash, 100)));
    EXPECT_TRUE(reaches(node_clock));
    EXPECT_TRUE(reaches(at_time(FaultSpec::Kind::disk_stall, 100)));
    EXPECT_TRUE(reaches(peers));
    FaultSpec client_link = at_time(FaultSpec::Kind::link, 100);
    client_link.link_nodes = {0};
    EXPECT_FALSE(reaches(at_time(FaultSpec::Kind::pause, 100)));
    EXPECT_FALSE(reaches(at_time(FaultSpec::Kind::clock, 100)));
    EXPECT_FALSE(reaches(at_time(FaultSpec::Kind::kill, 100)));
    EXPECT_FALSE(reaches(client_link));
    EXPECT_FALSE(reaches(at_point(FaultSpec::Kind::gate, Point::after_acquire)));
}

}  // namespace lockbench
