// Fault discovery from a budget (sim/harness/discover.h), without running anything:
//
//   draws ...... every schedule drawn from the budget is a valid scenario with 1..N faults; it
//                draws only the kinds that apply to the run (a watchdog pause only where a
//                watchdog runs, a replication link only under Sentinel); swarm subsets leave
//                some schedules with one kind only; a correlated draw tells one story (one
//                client, one cycle, points in order, a node fault off that client's cut); the
//                same seed draws the same schedule
//   classes .... a class names each fault's kind, point and size against the TTL, in the order
//                the faults landed, and leaves out what does not change the failure
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "sim/engine/scenario.h"
#include "sim/harness/discover.h"
#include "sim/harness/results_folder.h"
#include "tests/catalog_util.h"

namespace lockbench::sim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kScenarios = fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios";

Json baseline() { return test::catalog_scenario("baseline"); }

std::vector<Json> draws(const Json& source, const std::string& run, int budget, int n) {
    std::vector<Json> out;
    for (int seed = 1; seed <= n; ++seed) out.push_back(draw_budget_schedule(source, run, static_cast<std::uint64_t>(seed), budget));
    return out;
}

bool any_fault(const std::vector<Json>& schedules, const std::function<bool(const Json&)>& pred) {
    for (const Json& s : schedules)
        for (const Json& f : s.at("runs").at(0).at("faults"))
            if (pred(f)) return true;
    return false;
}

TEST(BudgetDraw, EverySchedulePassesTheScenarioRulesWithinTheBudget) {
    for (const char* run : {"setnx", "getset", "token-lua", "redlock", "reentrant"})
        for (int budget : {1, 2, 3}) {
            for (const Json& s : draws(baseline(), run, budget, 150)) {
                const auto& faults = s.at("runs").at(0).at("faults");
                EXPECT_GE(faults.size(), 1u);
                EXPECT_LE(faults.size(), static_cast<std::size_t>(budget)) << s.dump();
                EXPECT_NO_THROW(parse_scenario(s, "<draw>")) << s.dump();
            }
        }
}

TEST(BudgetDraw, DrawsOnlyTheKindsThatApplyToTheRun) {
    const auto background = [](const Json& f) { return f.value("task", "") == "background"; };
    const auto replication = [](const Json& f) { return f.value("replication", false); };
    EXPECT_FALSE(any_fault(draws(baseline(), "token-lua", 2, 300), background));
    EXPECT_TRUE(any_fault(draws(baseline(), "reentrant", 2, 300), background));
    EXPECT_FALSE(any_fault(draws(baseline(), "redlock", 2, 300), replication));
    const Json sentinel = test::catalog_scenario("failover-lost-lock");
    const std::string run = parse_scenario(sentinel, "<f>").runs.at(0).name;
    EXPECT_TRUE(any_fault(draws(sentinel, run, 2, 300), replication));
    // The points a run never reaches are not drawn: setnx has no during_acquire.
    EXPECT_FALSE(any_fault(draws(baseline(), "setnx", 2, 300), [](const Json& f) { return f.value("point", "") == "during_acquire"; }));
    EXPECT_TRUE(any_fault(draws(baseline(), "getset", 2, 300), [](const Json& f) { return f.value("point", "") == "after_seen_expired"; }));
}

TEST(BudgetDraw, SwarmSubsetsAndCorrelatedTargetsAppear) {
    int one_kind = 0, correlated = 0;
    for (const Json& s : draws(baseline(), "redlock", 2, 1000)) {
        const auto& f = s.at("runs").at(0).at("faults");
        if (f.size() == 2 && f[0].at("fault") == f[1].at("fault")) ++one_kind;
        // Cut from some nodes, then a fault on a node the same client could still lock.
        if (f.size() == 2 && f[0].contains("nodes") && f[1].contains("node") &&
            f[0].contains("client") && f[1].value("client", -1) == f[0].at("client") &&
            std::ranges::count(f[0].at("nodes"), f[1].at("node")) == 0)
            ++correlated;
    }
    EXPECT_GT(one_kind, 0);
    EXPECT_GT(correlated, 1) << "a cut and a node fault on one client, off the cut, is one draw in a hundred";
}

// A story: every fault on one client in one lock cycle, at points in the cycle's order, and a
// node fault never on a node an earlier cut of that client took away. Independent draws that
// happen to share a client and an occurrence follow no order: they are the few exceptions.
TEST(BudgetDraw, CorrelatedDrawsTellOneStory) {
    const std::vector<std::string> order{"before_acquire", "during_acquire", "after_acquire", "before_write", "before_release"};
    int stories = 0, out_of_order = 0, node_after_cut = 0, on_the_cut = 0;
    for (const Json& s : draws(baseline(), "redlock", 2, 2000)) {
        const auto& f = s.at("runs").at(0).at("faults");
        if (f.size() != 2 || !f[0].contains("client") || !f[1].contains("client") || f[0].at("client") != f[1].at("client") ||
            !f[0].contains("point") || !f[1].contains("point") || f[0].value("occurrence", 0) != f[1].value("occurrence", -1))
            continue;
        ++stories;
        const auto at = [&](const Json& x) { return std::ranges::find(order, x.at("point").get<std::string>()) - order.begin(); };
        if (at(f[0]) > at(f[1])) ++out_of_order;
        if (f[0].contains("nodes") && f[1].contains("node") && f[0].at("nodes").size() < 5) {
            ++node_after_cut;
            if (std::ranges::count(f[0].at("nodes"), f[1].at("node")) > 0) ++on_the_cut;
        }
    }
    EXPECT_GT(stories, 200);
    EXPECT_LT(out_of_order, stories / 20) << stories;
    EXPECT_GT(node_after_cut, 10);
    EXPECT_LT(on_the_cut, node_after_cut / 5) << node_after_cut;
}

TEST(BudgetDraw, TheSameSeedDrawsTheSameSchedule) {
    EXPECT_EQ(draw_budget_schedule(baseline(), "redlock", 42, 2), draw_budget_schedule(baseline(), "redlock", 42, 2));
    EXPECT_NE(draw_budget_schedule(baseline(), "redlock", 42, 2), draw_budget_schedule(baseline(), "redlock", 43, 2));
}

Json with_faults(Json faults, Json params = {{"ttl_ms", 300}}, int nodes = 5) {
    return {{"name", "c"}, {"workload", {{"clients", 4}, {"duration_ms", 3000}}},
            {"runs", Json::array({{{"algorithm", "redlock"}, {"nodes", nodes}, {"params", params}, {"faults", faults}}})}};
}

TEST(FailureClass, NamesKindPointAndSizeAgainstTheTtl) {
    const Json pause = with_faults(Json::array({{{"fault", "pause"}, {"point", "before_write"}, {"occurrence", 2}, {"duration_ms", 900}}}));
    EXPECT_EQ(failure_class(pause), "pause at before_write, longer than the TTL");
    const Json short_pause = with_faults(Json::array({{{"fault", "pause"}, {"point", "before_write"}, {"duration_ms", 100}}}));
    EXPECT_EQ(failure_class(short_pause), "pause at before_write, shorter than the TTL");
    // Occurrences and exact lengths do not make another class.
    const Json other = with_faults(Json::array({{{"fault", "pause"}, {"point", "before_write"}, {"occurrence", 3}, {"duration_ms", 1500}}}));
    EXPECT_EQ(failure_class(other), failure_class(pause));
}

TEST(FailureClass, FollowsTheOrderTheFaultsLandedAndTheirRelation) {
    const Json s = with_faults(Json::array({
        {{"fault", "clock"}, {"point", "after_acquire"}, {"client", 1}, {"node", 2}, {"jump_ms", 3000}},
        {{"fault", "link"}, {"at_ms", 0}, {"client", 1}, {"mode", "blackhole"}, {"nodes", {3, 4}}}}));
    EXPECT_EQ(failure_class(s, {1, 0}),
              "link cut from a client to 2 of 5 lock nodes at a time + node clock step forward, more than the TTL at "
              "after_acquire, same client, on a node it was not cut from");
    EXPECT_NE(failure_class(s, {0, 1}), failure_class(s, {1, 0}));
    const Json lease = with_faults(Json::array({{{"fault", "crash"}, {"point", "after_acquire"}, {"node", 0}, {"restart_after_ms", 0}}}),
                                   {{"ttl_ms", 300}}, 1);
    EXPECT_EQ(failure_class(lease), "node crash at after_acquire, restarted empty");
}

}  // namespace
}  // namespace lockbench::sim
