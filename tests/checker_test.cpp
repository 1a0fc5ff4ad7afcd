// The checker on tiny hand-written histories with known verdicts (porcupine style); the
// run-folder reader is tested in history_io_test.cpp. Times are exact integers, so durations are
// compared exactly: nothing here measures a clock.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/metrics.h"
#include "analysis/stats.h"
#include "tests/history_gen.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;
using histgen::HistoryBuilder;
using K = StoreKind;
using Op = OpKind;
using T = EventType;

constexpr long long kMs = 1'000'000;  // ns

// One section in the store: enter, write, exit, with the counter it read.
void section(HistoryBuilder& b, int client, const std::string& lease, long long counter) {
    b.add_store(K::enter, client, lease, std::nullopt, counter)
        .add_store(K::write, client, lease, std::nullopt, counter, counter)
        .add_store(K::exit, client, lease);
}

// ---- the store's order: overlaps, fences, lost updates ---------------------------------

TEST(CheckerStore, SectionsOneAfterAnotherAreClean) {
    HistoryBuilder b;
    section(b, 0, "c0.1", 0);
    section(b, 1, "c1.1", 1);
    section(b, 0, "c0.2", 2);
    const CheckResult r = check(b.final_counter(3).build());
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 0);
    EXPECT_EQ(r.safety.fenced_overlaps, 0);
    EXPECT_EQ(r.safety.lost_updates, 0);
    EXPECT_EQ(r.safety.stale_writes_accepted, 0);
    EXPECT_EQ(r.safety.stale_writes_rejected, 0);
    EXPECT_EQ(r.ops.sections_completed, 3);
    EXPECT_TRUE(r.witnesses.empty());
}

TEST(CheckerStore, EnterInsideAnotherSectionIsOneViolationWithWitness) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "c0.1", std::nullopt, 0)    // seq 1
        .add_store(K::write, 0, "c0.1", std::nullopt, 0, 0)  // 2
        .add_store(K::enter, 1, "c1.1", std::nullopt, 1)     // 3: A is still inside
        .add_store(K::exit, 0, "c0.1")                       // 4
        .add_store(K::write, 1, "c1.1", std::nullopt, 1, 1)  // 5
        .add_store(K::exit, 1, "c1.1");                      // 6
    const int a = b.lease("c0.1", 0), bl = b.lease("c1.1", 1);
    const RunHistory h = b.final_counter(2).build();
    const CheckResult r = check(h);

    EXPECT_EQ(r.safety.mutual_exclusion_violations, 1);
    EXPECT_EQ(r.safety.fenced_overlaps, 0);
    EXPECT_EQ(r.safety.stale_writes_accepted, 0);  // A wrote before B entered
    EXPECT_EQ(r.safety.lost_updates, 0);
    ASSERT_EQ(r.witnesses.size(), 1u);
    const Witness& w = r.witnesses[0];
    EXPECT_EQ(w.kind, Witness::Kind::mutual_exclusion);
    EXPECT_EQ(w.first.lease, a);
    EXPECT_EQ(w.first.client, 0);
    EXPECT_EQ(w.first.enter_seq, 1);
    EXPECT_EQ(w.first.exit_seq, 4);
    EXPECT_EQ(w.second.lease, bl);
    EXPECT_EQ(w.second.client, 1);
    EXPECT_EQ(w.second.enter_seq, 3);
    EXPECT_EQ(w.second.exit_seq, 6);

    const nlohmann::json j = to_json(r, h);
    EXPECT_EQ(j["witnesses"][0]["kind"].get<std::string>(), "mutual_exclusion");
    EXPECT_EQ(j["witnesses"][0]["first"]["lease"].get<std::string>(), "c0.1");
    EXPECT_EQ(j["witnesses"][0]["second"]["lease"].get<std::string>(), "c1.1");
}

TEST(CheckerStore, ThreeNestedSectionsAreThreePairs) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a").add_store(K::enter, 1, "b").add_store(K::enter, 2, "c");
    b.add_store(K::exit, 2, "c").add_store(K::exit, 1, "b").add_store(K::exit, 0, "a");
    const CheckResult r = check(b.build());
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 3);  // (a,b), (a,c), (b,c)
    EXPECT_EQ(r.witnesses.size(), 3u);
}

TEST(CheckerStore, ChainedSectionsCountOnlyPairsThatOverlap) {
    HistoryBuilder b;
    const int a = b.lease("a", 0), bl = b.lease("b", 1), c = b.lease("c", 2);
    b.add_store(K::enter, 0, "a").add_store(K::enter, 1, "b").add_store(K::exit, 0, "a");
    b.add_store(K::enter, 2, "c").add_store(K::exit, 1, "b").add_store(K::exit, 2, "c");
    const CheckResult r = check(b.build());
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 2);  // (a,b), (b,c); a and c never met
    ASSERT_EQ(r.witnesses.size(), 2u);
    EXPECT_EQ(r.witnesses[0].first.lease, a);
    EXPECT_EQ(r.witnesses[0].second.lease, bl);
    EXPECT_EQ(r.witnesses[1].first.lease, bl);
    EXPECT_EQ(r.witnesses[1].second.lease, c);
}

TEST(CheckerStore, WitnessesAreCappedButCountsAreNot) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a").add_store(K::enter, 1, "b").add_store(K::enter, 2, "c");
    b.add_store(K::write, 0, "a", std::nullopt, 0, 0).add_store(K::write, 1, "b", std::nullopt, 0, 1);
    const CheckResult r = check(b.build(), CheckOptions{.max_witnesses = 1});
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 3);
    EXPECT_EQ(std::ranges::count(r.witnesses, Witness::Kind::mutual_exclusion, &Witness::kind), 1);
}

TEST(CheckerStore, ManyStaleWritesDoNotCrowdOutTheViolationWitness) {
    HistoryBuilder b;
    // A enters; B enters inside A (a violation); then A and B write after C entered: two
    // stale writes, recorded before the violation is classified.
    b.add_store(K::enter, 0, "a").add_store(K::enter, 1, "b").add_store(K::exit, 1, "b");
    b.add_store(K::enter, 2, "c").add_store(K::write, 0, "a", std::nullopt, 0, 0).add_store(K::exit, 0, "a");
    b.add_store(K::write, 1, "b", std::nullopt, 0, 1).add_store(K::exit, 2, "c");
    const CheckResult r = check(b.final_counter(1).build(), CheckOptions{.max_witnesses = 1});
    EXPECT_GE(r.safety.stale_writes_accepted, 2);
    EXPECT_GE(r.safety.mutual_exclusion_violations, 1);
    const auto kinds = [&](Witness::Kind k) { return std::ranges::count(r.witnesses, k, &Witness::kind); };
    EXPECT_EQ(kinds(Witness::Kind::stale_write), 1);
    EXPECT_EQ(kinds(Witness::Kind::mutual_exclusion), 1);
}

TEST(CheckerStore, AStaleHolderEnteringLateDoesNotMakeTheNewHoldersWriteStale) {
    HistoryBuilder b;
    b.add_store(K::enter, 1, "b", 6, 0)          // B, the new holder (fence 6), is inside
        .add_store(K::enter, 0, "a", 5, 0)       // A, paused past its lease (fence 5), enters
        .add_store(K::write, 1, "b", 6, 0, 0)    // B's write is fine
        .add_store(K::exit, 1, "b")
        .add_store(K::reject, 0, "a", 5, 0, 1)   // A's is refused by the fence
        .add_store(K::exit, 0, "a");
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.safety.stale_writes_accepted, 0);
    EXPECT_EQ(r.safety.stale_writes_rejected, 1);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 0);
    EXPECT_EQ(r.safety.fenced_overlaps, 1);
}

TEST(CheckerStore, AFencedWriteBelowTheHighestSeenIsStaleEvenIfTheStoreTookIt) {
    HistoryBuilder b;  // a store whose fence failed: the checker must say so
    b.add_store(K::enter, 0, "a", 5, 0).add_store(K::exit, 0, "a");
    b.add_store(K::enter, 1, "b", 6, 0).add_store(K::write, 1, "b", 6, 0, 0).add_store(K::exit, 1, "b");
    b.add_store(K::write, 0, "a", 5, 0, 1);
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.safety.stale_writes_accepted, 1);
}

TEST(CheckerStore, ASectionLeftOpenIsClosedByItsClientsNextEnter) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "c0.1", std::nullopt, 0);  // its reply was lost: no exit
    section(b, 0, "c0.2", 0);
    section(b, 1, "c1.1", 1);
    EXPECT_EQ(check(b.final_counter(2).build()).safety.mutual_exclusion_violations, 0);
}

TEST(CheckerStore, ASectionWhoseClientDiedInsideOverlapsNothing) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "c0.1", std::nullopt, 0);  // no write, no exit, ever
    section(b, 1, "c1.1", 0);
    section(b, 2, "c2.1", 1);
    EXPECT_EQ(check(b.final_counter(2).build()).safety.mutual_exclusion_violations, 0);
}

// The same two sections in both orders: a section whose end the store never saw (no write,
// no exit) is inside at its enter only. Entering inside another's section is an overlap;
// another's enter after it is not, however long it stays "open".
TEST(CheckerStore, ASectionWithNoEndCountsWhereItEnteredInEitherOrder) {
    HistoryBuilder dead_first;
    dead_first.add_store(K::enter, 0, "c0.1", std::nullopt, 0);  // its client dies inside
    section(dead_first, 1, "c1.1", 0);
    const CheckResult r1 = check(dead_first.final_counter(1).build());
    EXPECT_EQ(r1.safety.mutual_exclusion_violations, 0);

    HistoryBuilder dead_second;
    const int holder = dead_second.lease("c1.1", 1), dead = dead_second.lease("c0.1", 0);
    dead_second.add_store(K::enter, 1, "c1.1", std::nullopt, 0)
        .add_store(K::enter, 0, "c0.1", std::nullopt, 0)  // enters while c1.1 is inside, then dies
        .add_store(K::write, 1, "c1.1", std::nullopt, 0, 0)
        .add_store(K::exit, 1, "c1.1");
    const CheckResult r2 = check(dead_second.final_counter(1).build());
    EXPECT_EQ(r2.safety.mutual_exclusion_violations, 1);
    const auto w = std::ranges::find(r2.witnesses, Witness::Kind::mutual_exclusion, &Witness::kind);
    ASSERT_NE(w, r2.witnesses.end());
    EXPECT_EQ(w->first.lease, holder);
    EXPECT_EQ(w->second.lease, dead);
    EXPECT_FALSE(w->second.exit_seq.has_value());
}

// The worker abandons a section whose write's reply was lost: a second exit, after the real
// one. The section ended at the first.
TEST(CheckerStore, AWitnessShowsTheSectionsFirstExit) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a", std::nullopt, 0)           // 1
        .add_store(K::enter, 1, "b", std::nullopt, 0)        // 2: inside a
        .add_store(K::write, 0, "a", std::nullopt, 0, 0)     // 3
        .add_store(K::exit, 0, "a")                          // 4: a's section ends here
        .add_store(K::exit, 0, "a")                          // 5: its abandon, after a lost reply
        .add_store(K::write, 1, "b", std::nullopt, 0, 1)     // 6
        .add_store(K::exit, 1, "b");                         // 7
    const CheckResult r = check(b.final_counter(1).build());
    const auto w = std::ranges::find(r.witnesses, Witness::Kind::mutual_exclusion, &Witness::kind);
    ASSERT_NE(w, r.witnesses.end());
    EXPECT_EQ(w->first.exit_seq, 4);
}

// A holder that abandons its section (its lease lost, with `abandon`) only read: the overlap
// counts, and the witness says which side never wrote.
TEST(CheckerStore, AnAbandonedSectionStillOverlapsAndItsWitnessSaysItOnlyRead) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a", std::nullopt, 0)           // 1
        .add_store(K::enter, 1, "b", std::nullopt, 0)        // 2: inside a
        .add_store(K::exit, 0, "a")                          // 3: a abandons, no write
        .add_store(K::write, 1, "b", std::nullopt, 0, 0)     // 4
        .add_store(K::exit, 1, "b");                         // 5
    const RunHistory h = b.final_counter(1).build();
    const CheckResult r = check(h);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 1);
    const auto w = std::ranges::find(r.witnesses, Witness::Kind::mutual_exclusion, &Witness::kind);
    ASSERT_NE(w, r.witnesses.end());
    EXPECT_TRUE(w->first.read_only);
    EXPECT_FALSE(w->second.read_only);
    const nlohmann::json j = to_json(r, h);
    EXPECT_EQ(j["witnesses"][0]["first"].value("wrote", true), false);
    EXPECT_FALSE(j["witnesses"][0]["second"].contains("wrote"));
}

// Two leases with one fencing token: once the store has seen both, a write under that
// token is stale whichever of the two entered first. Then c2.1 enters with an older token
// (it was paused), so "another lease entered later" does not decide it.
TEST(CheckerStore, EqualFencesFromTwoLeasesAreStaleWhicheverEnteredFirst) {
    for (const bool writer_first : {true, false}) {
        SCOPED_TRACE(writer_first ? "the writer entered first" : "the writer entered second");
        HistoryBuilder b;
        const std::string first = writer_first ? "c0.1" : "c1.1", second = writer_first ? "c1.1" : "c0.1";
        b.add_store(K::enter, first == "c0.1" ? 0 : 1, first, 5, 0)
            .add_store(K::enter, second == "c0.1" ? 0 : 1, second, 5, 0)
            .add_store(K::exit, 1, "c1.1")                   // c1.1 gives up
            .add_store(K::enter, 2, "c2.1", 3, 0)
            .add_store(K::exit, 2, "c2.1")
            .add_store(K::write, 0, "c0.1", 5, 0, 0)         // the store took it
            .add_store(K::exit, 0, "c0.1");
        const CheckResult r = check(b.final_counter(1).build());
        EXPECT_EQ(r.safety.stale_writes_accepted, 1);
    }
}

TEST(CheckerStore, OverlapWhoseWriteTheFenceRejectedIsFencedNotViolation) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a", 1, 0)      // A holds token 1
        .add_store(K::enter, 1, "b", 2, 0)   // B enters with token 2 while A is inside
        .add_store(K::write, 1, "b", 2, 0, 0)
        .add_store(K::exit, 1, "b", 2)
        .add_store(K::reject, 0, "a", 1, 0, 1)  // A's stale token is refused
        .add_store(K::exit, 0, "a", 1);
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.safety.fenced_overlaps, 1);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 0);
    EXPECT_EQ(r.safety.stale_writes_rejected, 1);
    EXPECT_EQ(r.safety.stale_writes_accepted, 0);
    EXPECT_EQ(r.safety.lost_updates, 0);
    EXPECT_EQ(r.ops.sections_completed, 1);
    EXPECT_TRUE(r.witnesses.empty());
}

// simple-redis-mutex+fence's held-replies: B holds the lock and took token 5; A's SET landed
// first but its reply came late, so A took token 6 after B and entered with it. B's write is
// refused. The store's order alone makes A the newer holder; only the lock server, asked
// right after the refusal, says B still held the lock: the holder's write was refused.
RunHistory holder_refused(std::optional<bool> lock_says_held) {
    HistoryBuilder b;
    b.add_store(K::enter, 1, "b", 5, 0)
        .add_store(K::enter, 0, "a", 6, 0)
        .add_store(K::write, 0, "a", 6, 0, 0)
        .add_store(K::exit, 0, "a", 6)
        .add_store(K::reject, 1, "b", 5, 0, 6)
        .add_store(K::exit, 1, "b", 5)
        .add_event(1, 1 * kMs, Op::write, T::invoke, "b")
        .add_event(1, 2 * kMs, Op::write, T::fail, "b");
    RunHistory h = b.final_counter(1).build();
    h.events.back().lock_says_held = lock_says_held;
    return h;
}

TEST(CheckerStore, ARefusedWriteTheLockServerSaysIsTheHoldersIsCountedApart) {
    const CheckResult r = check(holder_refused(true));
    EXPECT_EQ(r.safety.holder_writes_rejected, 1);
    EXPECT_EQ(r.safety.stale_writes_rejected, 0);
    EXPECT_EQ(r.safety.fenced_overlaps, 1);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 0);
    EXPECT_EQ(r.safety.stale_writes_accepted, 0);
}

TEST(CheckerStore, ARefusedWriteTheLockServerDidNotVouchForIsStale) {
    for (const std::optional<bool> says : {std::optional<bool>(false), std::optional<bool>()}) {
        const CheckResult r = check(holder_refused(says));
        EXPECT_EQ(r.safety.holder_writes_rejected, 0) << says.has_value();
        EXPECT_EQ(r.safety.stale_writes_rejected, 1) << says.has_value();
    }
}

TEST(CheckerStore, WriteAcceptedAfterAnotherLeaseEnteredIsStale) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "a", std::nullopt, 0)
        .add_store(K::enter, 1, "b", std::nullopt, 0)
        .add_store(K::write, 0, "a", std::nullopt, 0, 0)  // A writes 1 after B entered
        .add_store(K::exit, 0, "a")
        .add_store(K::write, 1, "b", std::nullopt, 0, 1)  // B read 0 too: writes 1 again
        .add_store(K::exit, 1, "b");
    const int a = b.lease("a", 0), bl = b.lease("b", 1);
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.safety.stale_writes_accepted, 1);
    EXPECT_EQ(r.safety.stale_writes_rejected, 0);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 1);
    EXPECT_EQ(r.safety.lost_updates, 1);
    const auto stale = std::ranges::find(r.witnesses, Witness::Kind::stale_write, &Witness::kind);
    ASSERT_NE(stale, r.witnesses.end());
    EXPECT_EQ(stale->first.lease, a);
    EXPECT_EQ(stale->second.lease, bl);
}

TEST(CheckerStore, LostUpdatesAreCompletedSectionsMinusFinalCounter) {
    HistoryBuilder b;
    section(b, 0, "a", 0);
    section(b, 1, "b", 1);
    section(b, 2, "c", 2);
    section(b, 0, "d", 3);
    EXPECT_EQ(check(b.final_counter(4).build()).safety.lost_updates, 0);
    EXPECT_EQ(check(b.final_counter(1).build()).safety.lost_updates, 3);
    EXPECT_EQ(check(b.final_counter(0).build()).safety.lost_updates, 4);
    EXPECT_EQ(check(b.final_counter(1).build()).ops.sections_completed, 4);
}

// antirez's check-and-set (resource_check "token") in the case it does not cover: A, paused
// between its acquire and its enter, enters after B did and registers its stale token again,
// so the store refuses B's write and takes A's. The store logs the fences it did not enforce,
// and from them the checker knows A's write came too late: a stale write accepted. The
// refusal counts as a rejected write, although here it is the legitimate holder's.
TEST(CheckerStore, ATokenCheckedStoreThatTookTheStaleHoldersWriteIsCaughtByTheLoggedFences) {
    HistoryBuilder b;
    b.add_store(K::enter, 1, "b", 2, 0)          // B, the holder now (fence 2), registers
        .add_store(K::enter, 0, "a", 1, 0)       // A (fence 1) registers its token again
        .add_store(K::reject, 1, "b", 2, 0, 0)   // B's token is no longer the registered one
        .add_store(K::exit, 1, "b", 2)
        .add_store(K::write, 0, "a", 1, 0, 0)    // A's is
        .add_store(K::exit, 0, "a", 1);
    const int a = b.lease("a", 0), bl = b.lease("b", 1);
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.safety.stale_writes_accepted, 1);
    EXPECT_EQ(r.safety.stale_writes_rejected, 1);
    EXPECT_EQ(r.safety.lost_updates, 0) << "A read after B entered and B's write never landed";
    const auto stale = std::ranges::find(r.witnesses, Witness::Kind::stale_write, &Witness::kind);
    ASSERT_NE(stale, r.witnesses.end());
    EXPECT_EQ(stale->first.lease, a);
    EXPECT_EQ(stale->second.lease, bl);
}

// Jepsen's figure: lost updates over the writes the store accepted, 0 with nothing written.
TEST(CheckerStore, TheLostUpdateShareIsLostOverAcceptedWrites) {
    const Metric* share = find_metric("lost_update_share");
    ASSERT_NE(share, nullptr);
    EXPECT_TRUE(share->expectable);
    HistoryBuilder b;
    EXPECT_EQ(share->of(check(b.build())), 0.0);
    section(b, 0, "a", 0);
    section(b, 1, "b", 0);
    section(b, 2, "c", 0);
    section(b, 0, "d", 0);
    EXPECT_EQ(share->of(check(b.final_counter(1).build())), 0.75);
    EXPECT_EQ(share->of(check(b.final_counter(4).build())), 0.0);
}

// ---- the clients' histories: counts, foreign releases, availability, latency ------------

// A takes node(s) `a_nodes` at 1 ms, B takes `b_nodes` at `b_ok_ns`, A's release begins at
// 4 ms and its reply says it removed the key on `removed`.
RunHistory release_race(std::uint32_t a_nodes, std::uint32_t b_nodes, long long b_ok_ns,
                        std::uint32_t removed) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", a_nodes)
        .add_event(1, 2 * kMs, Op::acquire, T::invoke)
        .add_event(1, b_ok_ns, Op::acquire, T::ok, "c1.1", b_nodes)
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", removed)
        .add_event(1, 6 * kMs, Op::release, T::invoke, "c1.1")
        .add_event(1, 7 * kMs, Op::release, T::ok, "c1.1", b_nodes);
    return b.build();
}

TEST(CheckerClients, ReleaseAfterAnotherAcquiredTheNodeIsForeign) {
    const RunHistory h = release_race(0b1, 0b1, 3 * kMs, 0b1);
    const CheckResult r = check(h);
    EXPECT_EQ(r.safety.foreign_releases, 1);
    ASSERT_EQ(r.witnesses.size(), 1u);
    const Witness& w = r.witnesses[0];
    EXPECT_EQ(w.kind, Witness::Kind::foreign_release);
    EXPECT_EQ(h.leases.at(static_cast<size_t>(w.first.lease)), "c0.1");
    EXPECT_EQ(w.first.client, 0);
    EXPECT_EQ(h.leases.at(static_cast<size_t>(w.second.lease)), "c1.1");
    EXPECT_EQ(w.second.client, 1);
    EXPECT_EQ(w.t_ns, 4 * kMs);
    EXPECT_EQ(w.nodes, 0b1u);

    const nlohmann::json j = to_json(r, h)["witnesses"][0];
    EXPECT_EQ(j["kind"].get<std::string>(), "foreign_release");
    EXPECT_EQ(j["releaser"]["lease"].get<std::string>(), "c0.1");
    EXPECT_EQ(j["victim"]["lease"].get<std::string>(), "c1.1");
    EXPECT_EQ(j["release_t_ms"], 4.0);
    EXPECT_EQ(j["nodes"], nlohmann::json::array({0}));
}

TEST(CheckerClients, TheVictimIsTheLeaseHoldingTheNodeWhenTheReleaseBegan) {
    HistoryBuilder b;
    b.add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", 1)
        .add_event(1, 2 * kMs, Op::acquire, T::ok, "c1.1", 1)    // B takes over, then leaves
        .add_event(1, 2 * kMs + 500'000, Op::release, T::invoke, "c1.1")
        .add_event(1, 2 * kMs + 600'000, Op::release, T::ok, "c1.1", 1)
        .add_event(2, 3 * kMs, Op::acquire, T::ok, "c2.1", 1)    // C holds it now
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", 1);
    const RunHistory h = b.build();
    const CheckResult r = check(h);
    EXPECT_EQ(r.safety.foreign_releases, 1);
    ASSERT_EQ(r.witnesses.size(), 1u);
    EXPECT_EQ(h.leases.at(static_cast<size_t>(r.witnesses[0].second.lease)), "c2.1");
}

TEST(CheckerClients, AStaleAcquireWhoseSetsLandedEarlierIsNoVictim) {
    HistoryBuilder b;  // client 1 sent its SETs at 0 ms and read the replies only at 3 ms
    b.add_event(1, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::invoke)
        .add_event(0, 2 * kMs, Op::acquire, T::ok, "c0.1", 1)
        .add_event(1, 3 * kMs, Op::acquire, T::ok, "c1.1", 1)
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", 1);
    EXPECT_EQ(check(b.build()).safety.foreign_releases, 0);
}

TEST(CheckerClients, ReleaseThatRemovedNothingIsNotForeign) {
    EXPECT_EQ(check(release_race(0b1, 0b1, 3 * kMs, 0)).safety.foreign_releases, 0);
}

TEST(CheckerClients, AcquireAfterTheReleaseBeganIsNotItsVictim) {
    const long long after_release_invoke = 4 * kMs + 500'000;
    EXPECT_EQ(check(release_race(0b1, 0b1, after_release_invoke, 0b1)).safety.foreign_releases, 0);
}

TEST(CheckerClients, RedlockReleaseOnlyCountsNodesTheOtherLeaseTook) {
    // A holds {0,1,2}; B later takes {1,2,3}. A removing its key on node 0 harms nobody.
    EXPECT_EQ(check(release_race(0b0111, 0b1110, 3 * kMs, 0b0001)).safety.foreign_releases, 0);
    // Removing on {0,1} deleted B's key on node 1.
    const CheckResult r = check(release_race(0b0111, 0b1110, 3 * kMs, 0b0011));
    EXPECT_EQ(r.safety.foreign_releases, 1);
    ASSERT_EQ(r.witnesses.size(), 1u);
    EXPECT_EQ(r.witnesses[0].nodes, 0b0010u);
}

TEST(CheckerClients, RetryingOnAFreeLockIsUnavailable) {
    HistoryBuilder b;
    b.add_event(1, 0, Op::acquire, T::invoke)
        .add_event(1, 1 * kMs, Op::acquire, T::fail)
        .add_event(1, 2 * kMs, Op::acquire, T::invoke)
        .add_event(1, 3 * kMs, Op::acquire, T::fail)
        .add_event(1, 4 * kMs, Op::acquire, T::invoke)
        .add_event(1, 10 * kMs, Op::acquire, T::ok, "c1.1", 1)
        .add_event(1, 11 * kMs, Op::release, T::invoke, "c1.1")
        .add_event(1, 12 * kMs, Op::release, T::ok, "c1.1", 1);
    const CheckResult r = check(b.build());
    EXPECT_EQ(r.availability.unavailable_ms, 10.0);
    EXPECT_EQ(r.availability.longest_unavailable_ms, 10.0);
    EXPECT_EQ(r.ops.acquire_attempts, 3);
    EXPECT_EQ(r.acquire_wait_ms.count, 1);
    EXPECT_EQ(r.acquire_wait_ms.max, 10.0);  // from the first attempt, not the last
    EXPECT_EQ(r.acquire_ms.max, 6.0);        // each attempt on its own
}

// failover_to_entry_ms: counted from when the lock was free again after the failover, the
// later of Sentinel's switch and the end of the key of every lease granted before it (its
// acquire's answer plus the key's probed PTTL, else the run's TTL), to the next section.
TEST(CheckerClients, FailoverToEntryCountsFromTheLaterOfTheSwitchAndTheOldKeysEnd) {
    const auto run = [](long long switch_ms, std::optional<long long> probed_ms, long long next_read_ms) {
        HistoryBuilder b;
        b.add_event(0, 0, Op::acquire, T::invoke).add_event(0, 10 * kMs, Op::acquire, T::ok, "c0.1", 1);
        b.add_event(0, 11 * kMs, Op::read, T::invoke, "c0.1");  // the old holder's section: before the switch
        b.add_event(1, 20 * kMs, Op::acquire, T::invoke).add_event(1, 21 * kMs, Op::acquire, T::fail);
        b.add_event(1, (next_read_ms - 2) * kMs, Op::acquire, T::invoke)
            .add_event(1, (next_read_ms - 1) * kMs, Op::acquire, T::ok, "c1.1", 1)
            .add_event(1, next_read_ms * kMs, Op::read, T::invoke, "c1.1")
            .add_event(1, 5000 * kMs, Op::read, T::ok, "c1.1");
        RunHistory h = b.build();
        h.ttl_ms = 2000;
        h.failover_ns = switch_ms * kMs;
        if (probed_ms) h.events[1].key_ttl_ms = {*probed_ms};
        return check(h).availability.failover_to_entry_ms;
    };
    EXPECT_EQ(run(700, std::nullopt, 2040), 30.0);   // key's end 10 + 2000 ms, after the switch
    EXPECT_EQ(run(700, 1990, 2040), 40.0);           // its probed PTTL: 10 + 1990 ms
    EXPECT_EQ(run(3000, std::nullopt, 3025), 25.0);  // a slow failover: from the switch
    // A key given a new TTL at the promotion (700 ms) lets nobody in before 2700 ms.
    EXPECT_EQ(run(700, std::nullopt, 2700), 690.0);
    // Nobody entered: to the run's last event.
    HistoryBuilder stuck;
    stuck.add_event(0, 0, Op::acquire, T::invoke).add_event(0, 10 * kMs, Op::acquire, T::ok, "c0.1", 1);
    stuck.add_event(1, 20 * kMs, Op::acquire, T::invoke).add_event(1, 6000 * kMs, Op::acquire, T::fail);
    RunHistory h = stuck.build();
    h.ttl_ms = 2000;
    EXPECT_FALSE(check(h).availability.failover_to_entry_ms.has_value());  // no failover, no figure
    h.failover_ns = 700 * kMs;
    EXPECT_EQ(check(h).availability.failover_to_entry_ms, 3990.0);
}

TEST(CheckerClients, WaitingWhileTheOtherHoldsIsNotUnavailable) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", 1)
        .add_event(1, 2 * kMs, Op::acquire, T::invoke)  // waits, but client 0 holds
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", 1)  // free from here
        .add_event(1, 6 * kMs, Op::acquire, T::fail)
        .add_event(1, 7 * kMs, Op::acquire, T::invoke)
        .add_event(1, 15 * kMs, Op::acquire, T::ok, "c1.1", 1)  // held again
        .add_event(1, 16 * kMs, Op::release, T::invoke, "c1.1")
        .add_event(1, 17 * kMs, Op::release, T::ok, "c1.1", 1);
    const CheckResult r = check(b.build());
    // Client 1's attempt began while client 0 held: meeting a holder is not downtime, even
    // though its failure arrived after the release. Its next attempt succeeded.
    EXPECT_EQ(r.availability.unavailable_ms, 0.0);
    EXPECT_EQ(r.availability.longest_unavailable_ms, 0.0);
    EXPECT_EQ(r.acquire_wait_ms.count, 2);
    EXPECT_EQ(r.acquire_wait_ms.max, 13.0);  // client 1: from 2 ms to 15 ms
    EXPECT_EQ(r.duration_s, 0.017);
}

TEST(CheckerClients, AFailureThatCrossedTheWinnersAcquireIsNotDowntime) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)               // the winner's SET lands first...
        .add_event(1, 1 * kMs, Op::acquire, T::invoke)
        .add_event(1, 2 * kMs, Op::acquire, T::fail)        // ...so the other fails
        .add_event(0, 3 * kMs, Op::acquire, T::ok, "c0.1", 1)  // ...and its reply comes later
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", 1);
    EXPECT_EQ(check(b.build()).availability.unavailable_ms, 0.0);
}

TEST(CheckerClients, TwoGapsAddUpAndTheLongestIsKept) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::fail)            // fails on a free lock: down
        .add_event(0, 2 * kMs, Op::acquire, T::invoke)
        .add_event(0, 3 * kMs, Op::acquire, T::ok, "c0.1", 1)  // gap 0..3
        .add_event(0, 4 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 5 * kMs, Op::release, T::ok, "c0.1", 1)
        .add_event(0, 6 * kMs, Op::acquire, T::invoke)
        .add_event(0, 7 * kMs, Op::acquire, T::fail)
        .add_event(0, 8 * kMs, Op::acquire, T::invoke)
        .add_event(0, 13 * kMs, Op::acquire, T::ok, "c0.2", 1)  // gap 6..13
        .add_event(0, 14 * kMs, Op::release, T::invoke, "c0.2")
        .add_event(0, 15 * kMs, Op::release, T::ok, "c0.2", 1);
    const CheckResult r = check(b.build());
    EXPECT_EQ(r.availability.unavailable_ms, 10.0);
    EXPECT_EQ(r.availability.longest_unavailable_ms, 7.0);
    // Each window, for the report's plots, as [from, to) on the history's clock.
    using W = std::vector<std::pair<long long, long long>>;
    EXPECT_EQ(r.availability.windows_ns, (W{{0, 3 * kMs}, {6 * kMs, 13 * kMs}}));
    // The acquire latencies behind the percentiles, every attempt's.
    EXPECT_EQ(r.acquire_samples_ms.size(), 4u);
}

TEST(CheckerClients, KilledHolderStopsHoldingAtItsLastEvent) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", 1)  // then killed: no more events
        .add_event(1, 2 * kMs, Op::acquire, T::invoke)
        .add_event(1, 3 * kMs, Op::acquire, T::fail)
        .add_event(1, 4 * kMs, Op::acquire, T::invoke)
        .add_event(1, 20 * kMs, Op::acquire, T::ok, "c1.1", 1)
        .add_event(1, 21 * kMs, Op::release, T::invoke, "c1.1")
        .add_event(1, 22 * kMs, Op::release, T::ok, "c1.1", 1);
    const CheckResult r = check(b.build());
    // The dead holder counts for nothing after 1 ms: client 1's attempt from 2 ms fails on a
    // lock nobody holds, and it is down until 20 ms.
    EXPECT_EQ(r.availability.unavailable_ms, 18.0);
    EXPECT_EQ(r.availability.longest_unavailable_ms, 18.0);
}

TEST(CheckerClients, WaiterKilledWhileWaitingStopsWaiting) {
    HistoryBuilder b;
    b.add_event(1, 0, Op::acquire, T::invoke)
        .add_event(1, 2 * kMs, Op::acquire, T::fail)  // last event of client 1
        .add_event(0, 5 * kMs, Op::acquire, T::invoke)
        .add_event(0, 6 * kMs, Op::acquire, T::ok, "c0.1", 1)
        .add_event(0, 7 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 8 * kMs, Op::release, T::ok, "c0.1", 1);
    const CheckResult r = check(b.build());
    // Down from the failed attempt at 0 ms until somebody acquires, at 6 ms.
    EXPECT_EQ(r.availability.unavailable_ms, 6.0);
    EXPECT_EQ(r.availability.longest_unavailable_ms, 6.0);
}

TEST(CheckerClients, CountsOnlyOutermostAcquiresAndReleases) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke)
        .add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", 1)
        .add_event(0, 2 * kMs, Op::acquire, T::invoke, "c0.1", 0, 2)  // re-entry
        .add_event(0, 3 * kMs, Op::acquire, T::ok, "c0.1", 1, 2)
        .add_event(1, 4 * kMs, Op::acquire, T::invoke)
        .add_event(1, 5 * kMs, Op::acquire, T::fail)
        .add_event(0, 6 * kMs, Op::release, T::invoke, "c0.1", 0, 2)
        .add_event(0, 7 * kMs, Op::release, T::ok, "c0.1", 0, 2)
        .add_event(0, 8 * kMs, Op::release, T::invoke, "c0.1")
        .add_event(0, 10 * kMs, Op::release, T::ok, "c0.1", 1);
    section(b, 0, "c0.1", 0);
    const CheckResult r = check(b.final_counter(1).build());
    EXPECT_EQ(r.ops.acquire_attempts, 2);
    EXPECT_EQ(r.ops.acquired, 1);
    EXPECT_EQ(r.ops.released, 1);
    EXPECT_EQ(r.ops.sections_completed, 1);
    // Latencies of outermost operations only: acquires took 1 ms (ok) and 1 ms (fail).
    EXPECT_EQ(r.acquire_ms.count, 2);
    EXPECT_EQ(r.acquire_ms.max, 1.0);
    EXPECT_EQ(r.release_ms.count, 1);
    EXPECT_EQ(r.release_ms.max, 2.0);
    // Client 1 failed only while client 0 held: never down.
    EXPECT_EQ(r.availability.unavailable_ms, 0.0);
    EXPECT_EQ(r.safety.foreign_releases, 0);
}

TEST(CheckerClients, EmptyHistoryIsAllZero) {
    const CheckResult r = check(RunHistory{});
    EXPECT_EQ(r.ops.acquire_attempts, 0);
    EXPECT_EQ(r.safety.mutual_exclusion_violations, 0);
    EXPECT_EQ(r.availability.unavailable_ms, 0.0);
    EXPECT_EQ(r.duration_s, 0.0);
    EXPECT_EQ(r.sections_per_s, 0.0);
}

// ---- percentiles -------------------------------------------------------------------------

TEST(Percentiles, NearestRankOnOneToThousand) {
    std::vector<double> v(1000);
    std::iota(v.begin(), v.end(), 1.0);
    std::ranges::reverse(v);  // the function sorts
    const Percentiles p = percentiles(v);
    EXPECT_EQ(p.count, 1000);
    EXPECT_EQ(p.p50, 500.0);
    EXPECT_EQ(p.p90, 900.0);
    EXPECT_EQ(p.p99, 990.0);
    EXPECT_EQ(p.p999, 999.0);
    EXPECT_EQ(p.max, 1000.0);
}

TEST(Percentiles, NearestRankOnSmallSets) {
    std::vector<double> ten(10);
    std::iota(ten.begin(), ten.end(), 1.0);
    const Percentiles p = percentiles(ten);
    EXPECT_EQ(p.p50, 5.0);
    EXPECT_EQ(p.p90, 9.0);
    EXPECT_EQ(p.p99, 10.0);
    EXPECT_EQ(p.p999, 10.0);

    std::vector<double> one{7.5};
    const Percentiles q = percentiles(one);
    EXPECT_EQ(q.count, 1);
    EXPECT_EQ(q.p50, 7.5);
    EXPECT_EQ(q.max, 7.5);

    std::vector<double> none;
    const Percentiles z = percentiles(none);
    EXPECT_EQ(z.count, 0);
    EXPECT_EQ(z.p50, 0.0);
    EXPECT_EQ(z.max, 0.0);
}

}  // namespace
}  // namespace lockbench
