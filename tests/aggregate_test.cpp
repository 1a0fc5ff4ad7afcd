// The reduction of a cell's repetitions: the Wilson interval against published values, and
// the aggregate's counts against the repetitions they came from.
#include <gtest/gtest.h>

#include "analysis/aggregate.h"

namespace lockbench {
namespace {

TEST(Wilson, MatchesPublishedValues) {
    // Newcombe (1998), Table I, method 3 (score, no continuity correction).
    Interval i = wilson_interval(81, 263);
    EXPECT_NEAR(i.lo, 0.2553, 5e-4);
    EXPECT_NEAR(i.hi, 0.3662, 5e-4);
    i = wilson_interval(15, 148);
    EXPECT_NEAR(i.lo, 0.0624, 5e-4);
    EXPECT_NEAR(i.hi, 0.1605, 5e-4);
    i = wilson_interval(0, 20);
    EXPECT_EQ(i.lo, 0.0);
    EXPECT_NEAR(i.hi, 0.1611, 5e-4);
    i = wilson_interval(1, 29);
    EXPECT_NEAR(i.lo, 0.0061, 5e-4);
    EXPECT_NEAR(i.hi, 0.1718, 5e-4);
}

TEST(Wilson, EdgesStayInsideZeroOne) {
    EXPECT_EQ(wilson_interval(3, 3).hi, 1.0);
    EXPECT_GT(wilson_interval(3, 3).lo, 0.0);
    EXPECT_EQ(wilson_interval(0, 3).lo, 0.0);
    EXPECT_LT(wilson_interval(0, 3).hi, 1.0);
    EXPECT_EQ(wilson_interval(0, 0).lo, 0.0);  // nothing known
    EXPECT_EQ(wilson_interval(0, 0).hi, 1.0);
    // More repetitions, a narrower interval.
    EXPECT_LT(wilson_interval(10, 10).lo, wilson_interval(100, 100).lo);
}

nlohmann::json rep(long long violations, double unavailable_ms, bool held) {
    return {{"mutual_exclusion_violations", violations}, {"fenced_overlaps", 0}, {"lost_updates", violations / 2},
            {"lost_update_share", static_cast<double>(violations / 2) / 100},
            {"stale_writes_accepted", 0}, {"stale_writes_rejected", 1}, {"foreign_releases", 0},
            {"unavailable_ms", unavailable_ms}, {"sections_completed", 100}, {"expectations_held", held},
            {"expectations", nlohmann::json::array({{{"expect", "x"}, {"held", held}}})}};
}

TEST(Aggregate, CountsRatesAndPooledLatency) {
    const nlohmann::json reps = {rep(0, 10, true), rep(4, 30, true), rep(2, 0, false)};
    std::vector<double> latencies{3, 1, 2, 4};
    const nlohmann::json a = aggregate_reps(reps, latencies);
    EXPECT_EQ(a.at("violations").at("total"), 6.0);
    EXPECT_EQ(a.at("violations").at("min"), 0.0);
    EXPECT_EQ(a.at("violations").at("max"), 4.0);
    EXPECT_EQ(a.at("violating_reps"), 2);
    EXPECT_DOUBLE_EQ(a.at("violation_rate").get<double>(), 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(a.at("violation_rate_ci95").at(0).get<double>(), wilson_interval(2, 3).lo);
    EXPECT_EQ(a.at("lost_updates").at("total"), 3.0);
    EXPECT_DOUBLE_EQ(a.at("lost_update_share").at("mean").get<double>(), 0.03 / 3);
    EXPECT_DOUBLE_EQ(a.at("lost_update_share").at("max").get<double>(), 0.02);
    EXPECT_EQ(a.at("stale_writes_rejected").at("mean"), 1.0);
    EXPECT_DOUBLE_EQ(a.at("unavailable_ms").at("mean").get<double>(), 40.0 / 3.0);
    EXPECT_EQ(a.at("unavailable_ms").at("max"), 30.0);
    EXPECT_EQ(a.at("acquire_ms").at("count"), 4);
    EXPECT_EQ(a.at("acquire_ms").at("max"), 4.0);
    EXPECT_EQ(a.at("expectations_held_reps"), 2);
    EXPECT_FALSE(a.at("expectation_held").get<bool>());
    EXPECT_TRUE(a.at("has_expectations").get<bool>());
}

TEST(Aggregate, NoRepetitionsIsNotAVerdict) {
    std::vector<double> none;
    const nlohmann::json a = aggregate_reps(nlohmann::json::array(), none);
    EXPECT_EQ(a.at("violating_reps"), 0);
    EXPECT_FALSE(a.at("expectation_held").get<bool>());
    EXPECT_FALSE(a.at("has_expectations").get<bool>());
    EXPECT_EQ(a.at("violation_rate_ci95"), nlohmann::json::parse("[0.0, 1.0]"));
}

}  // namespace
}  // namespace lockbench
