// simulate_verdict (sim/virtual/sim_run.h), the seam explore calls once per schedule:
//
//   in memory ... its counts are those that run_simulated's files give the checker, for
//                 schedules drawn from catalog files (the histories and the store's log never
//                 become text, so the two paths share only the mapping of fields to events)
//   early stop .. stopping once the faults are spent and a quiet window has passed gives the
//                 full run's verdict kind, schedule by schedule, over the catalog's simulated
//                 runs and over schedules `explore --budget` composes (node clock steps, spent
//                 once they struck, among them); and it does stop some of them early
//   threads ..... two threads calling it at once give the verdicts a serial loop gives
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "sim/engine/workload.h"
#include "sim/harness/discover.h"
#include "sim/harness/explore.h"
#include "process/process.h"
#include "sim/virtual/sim_run.h"
#include "tests/catalog_util.h"

namespace lockbench::sim {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kScenarios = fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios";

// Which of the three counts are > 0, each on its own: whatever order a caller ranks them in
// (explore ignores overlaps for a fenced run), its verdict is then the same.
std::string kind(const SimVerdict& v) {
    return std::string(v.mutual_exclusion_violations > 0 ? "M" : "-") + (v.stale_writes_accepted > 0 ? "S" : "-") +
           (v.lost_updates > 0 ? "L" : "-");
}

// A drawn schedule, parsed: one run; nullopt when the scenario rules refuse the draw.
struct Schedule {
    Scenario scenario;
    std::uint64_t seed = 0;
};

std::optional<Schedule> schedule(const Json& source, const std::string& run, std::uint64_t i) {
    const Json drawn = draw_schedule(source, run, derive_seed(7, i));
    try {
        return Schedule{parse_scenario(drawn, "<schedule>"), drawn.at("seed").get<std::uint64_t>()};
    } catch (const ScenarioError&) {
        return std::nullopt;
    }
}

// The runs of a catalog file that the simulator can run.
std::vector<std::string> simulated_runs(const Json& source) {
    std::vector<std::string> names;
    for (const RunSpec& r : parse_scenario(source, "<catalog>").runs)
        if (!unsupported(r)) names.push_back(r.name);
    return names;
}

// About `total` schedules of a file, spread over its simulated runs.
std::vector<Schedule> schedules_of(const std::string& file, int total) {
    const Json source = test::catalog_scenario(file);
    const auto runs = simulated_runs(source);
    std::vector<Schedule> out;
    const int per_run = std::max(1, total / static_cast<int>(runs.size()));
    for (const std::string& run : runs)
        for (int i = 0; i < per_run; ++i)
            if (auto s = schedule(source, run, static_cast<std::uint64_t>(i))) out.push_back(std::move(*s));
    return out;
}

TEST(SimVerdict, CountsAreThoseOfTheFilesThroughTheChecker) {
    const fs::path dir = make_run_temp_dir();
    int compared = 0, violating = 0;
    for (const std::string file : {"gc-pause", "failover-lost-lock", "redlock-clock-jump", "resource-check"})
        for (const Schedule& s : schedules_of(file, 12)) {
            const RunSpec& run = s.scenario.runs.at(0);
            const fs::path run_dir = dir / std::to_string(compared);
            const RunOutcome o = run_simulated(s.scenario, run, s.seed, run_dir);
            std::ofstream(run_dir / "run.json") << Json{{"final_counter", o.final_counter}, {"clients", s.scenario.workload.clients}}.dump();
            const CheckResult c = check(load_run_history(run_dir), {.max_witnesses = 0});
            const SimVerdict v = simulate_verdict(s.scenario, run, s.seed, false);
            EXPECT_EQ(v.mutual_exclusion_violations, c.safety.mutual_exclusion_violations) << file << " " << run.name;
            EXPECT_EQ(v.stale_writes_accepted, c.safety.stale_writes_accepted) << file << " " << run.name;
            EXPECT_EQ(v.lost_updates, c.safety.lost_updates) << file << " " << run.name;
            EXPECT_EQ(v.sim_events, static_cast<long long>(o.sim_events.value_or(0))) << file << " " << run.name;
            EXPECT_FALSE(v.stopped_early);
            violating += kind(v) == "---" ? 0 : 1;
            ++compared;
        }
    fs::remove_all(dir);
    EXPECT_GT(compared, 20);
    EXPECT_GT(violating, 0) << "no schedule violated: the comparison saw only zeros";
}

TEST(SimVerdict, EarlyStopKeepsEveryScheduleVerdictKind) {
    int stopped = 0, violating = 0, total = 0;
    for (const std::string file : {"gc-pause", "redlock-clock-jump", "failover-lost-lock", "acquire-pause", "slow-holder"})
        for (const Schedule& s : schedules_of(file, 200)) {
            const SimVerdict full = simulate_verdict(s.scenario, s.scenario.runs.at(0), s.seed, false);
            const SimVerdict early = simulate_verdict(s.scenario, s.scenario.runs.at(0), s.seed, true);
            EXPECT_EQ(kind(early), kind(full)) << file << " " << s.scenario.name << " seed " << s.seed;
            EXPECT_LE(early.sim_events, full.sim_events + 1);  // + the stop's own event
            stopped += early.stopped_early ? 1 : 0;
            violating += kind(full) == "---" ? 0 : 1;
            ++total;
        }
    std::cout << total << " schedules, " << violating << " violating, " << stopped << " stopped early\n";
    EXPECT_GT(stopped, total / 10) << "the early stop hardly ever stopped: the comparison shows little";
    EXPECT_GT(violating, total / 20);
}

// The schedules `explore --budget` composes: every fault kind of the vocabulary, node clock
// steps (spent once they struck) among them, over every algorithm the simulator runs.
TEST(SimVerdict, EarlyStopKeepsTheVerdictOfBudgetSchedules) {
    // The baseline as it was written before it took a TTL of 2 s: a budget's faults are drawn
    // around the TTL, and these runs are short.
    const Json source = test::catalog_scenario("baseline", [](Json& c) {
        c["ttl_ms"] = 500;
        c["workload"]["clients"] = 4;
        c["workload"]["duration_ms"] = 1200;
    });
    int stopped = 0, violating = 0, total = 0;
    for (const std::string& run : simulated_runs(source))
        for (std::uint64_t i = 0; i < 40; ++i) {
            const Json drawn = draw_budget_schedule(source, run, derive_seed(11, i), 2);
            const Scenario sc = parse_scenario(drawn, "<schedule>");
            const auto seed = drawn.at("seed").get<std::uint64_t>();
            const SimVerdict full = simulate_verdict(sc, sc.runs.at(0), seed, false);
            const SimVerdict early = simulate_verdict(sc, sc.runs.at(0), seed, true);
            EXPECT_EQ(kind(early), kind(full)) << run << " " << drawn.at("runs").at(0).at("faults").dump();
            stopped += early.stopped_early ? 1 : 0;
            violating += kind(full) == "---" ? 0 : 1;
            ++total;
        }
    std::cout << total << " budget schedules, " << violating << " violating, " << stopped << " stopped early\n";
    EXPECT_GT(stopped, total / 10);
    EXPECT_GT(violating, total / 20);
}

TEST(SimVerdict, TwoThreadsGiveTheSerialVerdicts) {
    std::vector<Schedule> all = schedules_of("gc-pause", 150);
    for (Schedule& s : schedules_of("failover-lost-lock", 60)) all.push_back(std::move(s));
    std::vector<SimVerdict> serial(all.size()), parallel(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) serial[i] = simulate_verdict(all[i].scenario, all[i].scenario.runs.at(0), all[i].seed);
    const auto half = [&](std::size_t from) {
        for (std::size_t i = from; i < all.size(); i += 2)
            parallel[i] = simulate_verdict(all[i].scenario, all[i].scenario.runs.at(0), all[i].seed);
    };
    std::thread a(half, 0), b(half, 1);
    a.join();
    b.join();
    int violating = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(parallel[i].mutual_exclusion_violations, serial[i].mutual_exclusion_violations) << i;
        EXPECT_EQ(parallel[i].stale_writes_accepted, serial[i].stale_writes_accepted) << i;
        EXPECT_EQ(parallel[i].lost_updates, serial[i].lost_updates) << i;
        EXPECT_EQ(parallel[i].sim_events, serial[i].sim_events) << i;
        violating += kind(serial[i]) == "---" ? 0 : 1;
    }
    EXPECT_GT(violating, 0);
}

}  // namespace
}  // namespace lockbench::sim
