// What the checker derives for the report (analysis/report_data.h), on tiny hand-written
// histories: the store-to-client clock alignment, sections placed on the clients' axis, and
// the witness windows a timeline draws. Times are whole ns, so every figure is exact.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/report_data.h"
#include "tests/history_gen.h"

namespace lockbench {
namespace {

using histgen::HistoryBuilder;
using K = StoreKind;
using Op = OpKind;
using T = EventType;

constexpr long long kMs = 1'000'000;                    // ns
constexpr long long kStoreAhead = 5'000'000 * kMs;      // the store's clock, 5000 s ahead

// A client's enter call (read invoke at `at`, ok 2 ms later); returns its midpoint.
long long read_call(HistoryBuilder& b, int client, const std::string& lease, long long at) {
    b.add_event(client, at, Op::read, T::invoke, lease).add_event(client, at + 2 * kMs, Op::read, T::ok, lease);
    return at + kMs;
}

// Sets the store time of record `seq` (1-based): `client_ns` on the clients' clock, ahead.
void store_at(RunHistory& h, long long seq, long long client_ns) {
    h.store.at(static_cast<size_t>(seq - 1)).t_us = (client_ns + kStoreAhead) / 1000;
}

TEST(ReportDataClock, TheOffsetIsTheMedianOfStoreEnterMinusTheCallsMidpoint) {
    HistoryBuilder b;
    b.add_event(0, 1 * kMs, Op::acquire, T::invoke);
    const long long m1 = read_call(b, 0, "c0.1", 3 * kMs), m2 = read_call(b, 1, "c1.1", 10 * kMs),
                    m3 = read_call(b, 0, "c0.2", 20 * kMs);
    b.add_store(K::enter, 0, "c0.1").add_store(K::exit, 0, "c0.1")
        .add_store(K::enter, 1, "c1.1").add_store(K::exit, 1, "c1.1")
        .add_store(K::enter, 0, "c0.2");
    RunHistory h = b.build();
    // The store's enters land 1 µs early, on time and 2 µs late of each call's midpoint.
    store_at(h, 1, m1 - 1000);
    store_at(h, 2, m1 + 4 * kMs);
    store_at(h, 3, m2);
    store_at(h, 4, m2 + 1 * kMs);
    store_at(h, 5, m3 + 2000);
    const ClockAlignment a = align_store_clock(h);
    EXPECT_EQ(a.samples, 3);
    ASSERT_TRUE(a.offset_ns);
    EXPECT_EQ(*a.offset_ns, kStoreAhead);
    EXPECT_EQ(*a.iqr_us, 3.0);  // from 1 µs early to 2 µs late

    const ReportData d = report_data(h, check(h));
    EXPECT_EQ(d.t0_ns, 1 * kMs);
    ASSERT_EQ(d.sections.size(), 3u);
    EXPECT_DOUBLE_EQ(*d.sections[1].enter_ms, 10.0);  // m2 - t0 = 11 ms - 1 ms
    EXPECT_DOUBLE_EQ(*d.sections[1].exit_ms, 11.0);
    EXPECT_DOUBLE_EQ(*d.sections[0].enter_ms, 2.999);
    EXPECT_FALSE(d.sections[2].exit_ms);               // still inside at the end
    EXPECT_DOUBLE_EQ(*d.sections[2].end_ms(), 20.002);  // so it ends where it entered
}

TEST(ReportDataClock, WithoutAnEnterCallNothingOfTheStoreIsPlaced) {
    HistoryBuilder b;
    b.add_event(0, 1 * kMs, Op::acquire, T::invoke);
    b.add_store(K::enter, 0, "c0.1").add_store(K::write, 0, "c0.1").add_store(K::exit, 0, "c0.1");
    const RunHistory h = b.final_counter(1).build();
    const ReportData d = report_data(h, check(h));
    EXPECT_FALSE(d.clock.offset_ns);
    EXPECT_EQ(d.clock.samples, 0);
    ASSERT_EQ(d.sections.size(), 1u);
    EXPECT_EQ(d.sections[0].write_seq, 2);
    EXPECT_FALSE(d.sections[0].enter_ms);
    EXPECT_TRUE(d.writes_ms.empty());
}

TEST(ReportDataSections, AClientsNextEnterClosesItsOpenSectionAndItsLateRecordsAreIgnored) {
    HistoryBuilder b;
    b.add_store(K::enter, 0, "c0.1")     // 1: never left
        .add_store(K::enter, 0, "c0.2")  // 2: closes c0.1
        .add_store(K::write, 0, "c0.1")  // 3: c0.1 is no longer open: not its write
        .add_store(K::write, 0, "c0.2")  // 4
        .add_store(K::exit, 0, "c0.2");  // 5
    const RunHistory h = b.build();
    const std::vector<SectionSpan> s = store_sections(h, {}, 0);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_TRUE(s[0].closed_by_next);
    EXPECT_FALSE(s[0].write_seq);
    EXPECT_EQ(s[0].last_seq(), 1);
    EXPECT_FALSE(s[1].closed_by_next);
    EXPECT_EQ(s[1].write_seq, 4);
    EXPECT_EQ(s[1].exit_seq, 5);
    EXPECT_EQ(s[1].last_seq(), 5);
}

TEST(ReportDataSections, ARejectedWriteKeepsWhatTheStoreHadSeen) {
    RunHistory h;
    parse_store_entry({{"seq", 1}, {"kind", "enter"}, {"client", 0}, {"lease", "c0.1"}, {"fence", 3}}, h);
    parse_store_entry({{"seq", 2}, {"kind", "reject"}, {"client", 0}, {"lease", "c0.1"}, {"fence", 3},
                       {"max_fence", 7}}, h);
    const std::vector<SectionSpan> s = store_sections(h, {}, 0);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_TRUE(s[0].rejected);
    EXPECT_EQ(s[0].fence, 3);
    EXPECT_EQ(s[0].max_fence, 7);
    EXPECT_EQ(s[0].write_seq, 2);
}

// A and B overlap at the store, each with its lease acquired first: the window spans both
// leases and both sections, the overlap is where both were inside.
TEST(ReportDataWitnesses, AMutualExclusionWindowSpansBothLeasesAndMarksTheOverlap) {
    HistoryBuilder b;
    b.add_event(0, 1 * kMs, Op::acquire, T::ok, "c0.1", 1).add_event(1, 4 * kMs, Op::acquire, T::ok, "c1.1", 1);
    const long long ma = read_call(b, 0, "c0.1", 2 * kMs), mb = read_call(b, 1, "c1.1", 5 * kMs);
    b.add_store(K::enter, 0, "c0.1")                             // 1
        .add_store(K::enter, 1, "c1.1")                          // 2: into A
        .add_store(K::enter, 2, "c2.1")                          // 3: into both
        .add_store(K::write, 0, "c0.1").add_store(K::exit, 0, "c0.1")   // 4, 5
        .add_store(K::write, 1, "c1.1").add_store(K::exit, 1, "c1.1");  // 6, 7
    RunHistory h = b.final_counter(2).build();
    store_at(h, 1, ma);
    store_at(h, 2, mb);
    store_at(h, 3, mb + kMs);
    store_at(h, 4, 9 * kMs);
    store_at(h, 5, 10 * kMs);
    store_at(h, 6, 12 * kMs);
    store_at(h, 7, 13 * kMs);
    const CheckResult r = check(h);
    const ReportData d = report_data(h, r);
    // One window per witness, in the checker's order (its stale write comes first here).
    ASSERT_EQ(d.witnesses.size(), r.witnesses.size());
    const auto me = std::ranges::find(d.witnesses, std::string("mutual_exclusion"), &WitnessWindow::kind);
    ASSERT_NE(me, d.witnesses.end());
    const WitnessWindow& w = *me;
    ASSERT_TRUE(w.placed);
    EXPECT_EQ(w.a_enter_seq, 1);
    EXPECT_EQ(w.b_enter_seq, 2);
    EXPECT_DOUBLE_EQ(w.from_ms, 0.0);   // A's acquire, the run's first event
    EXPECT_DOUBLE_EQ(w.to_ms, 12.0);    // B's exit, 13 ms on the clients' clock
    ASSERT_TRUE(w.overlap_ms);
    EXPECT_DOUBLE_EQ(w.overlap_ms->first, 5.0);   // B entered at 6 ms
    EXPECT_DOUBLE_EQ(w.overlap_ms->second, 9.0);  // A left at 10 ms
    EXPECT_EQ(w.others_inside, 2);  // B and c2.1 entered while A was inside

    const nlohmann::json j = to_json(d, h);
    EXPECT_EQ(j.at("format"), "lockbench-sections");
    EXPECT_EQ(j.at("version"), kSectionsVersion);
    EXPECT_EQ(j.at("clock").at("offset_ns"), kStoreAhead);
    EXPECT_EQ(j.at("sections").at(0).at("lease"), "c0.1");
    EXPECT_TRUE(j.at("sections").at(2).at("exit_seq").is_null());
    EXPECT_EQ(j.at("witnesses").at(me - d.witnesses.begin()).at("window_ms"), nlohmann::json({0.0, 12.0}));
    EXPECT_EQ(j.at("writes_ms"), nlohmann::json({8.0, 11.0}));
}

// The first rejection (A) and the first other lease in after it (B): what a fenced timeline shows.
TEST(ReportDataWitnesses, TheFirstRejectionIsAWindowOfItsOwn) {
    HistoryBuilder b;
    b.add_event(0, 0, Op::acquire, T::invoke);
    const long long ma = read_call(b, 0, "c0.1", 1 * kMs), mb = read_call(b, 1, "c1.1", 4 * kMs);
    b.add_store(K::enter, 0, "c0.1", 1, 0)          // 1
        .add_store(K::enter, 1, "c1.1", 2, 0)       // 2
        .add_store(K::write, 1, "c1.1", 2, 0, 0)    // 3
        .add_store(K::exit, 1, "c1.1")              // 4
        .add_store(K::reject, 0, "c0.1", 1, 0, 1)   // 5: the fence stops A
        .add_store(K::exit, 0, "c0.1");             // 6
    RunHistory h = b.final_counter(1).build();
    for (long long seq = 1; seq <= 6; ++seq) store_at(h, seq, seq == 1 ? ma : seq == 2 ? mb : mb + seq * kMs);
    const ReportData d = report_data(h, check(h));
    ASSERT_FALSE(d.witnesses.empty());
    const WitnessWindow& w = d.witnesses.back();
    EXPECT_EQ(w.kind, "reject");
    ASSERT_TRUE(w.placed);
    EXPECT_EQ(w.a_enter_seq, 1);
    EXPECT_EQ(w.b_enter_seq, 2);
    EXPECT_EQ(w.others_inside, 1);
    ASSERT_TRUE(w.overlap_ms);
    EXPECT_DOUBLE_EQ(w.overlap_ms->first, 5.0);    // B entered at mb = 5 ms
    EXPECT_DOUBLE_EQ(w.overlap_ms->second, 9.0);   // B left at mb + 4 ms
}

TEST(ReportDataWindows, EveryUnavailableWindowIsOnTheAxis) {
    HistoryBuilder b;
    b.add_event(1, 2 * kMs, Op::acquire, T::invoke)
        .add_event(1, 3 * kMs, Op::acquire, T::fail)
        .add_event(1, 4 * kMs, Op::acquire, T::invoke)
        .add_event(1, 10 * kMs, Op::acquire, T::ok, "c1.1", 1);
    const RunHistory h = b.build();
    const ReportData d = report_data(h, check(h));
    ASSERT_EQ(d.unavailable_ms.size(), 1u);
    EXPECT_DOUBLE_EQ(d.unavailable_ms[0].first, 0.0);
    EXPECT_DOUBLE_EQ(d.unavailable_ms[0].second, 8.0);
}

}  // namespace
}  // namespace lockbench
