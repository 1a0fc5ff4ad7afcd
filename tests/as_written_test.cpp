// as_written.h: which runs are evidence. Hand-written records and histories, each with a known
// answer: a precondition missed, a wait's bound with and without others trying, a lease the
// story needs live, an adapter that never started.
#include "sim/engine/as_written.h"

#include <gtest/gtest.h>

namespace lockbench {
namespace {

constexpr long long kMs = 1'000'000;

ClientEvent event(long long t_ms, int client, OpKind op, EventType type = EventType::invoke) {
    ClientEvent e;
    e.t_ns = t_ms * kMs;
    e.client = client;
    e.op = op;
    e.type = type;
    return e;
}

RunRecord record_with_wait(bool bound, bool lease_live, long long from_ms, long long to_ms) {
    RunRecord r;
    r.params = {{"ttl_ms", 100}};
    nlohmann::json fault = {{"label", "gate at after_acquire #1"},
                            {"waits", {{{"client", 0}, {"from_ns", from_ms * kMs}, {"to_ns", to_ms * kMs}, {"bound", bound}}}}};
    if (lease_live) fault["lease_live"] = true;
    r.faults = nlohmann::json::array({fault});
    return r;
}

TEST(AsWritten, AStoryThatHappenedHasNothingToSay) {
    RunRecord r = record_with_wait(false, true, 10, 40);
    r.expect = {{"faults_injected", "==", 1, std::nullopt}};
    r.faults_injected = 1;
    RunHistory h;
    h.events = {event(0, 0, OpKind::acquire), event(30, 1, OpKind::read)};
    EXPECT_TRUE(not_as_written(r, h, {}).empty());
}

TEST(AsWritten, AFaultThatDidNotFireIsAPreconditionMissed) {
    RunRecord r;
    r.expect = {{"faults_injected", "==", 3, std::nullopt}, {"mutual_exclusion_violations", ">=", 1, std::nullopt}};
    r.faults_injected = 2;
    EXPECT_TRUE(is_precondition(r.expect[0]));
    EXPECT_FALSE(is_precondition(r.expect[1]));
    EXPECT_EQ(not_as_written(r, {}, {}), std::vector<std::string>{"its faults did not all fire: faults_injected == 3 (got 2)"});
}

// Its bound reached while another client tried is an outcome (nobody could enter); with
// nobody trying, the story did not happen.
TEST(AsWritten, ABoundReachedCountsOnlyWhenAnotherClientTriedMeanwhile) {
    const RunRecord r = record_with_wait(true, false, 10, 40);
    RunHistory tried;
    tried.events = {event(0, 0, OpKind::acquire), event(25, 2, OpKind::acquire)};
    EXPECT_TRUE(not_as_written(r, tried, {}).empty());
    RunHistory nobody;  // client 2's attempt answered before the window, client 1's began after it
    nobody.events = {event(0, 0, OpKind::acquire), event(5, 2, OpKind::acquire), event(8, 2, OpKind::acquire, EventType::fail),
                     event(50, 1, OpKind::acquire)};
    const auto why = not_as_written(r, nobody, {});
    ASSERT_EQ(why.size(), 1u);
    EXPECT_NE(why[0].find("no other client trying"), std::string::npos);
}

// An attempt invoked before the wait and still inside the lock throughout it (etcd's Lock
// waiting behind client 0's key) is trying, answered during the wait or after it or never.
TEST(AsWritten, AnAttemptInFlightThroughTheWaitIsTrying) {
    const RunRecord r = record_with_wait(true, false, 10, 40);
    for (const long long answered_ms : {20LL, 60LL, -1LL}) {
        RunHistory waiting;
        waiting.events = {event(0, 0, OpKind::acquire), event(5, 2, OpKind::acquire)};
        if (answered_ms > 0) waiting.events.push_back(event(answered_ms, 2, OpKind::acquire, EventType::ok));
        EXPECT_TRUE(not_as_written(r, waiting, {}).empty()) << "answered at " << answered_ms;
    }
}

// A gate until a leader that its bound let go is never an outcome, whoever tried meanwhile:
// the service had no leader, so the case did not happen.
TEST(AsWritten, AGateUntilALeaderLetGoByItsBoundIsNotTheStory) {
    RunRecord r = record_with_wait(true, false, 10, 40);
    r.faults[0]["until"] = "leader";
    r.faults[0]["max_ms"] = 30;
    RunHistory tried;
    tried.events = {event(0, 0, OpKind::acquire), event(25, 2, OpKind::acquire)};
    EXPECT_EQ(not_as_written(r, tried, {}), std::vector<std::string>{"gate at after_acquire #1: no server led within 30 ms"});
    r.faults[0]["waits"][0]["bound"] = false;
    EXPECT_TRUE(not_as_written(r, tried, {}).empty());
}

// lease_live: another client entering after the held client's TTL (from its acquire's invoke)
// tells a lease that ran out, not the story.
TEST(AsWritten, ALeaseTheStoryNeedsLiveMustNotHaveEndedWhenAnotherEnters) {
    const RunRecord r = record_with_wait(false, true, 10, 140);
    RunHistory late;
    late.events = {event(0, 0, OpKind::acquire), event(130, 1, OpKind::read)};
    const auto why = not_as_written(r, late, {});
    ASSERT_EQ(why.size(), 1u);
    EXPECT_NE(why[0].find("130 ms after client 0 asked for its lease of 100 ms"), std::string::npos);
    RunHistory in_time;
    in_time.events = {event(0, 0, OpKind::acquire), event(90, 1, OpKind::read)};
    EXPECT_TRUE(not_as_written(r, in_time, {}).empty());
    EXPECT_TRUE(not_as_written(record_with_wait(false, false, 10, 140), late, {}).empty());  // not asked for
}

// taken_first: another client granted the lock within the TTL of the held client's asking
// (its last acquire invoked by the time the wait began), while the held acquire was not granted,
// shows the held answer was not the taking request's; granted after the TTL, or before the
// held client asked, it is the story, and so is a held acquire granted too (a lock that let
// the other in meanwhile does not exclude: two holders, an outcome).
TEST(AsWritten, AGrantWithinTheHeldClientsTtlShowsItsHeldRequestDidNotTakeTheLock) {
    RunRecord r = record_with_wait(false, false, 20, 240);
    r.faults[0]["taken_first"] = true;
    RunHistory early;  // client 0's next acquire, after its held one failed, is not the held one
    early.events = {event(12, 0, OpKind::acquire), event(30, 1, OpKind::acquire), event(35, 1, OpKind::acquire, EventType::ok),
                    event(230, 0, OpKind::acquire, EventType::fail), event(235, 0, OpKind::acquire)};
    const auto why = not_as_written(r, early, {});
    ASSERT_EQ(why.size(), 1u);
    EXPECT_NE(why[0].find("client 1 was granted the lock 23 ms after client 0 asked for it, within its TTL of 100 ms, "
                          "and client 0 was not"),
              std::string::npos) << why[0];
    RunHistory both = early;  // the held acquire granted too: the lock let client 1 in, an outcome
    both.events[3].type = EventType::ok;
    EXPECT_TRUE(not_as_written(r, both, {}).empty());
    RunHistory after_ttl;
    after_ttl.events = {event(0, 1, OpKind::acquire), event(2, 1, OpKind::acquire, EventType::ok), event(5, 0, OpKind::acquire),
                        event(110, 2, OpKind::acquire), event(120, 2, OpKind::acquire, EventType::ok)};
    EXPECT_TRUE(not_as_written(r, after_ttl, {}).empty());
    EXPECT_TRUE(not_as_written(record_with_wait(false, false, 10, 240), early, {}).empty());  // not asked for
}

// keep_holder_ms: a holder let go by the keep's bound or the run's end, before the kept-for
// client had entered, failed or queued behind it, leaves its late answer meeting nobody: not the story. The
// kept-for client entering or failing is an outcome.
TEST(AsWritten, AHolderLetGoBeforeTheKeptForClientAnsweredIsNotTheStory) {
    const auto kept = [](const std::string& ended) {
        RunRecord r;
        r.faults = nlohmann::json::array({{{"label", "link hold until another enters"},
                                           {"kept", {{{"holder", 2}, {"client", 0}, {"from_ns", 10 * kMs},
                                                      {"to_ns", 60 * kMs}, {"ended", ended}, {"keep_ms", 50}}}}}});
        return r;
    };
    EXPECT_TRUE(not_as_written(kept("entered"), {}, {}).empty());
    EXPECT_TRUE(not_as_written(kept("failed"), {}, {}).empty());
    EXPECT_TRUE(not_as_written(kept("in line"), {}, {}).empty());  // it waits behind the holder: an outcome
    EXPECT_EQ(not_as_written(kept("bound"), {}, {}),
              std::vector<std::string>{"link hold until another enters: client 2 was let go after 50 ms before client 0 "
                                       "had entered, failed or queued behind it"});
    EXPECT_EQ(not_as_written(kept("run ended"), {}, {}).size(), 1u);
    EXPECT_EQ(not_as_written(kept("holder gone"), {}, {}).size(), 1u);
    EXPECT_EQ(not_as_written(kept("nobody inside"), {}, {}).size(), 1u);
    EXPECT_TRUE(not_as_written(kept("client gone"), {}, {}).empty());  // its adapter's failure says it
}

// Kept after a fault's end (a disk stall's, no "until"): the same, for every other client
// rather than the fault's; and a watch that kept nobody is the story only when every
// acquire answered with none entering.
TEST(AsWritten, KeptAfterTheFaultsEndNobodyKeptIsTheStoryOnlyWhenEveryAcquireAnswered) {
    const auto kept = [](nlohmann::json record) {
        RunRecord r;
        record["from_ns"] = 10 * kMs;
        record["to_ns"] = 60 * kMs;
        record["keep_ms"] = 50;
        r.faults = nlohmann::json::array({{{"label", "disk-stall"}, {"kept", {record}}}});
        return not_as_written(r, {}, {});
    };
    EXPECT_TRUE(kept({{"ended", "none entered"}}).empty());
    EXPECT_EQ(kept({{"ended", "bound"}}),
              std::vector<std::string>{"disk-stall: nobody was kept, and not every acquire in flight at its end had answered, "
                                       "within 50 ms of its end"});
    EXPECT_EQ(kept({{"ended", "run ended"}}).size(), 1u);
    EXPECT_TRUE(kept({{"holder", 1}, {"client", 0}, {"for", "others"}, {"ended", "entered"}}).empty());
    EXPECT_EQ(kept({{"holder", 1}, {"for", "others"}, {"ended", "bound"}}),
              std::vector<std::string>{"disk-stall: client 1 was let go after 50 ms before another client had entered or "
                                       "every other acquire had answered"});
    EXPECT_TRUE(kept({{"holder", 1}, {"for", "others"}, {"ended", "failed"}}).empty());
    EXPECT_EQ(kept({{"holder", 1}, {"for", "others"}, {"ended", "holder gone"}}).size(), 1u);
}

// A kept-for client that answered after the kept holder's lease had ended (its acquire's
// answer plus its probed PTTL, else the run's TTL) met no lock held: not the story. A lease
// with no expiry (a znode: the probe found no PTTL) does not end while its holder is kept.
TEST(AsWritten, AKeptHoldersLeaseMustStillBeLiveWhenTheKeptForClientAnswers) {
    const auto kept = [](const std::string& ended, long long to_ms) {
        RunRecord r;
        r.params = {{"ttl_ms", 100}};
        r.faults = nlohmann::json::array({{{"label", "link hold"},
                                           {"kept", {{{"holder", 2}, {"client", 0}, {"from_ns", 10 * kMs},
                                                      {"to_ns", to_ms * kMs}, {"ended", ended}, {"keep_ms", 500}}}}}});
        return r;
    };
    RunHistory h;
    h.events = {event(0, 0, OpKind::acquire), event(4, 2, OpKind::acquire), event(5, 2, OpKind::acquire, EventType::ok)};
    for (const std::string ended : {"entered", "failed", "in line"}) {
        EXPECT_TRUE(not_as_written(kept(ended, 100), h, {}).empty()) << ended;  // within 5 + 100 ms
        const auto why = not_as_written(kept(ended, 150), h, {});
        ASSERT_EQ(why.size(), 1u) << ended;
        EXPECT_NE(why[0].find("45 ms after client 2's lease had ended"), std::string::npos) << why[0];
    }
    RunHistory probed = h;
    probed.events.back().key_ttl_ms = {30};  // its key had 30 ms left: ended at 35 ms
    EXPECT_EQ(not_as_written(kept("in line", 60), probed, {}).size(), 1u);
    RunHistory unread = h;  // not found by its token (warlock's value is not its token): the TTL
    unread.events.back().key_ttl_ms = {-2};
    EXPECT_TRUE(not_as_written(kept("entered", 100), unread, {}).empty());
    EXPECT_EQ(not_as_written(kept("entered", 150), unread, {}).size(), 1u);
    RunHistory session = h;
    session.events.back().key_ttl_ms = {std::nullopt};  // no PTTL: a znode, kept alive by its session
    EXPECT_TRUE(not_as_written(kept("in line", 900), session, {}).empty());
}

// A fault that lasted past its max_ms by more than a tenth of it (at least 50 ms), or a holder
// kept past its keep_holder_ms so, was the stalled nemesis's, not the case's.
TEST(AsWritten, AFaultTheNemesisEndedLatePastItsBoundIsNotTheStory) {
    const auto waited = [](long long late_ms) {
        RunRecord r;
        r.faults = nlohmann::json::array({{{"label", "link hold"}, {"max_ms", 2600},
                                           {"waits", {{{"client", 0}, {"from_ns", 0}, {"to_ns", 10 * kMs}, {"bound", false},
                                                       {"late_ns", late_ms * kMs}}}}}});
        return r;
    };
    EXPECT_TRUE(not_as_written(waited(0), {}, {}).empty());
    EXPECT_TRUE(not_as_written(waited(260), {}, {}).empty());
    EXPECT_EQ(not_as_written(waited(1022), {}, {}),
              std::vector<std::string>{"link hold: it lasted 1022 ms past its 2600 ms at most (the nemesis ran late: a stalled machine)"});
    RunRecord kept;
    kept.faults = nlohmann::json::array({{{"label", "link hold"},
                                          {"kept", {{{"holder", 2}, {"client", 0}, {"ended", "entered"}, {"keep_ms", 100},
                                                     {"late_ns", 51 * kMs}}}}}});
    EXPECT_EQ(not_as_written(kept, {}, {}).size(), 1u);
    kept.faults[0]["kept"][0]["late_ns"] = 50 * kMs;  // a short keep: 50 ms still on time
    EXPECT_TRUE(not_as_written(kept, {}, {}).empty());
}

TEST(AsWritten, AnAdapterThatFailedBeforeItsFirstOperationNeverStarted) {
    RunHistory h;
    h.events = {event(0, 0, OpKind::acquire)};
    const std::vector<ClientFailure> failed{{0, "broke mid-run"}, {1, "no ready line within 10000 ms"}};
    EXPECT_EQ(not_as_written({}, h, failed),
              std::vector<std::string>{"client 1's adapter did not start: no ready line within 10000 ms"});
}

}  // namespace
}  // namespace lockbench
