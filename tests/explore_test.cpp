// `lockbench explore --budget N` end to end on the real binary, in virtual time:
//
//   rediscovery .. from baseline.json, which writes no fault, a budget of two rediscovers the
//                  literature's failures: the GC pause for every unfenced lease lock (the
//                  watchdog lock too), the client clock step for getset, a node clock step or an
//                  empty restart for redlock; fenced token-lua lets a stale write through only
//                  when its lock node restarts empty (its fencing counter starts again)
//   determinism .. under --schedules, the same seed gives the same explore.json (timing aside)
//                  and the same witnesses on one thread or several; its shards merged give the
//                  whole search's schedules and verdicts, and every shard's classes
//   edges ........ bad options and mismatched shards are refused in one line; --seconds ends
//                  a search that has no schedule count; the report draws the classes, and
//                  refuses an explore.json older than classes in one line
#include <set>

#include "cli_util.h"

namespace {

using Json = nlohmann::json;

const fs::path kScenarios = fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios";

Json read_json(const fs::path& p) {
    std::ifstream in(p);
    return Json::parse(in);
}

// explore.json without what depends on the machine: wall times and when things were found.
Json without_timing(Json j) {
    if (j.is_object()) {
        for (const char* k : {"wall_s", "schedules_per_s", "first_found_s", "found_after_s", "first_violation_s", "figures",
                              "shard", "merged_shards"})
            j.erase(k);
        for (auto& [k, v] : j.items()) v = without_timing(v);
    } else if (j.is_array()) {
        for (auto& v : j) v = without_timing(v);
    }
    return j;
}

std::vector<std::string> classes_of(const Json& e, const std::string& run) {
    std::vector<std::string> out;
    for (const Json& c : e.at("classes"))
        if (c.at("run") == run) out.push_back(c.at("class"));
    return out;
}

bool has_class(const std::vector<std::string>& classes, const std::function<bool(const std::string&)>& pred) {
    return std::ranges::any_of(classes, pred);
}

bool contains(const std::string& s, const char* piece) { return s.find(piece) != std::string::npos; }

// Schedules per run of the rediscovery: enough, with its seed, for every class it asserts (the
// search's speed is a benchmark, explore/*, not a test).
constexpr long long kRediscoverySchedules = 40;

constexpr const char* kSmall = R"({"name": "small", "seed": 1,
    "workload": {"clients": 3, "duration_ms": 400, "work_ms": {"uniform": [1, 3]}, "retry_ms": {"uniform": [1, 3]}},
    "runs": [{"algorithm": "token-lua", "params": {"ttl_ms": 100}}, {"algorithm": "redlock", "params": {"ttl_ms": 100}}]})";

TEST_F(CliTest, BudgetSearchRediscoversTheLiteratureFromBaseline) {
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", (kScenarios / "baseline.json").string(), "--budget", "2", "--schedules",
                          std::to_string(kRediscoverySchedules), "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    const auto gc_pause = [](const std::string& c) { return c.starts_with("pause at") && contains(c, "longer than"); };
    for (const char* run : {"setnx", "token-lua", "redlock", "reentrant"})
        EXPECT_TRUE(has_class(classes_of(e, run), gc_pause)) << run << "\n" << e.at("classes").dump(1);
    EXPECT_TRUE(has_class(classes_of(e, "getset"), [](const std::string& c) { return c.starts_with("client clock step"); }))
        << e.at("classes").dump(1);
    EXPECT_TRUE(has_class(classes_of(e, "redlock"), [](const std::string& c) {
        return contains(c, "node clock step forward") || contains(c, "restarted empty");
    })) << e.at("classes").dump(1);
    // Every class has a witness that runs as it is.
    for (const Json& c : e.at("classes")) EXPECT_TRUE(fs::exists(out / c.at("witness").get<std::string>())) << c.dump();
}

// Fenced token-lua: no pause, clock step or link fault gets a stale write past the store. What
// does is a lock node that restarts empty: its fencing counter starts again below the tokens
// already handed out, so the new holder's writes are refused and the old holder's accepted.
TEST_F(CliTest, BudgetSearchFindsOnlyTheLostCounterAgainstTheFencedLock) {
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", (kScenarios / "baseline.json").string(), "--algorithm", "token-lua+fence", "--budget",
                          "2", "--schedules", "450", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    const auto classes = classes_of(e, "token-lua+fence");
    ASSERT_FALSE(classes.empty()) << "the premise: schedule 406 of seed 1 restarts the node empty";
    for (const std::string& c : classes) EXPECT_TRUE(contains(c, "restarted empty")) << c;
    for (const Json& c : e.at("classes")) EXPECT_EQ(c.at("violation"), "stale_writes_accepted") << c.dump();
}

TEST_F(CliTest, ExploreGivesTheSameResultsOnAnyNumberOfThreads) {
    const fs::path file = write_file("small.json", kSmall);
    std::vector<Json> results;
    for (const char* jobs : {"1", "3"}) {
        const fs::path out = dir() / (std::string("jobs-") + jobs);
        // A budget of one over 150 schedules: raw classes repeat, so the shrinks that stop at a
        // class found in an earlier chunk are exercised too.
        const Result r = run({"explore", file.string(), "--budget", "1", "--schedules", "150", "--jobs", jobs, "--out", out.string()});
        ASSERT_EQ(r.exit_code(), 0) << r.describe();
        results.push_back(read_json(out / "explore.json"));
        for (const Json& c : results.back().at("classes"))
            EXPECT_EQ(read_text(out / c.at("witness").get<std::string>()), read_text(dir() / "jobs-1" / c.at("witness").get<std::string>()));
    }
    ASSERT_FALSE(results[0].at("classes").empty()) << "the premise: the unfenced runs violate";
    EXPECT_EQ(without_timing(results[0]).dump(1), without_timing(results[1]).dump(1));
}

TEST_F(CliTest, ExploreShardsMergeIntoTheWholeSearch) {
    const fs::path file = write_file("small.json", kSmall);
    const auto explore = [&](const std::vector<std::string>& extra, const std::string& name) {
        std::vector<std::string> args{"explore", file.string(), "--budget", "2", "--schedules", "24", "--out", (dir() / name).string()};
        args.insert(args.end(), extra.begin(), extra.end());
        const Result r = run(args);
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
    };
    explore({}, "whole");
    explore({"--shard", "0/2"}, "s0");
    explore({"--shard", "1/2"}, "s1");
    explore({"--shard", "1/2", "--seed", "9"}, "other");
    explore({"--shard", "1/2", "--first"}, "first");
    const Result m = run({"merge", (dir() / "merged").string(), (dir() / "s0").string(), (dir() / "s1").string()});
    ASSERT_EQ(m.exit_code(), 0) << m.describe();
    const Json whole = read_json(dir() / "whole" / "explore.json"), merged = read_json(dir() / "merged" / "explore.json");
    // What one search would give: the schedules, which of them violate, and how.
    EXPECT_EQ(merged.at("schedules_run"), whole.at("schedules_run"));
    EXPECT_EQ(without_timing(merged.at("violating_schedules")).dump(), without_timing(whole.at("violating_schedules")).dump());
    for (const auto& [run, record] : whole.at("runs").items())
        for (const char* field : {"schedules", "violating", "invalid"}) EXPECT_EQ(merged.at("runs").at(run).at(field), record.at(field)) << run;
    // Each shard's classes, each once, with its witness copied beside.
    std::set<std::string> shard_classes;
    for (const char* shard : {"s0", "s1"}) {
        const Json e = read_json(dir() / shard / "explore.json");
        for (const Json& c : e.at("classes")) shard_classes.insert(c.at("run").get<std::string>() + "|" + c.at("class").get<std::string>());
    }
    std::set<std::string> merged_classes;
    for (const Json& c : merged.at("classes")) {
        EXPECT_TRUE(merged_classes.insert(c.at("run").get<std::string>() + "|" + c.at("class").get<std::string>()).second);
        EXPECT_TRUE(fs::exists(dir() / "merged" / c.at("witness").get<std::string>()));
    }
    EXPECT_EQ(merged_classes, shard_classes);
    const Result again = run({"merge", (dir() / "merged").string(), (dir() / "s0").string(), (dir() / "s1").string()});
    EXPECT_EQ(again.exit_code(), 0) << again.describe();
    expect_one_line_error(run({"merge", (dir() / "m2").string(), (dir() / "s0").string()}), "1 of 2 shards");
    expect_one_line_error(run({"merge", (dir() / "m3").string(), (dir() / "s0").string(), (dir() / "other").string()}), "seed");
    expect_one_line_error(run({"merge", (dir() / "m4").string(), (dir() / "s0").string(), (dir() / "first").string()}), "first");
    fs::create_directories(dir() / "broken");
    write_file("broken/explore.json", R"({"classes": [], "runs": {}})");
    expect_one_line_error(run({"merge", (dir() / "m5").string(), (dir() / "s0").string(), (dir() / "broken").string()}),
                          "broken/explore.json: violations");
}

TEST_F(CliTest, ExploreRefusesABadBudgetOrShardInOneLine) {
    const fs::path file = write_file("small.json", kSmall);
    const std::string out = (dir() / "out").string();
    expect_one_line_error(run({"explore", file.string(), "--budget", "0", "--out", out}), "--budget");
    expect_one_line_error(run({"explore", file.string(), "--shard", "2/2", "--out", out}), "shard");
    expect_one_line_error(run({"explore", file.string(), "--jobs", "0", "--out", out}), "--jobs");
    EXPECT_FALSE(fs::exists(fs::path(out) / "explore.json"));
}

// A scenario may leave "workload" out for its defaults; the search and its shrinking take it so
// (they used to write "workload": null into the schedules, or look for a workload that is not there).
TEST_F(CliTest, ExploreTakesAScenarioWithoutAWorkload) {
    const fs::path file = write_file("defaults.json", R"({"name": "defaults", "explore": {"fixed": ["workload.start_stagger_ms"]},
        "faults": [{"fault": "pause", "point": "after_acquire", "duration_ms": 600}],
        "runs": [{"algorithm": "token-lua", "params": {"ttl_ms": 300}}]})");
    const fs::path out = dir() / "out";
    const Result r = run({"explore", file.string(), "--schedules", "4", "--jobs", "1", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_EQ(read_json(out / "explore.json").at("schedules_run"), 4);
}

// Bounded by time alone, a search runs until its time is up and then writes what it found.
TEST_F(CliTest, ExploreBoundedBySecondsAloneEndsAndWrites) {
    const fs::path file = write_file("small.json", kSmall);
    const fs::path out = dir() / "out";
    const Result r = run({"explore", file.string(), "--budget", "2", "--seconds", "2", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    EXPECT_GT(e.at("schedules_run").get<long long>(), 0);
    EXPECT_EQ(e.at("budget"), 2);
}

TEST_F(CliTest, ReportDrawsTheDiscoveredClassesAndRefusesAnOlderExploreJson) {
    const fs::path file = write_file("small.json", kSmall);
    const fs::path out = dir() / "out";
    ASSERT_EQ(run({"explore", file.string(), "--budget", "2", "--schedules", "8", "--out", out.string()}).exit_code(), 0);
    const Json e = read_json(out / "explore.json");
    ASSERT_FALSE(e.at("classes").empty());
    const Result r = run({"report", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::string md = read_text(out / "report.md");
    EXPECT_TRUE(contains(md, "Discovered failure classes")) << md.substr(0, 2000);
    EXPECT_TRUE(contains(md, e.at("classes").at(0).at("class").get<std::string>().c_str())) << md.substr(0, 2000);
    Json old = e;
    old.erase("classes");
    std::ofstream(out / "explore.json") << old.dump();
    expect_one_line_error(run({"report", out.string()}), "run `lockbench explore` again");
}

}  // namespace
