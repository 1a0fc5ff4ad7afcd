// The order in which a round's repetitions start side by side (round_order, matrix.h): every
// repetition once, the alone cases' last, each case spread through the round, and the round
// ending on short repetitions. Pure: no server, no run.
#include <set>

#include <gtest/gtest.h>

#include "sim/harness/matrix.h"

namespace lockbench {
namespace {

// The order of a round's starts, as round_order gives it, for a round shaped like the
// catalog's: 30 long repetitions of one case (a Sentinel's failover: long, and light), 12
// long ones of another, 10 cases of 10 short ones, and 4 of a case that runs alone.
class RoundOrderTest : public ::testing::Test {
protected:
    static constexpr std::size_t kFailover = 0, kLong = 1, kAlone = 2;
    std::vector<RoundRepetition> round() const {
        std::vector<RoundRepetition> r;
        for (int i = 0; i < 30; ++i) r.push_back({kFailover, 8.0, false});
        for (int i = 0; i < 12; ++i) r.push_back({kLong, 6.0, false});
        for (std::size_t c = 3; c < 13; ++c)
            for (int i = 0; i < 10; ++i) r.push_back({c, 3.5, false});
        for (int i = 0; i < 4; ++i) r.push_back({kAlone, 2.0, true});
        return r;
    }
};

TEST_F(RoundOrderTest, EveryRepetitionOnceAndTheAloneOnesLast) {
    const auto r = round();
    const auto order = round_order(r);
    ASSERT_EQ(order.size(), r.size());
    EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), r.size());
    for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(r[order[k]].alone, k >= order.size() - 4) << k;
}

// One case's repetitions are spread through the round: no eight starts in a row (a round's
// width side by side) hold more than half of them from the failover case, where long-first
// ran 18 of its 30 in a row.
TEST_F(RoundOrderTest, ACaseIsSpreadThroughTheRound) {
    const auto r = round();
    const auto order = round_order(r);
    for (std::size_t k = 0; k + 8 <= order.size(); ++k) {
        int failover = 0;
        for (std::size_t j = k; j < k + 8; ++j) failover += r[order[j]].case_index == kFailover ? 1 : 0;
        EXPECT_LE(failover, 4) << "starts " << k << " to " << k + 7;
    }
}

// The round ends on short repetitions: the last quarter of the short ones (25 of 100) start
// after every long one.
TEST_F(RoundOrderTest, ItEndsOnShortRepetitions) {
    const auto r = round();
    const auto order = round_order(r);
    const std::size_t others = order.size() - 4;
    for (std::size_t k = others - 25; k < others; ++k) EXPECT_LT(r[order[k]].seconds, 6.0) << k;
}

}  // namespace
}  // namespace lockbench
