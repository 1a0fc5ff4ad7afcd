// The deterministic simulator, end to end through `lockbench run --backend sim`:
//
//   catalog ..... every catalog case runs unchanged in virtual time and every expectation its
//                 file states (written for, and held by, the live runs) holds there too, the
//                 Sentinel failovers included (their announcements in sentinel.jsonl, in
//                 order, after the crash); external libraries, which cannot run in virtual
//                 time, are reported as skipped, with the reason, not failed
//   replay ...... the same scenario and seed give byte-identical histories, store logs and
//                 fault logs; another seed gives other ones; a random repeating nemesis too
//   explore ..... a schedule search finds the GC pause's violation, shrinks it, and writes a
//                 witness scenario that violates again, simulated and on live redis-servers;
//                 `--replay SEED` rebuilds that schedule byte for byte; fenced token-lua on one
//                 node accepts no stale write in any schedule; each run's search is timed from
//                 its own start; a repeating fault aimed at the holder is explored too
#include <cctype>
#include <optional>

#include "cli_util.h"

namespace {

using Json = nlohmann::json;

const fs::path kScenarios = fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios";

// The catalog's cases by path under scenarios/, without ".json": the written ones, then those
// promoted from a search (scenarios/discovered/).
std::vector<std::string> catalog() {
    std::vector<std::string> names;
    for (const char* sub : {"", "discovered"}) {
        if (!fs::is_directory(kScenarios / sub)) continue;
        for (const auto& e : fs::directory_iterator(kScenarios / sub))
            if (e.path().extension() == ".json") names.push_back((fs::path(sub) / e.path().stem()).string());
    }
    std::ranges::sort(names);
    return names;
}

Json read_json(const fs::path& p) {
    std::ifstream in(p);
    return Json::parse(in);
}

// Every file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> tree(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_text(e.path());
    return files;
}

class SimCatalog : public CliTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(SimCatalog, EveryExpectationOfTheLiveCaseHolds) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", (kScenarios / (GetParam() + ".json")).string(), "--backend", "sim", "--out", out.string()});
    // A case only locks kept out of the catalog meet ("joins": "none": the PostgreSQL, Curator
    // and etcd-go locks, which scripts/run-verdict-only runs live) has nothing to run here;
    // lockbench says so in one line.
    if (r.exit_code() == 2 && r.err.find("applies to none of the locks asked for") != std::string::npos)
        GTEST_SKIP() << r.err;
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json summary = read_json(out / "summary.json");
    EXPECT_EQ(summary.at("backend"), "sim");
    // The scenario as it ran: a case composed with every lock of locks/.
    const Json scenario = read_json(out / "scenario.json");
    std::set<std::string> ran, skipped;
    for (const auto& run : summary.at("runs")) {
        ran.insert(run.at("name"));
        EXPECT_TRUE(run.at("expectations_held").get<bool>()) << run.at("name") << "\n" << r.out;
        EXPECT_FALSE(run.contains("not_as_written")) << run.at("name") << ": " << run.value("not_as_written", Json()).dump();
        // Held to something: an expectation, or a precondition (faults_injected) that held.
        bool written = false;
        for (const auto& w : scenario.at("runs"))
            if (w.value("name", "") == run.at("name") && !w.value("expect", Json::object()).empty()) written = true;
        EXPECT_TRUE(!run.at("expectations").empty() || written) << run.at("name");
    }
    std::map<std::string, std::string> why;
    for (const auto& s : summary.at("skipped")) {
        skipped.insert(s.at("name"));
        why[s.at("name")] = s.at("why");
        EXPECT_FALSE(s.at("why").get<std::string>().empty());
    }
    // A run on ZooKeeper or etcd is skipped for what it is: a service the model does not have.
    for (const auto& run : scenario.at("runs"))
        if (run.value("service", "redis") != "redis") {
            EXPECT_NE(why[run.at("name")].find("models Redis nodes only"), std::string::npos) << run.at("name");
        }
    // Only what cannot run in virtual time is left out.
    std::size_t cannot = 0;
    for (const auto& run : scenario.at("runs")) {
        const bool stalls_disk = std::ranges::any_of(run.value("faults", Json::array()),
                                                     [](const Json& f) { return f.value("fault", "") == "disk-stall"; });
        if (run.value("algorithm", "") == "external" || stalls_disk) ++cannot;
    }
    EXPECT_EQ(skipped.size(), cannot);
    EXPECT_EQ(ran.size() + skipped.size(), scenario.at("runs").size());
    if (!GetParam().starts_with("failover-")) return;
    for (const auto& run : summary.at("runs")) {
        const fs::path d = out / "runs" / run.at("name").get<std::string>();
        std::vector<std::string> events;
        std::ifstream in(d / "sentinel.jsonl");
        for (std::string line; std::getline(in, line);) events.push_back(Json::parse(line).at("event"));
        EXPECT_EQ(events, (std::vector<std::string>{"+sdown", "+odown", "+failover-end", "+switch-master"})) << d;
    }
}

// The simulated watchdog is held alone: its holder writes while the pause is still in force
// (a pause of the whole process would keep it from writing until the end).
TEST_F(CliTest, TheStarvedWatchdogsHolderWritesWhileItsWatchdogIsPaused) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", (kScenarios / "watchdog-starved.json").string(), "--backend", "sim", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const fs::path d = out / "runs" / "reentrant";
    std::vector<long long> fault_ns;
    std::ifstream log(d / "nemesis.jsonl");
    for (std::string line; std::getline(log, line);) fault_ns.push_back(Json::parse(line).at("t_ns"));
    ASSERT_EQ(fault_ns.size(), 2u);
    std::optional<long long> write_ns;
    std::ifstream history(d / "history" / "client-0.jsonl");
    for (std::string line; std::getline(history, line) && !write_ns;) {
        const Json e = Json::parse(line);
        if (e.at("op") == "write" && e.at("type") == "invoke") write_ns = e.at("t_ns").get<long long>();
    }
    ASSERT_TRUE(write_ns.has_value());
    EXPECT_GT(*write_ns, fault_ns[0]);
    EXPECT_LT(*write_ns, fault_ns[1]);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, SimCatalog, ::testing::ValuesIn(catalog()), [](const auto& info) {
    std::string n = info.param;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
});

// A scenario's failure_class (the verdict table's column) is in every run's record and summary
// entry; a scenario without one writes none.
TEST_F(CliTest, EveryRunRecordsItsScenariosFailureClass) {
    const auto simulate = [&](const std::string& file) {
        const fs::path out = dir() / fs::path(file).stem();
        const Result r = run({"run", (kScenarios / file).string(), "--backend", "sim", "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        return out;
    };
    const fs::path gc = simulate("gc-pause.json"), renewal = simulate("renewal.json");
    const Json runs = read_json(gc / "summary.json").at("runs");
    ASSERT_FALSE(runs.empty());
    for (const auto& run : runs) {
        EXPECT_EQ(run.value("failure_class", ""), "gc-pause") << run.at("name");
        const Json record = read_json(gc / run.at("run_dir").get<std::string>() / "run.json");
        EXPECT_EQ(record.value("failure_class", ""), "gc-pause") << run.at("name");
    }
    for (const auto& run : read_json(renewal / "summary.json").at("runs")) {
        EXPECT_FALSE(run.contains("failure_class")) << run.at("name");
        EXPECT_FALSE(read_json(renewal / run.at("run_dir").get<std::string>() / "run.json").contains("failure_class"));
    }
}

TEST_F(CliTest, SimulatedRunsReplayByteForByte) {
    const std::string scenario = (kScenarios / "gc-pause.json").string();
    const auto simulate = [&](const std::string& seed, const std::string& name) {
        const fs::path out = dir() / name;
        const Result r = run({"run", scenario, "--backend", "sim", "--seed", seed, "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        return tree(out / "runs");
    };
    const auto a = simulate("11", "a"), b = simulate("11", "b"), c = simulate("12", "c");
    ASSERT_GT(a.size(), 20u) << "histories, store logs, fault logs and records of every run";
    EXPECT_TRUE(a == b) << "the same seed should give the same bytes";
    std::size_t differ = 0;
    for (const auto& [path, bytes] : a)
        if (path.find("/history/") != std::string::npos && c.contains(path) && c.at(path) != bytes) ++differ;
    EXPECT_GT(differ, 0u) << "another seed should give other histories";
}

// The repeating nemesis at its most random (random clients, exponential intervals, drawn
// lengths) replays from the seed: the same seed strikes the same clients at the same instants.
TEST_F(CliTest, ARandomRepeatingNemesisReplaysByteForByte) {
    Json scenario = read_json(kScenarios / "jepsen-pauses.json");
    scenario["faults"] = Json::parse(R"([{"fault": "pause", "client": "random", "every_ms": {"exponential": 300},
                                          "duration_ms": {"uniform": [200, 700]}}])");
    for (const char* what : {"expect", "predict"}) scenario.erase(what);  // whether a random pause lands in a section is the seed's luck
    const fs::path file = dir() / "random-nemesis.json";
    std::ofstream(file) << scenario.dump();
    const auto nemesis_log = [&](const std::string& seed, const std::string& name) {
        const fs::path out = dir() / name;
        const Result r = run({"run", file.string(), "--lock", "token-lua", "--backend", "sim", "--seed", seed, "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        return read_text(out / "runs" / "token-lua" / "nemesis.jsonl");
    };
    const std::string a = nemesis_log("11", "a");
    EXPECT_GT(std::ranges::count(a, '\n'), 10) << a;
    EXPECT_EQ(a, nemesis_log("11", "b"));
    EXPECT_NE(a, nemesis_log("12", "c"));
}

// A repeating fault aimed at the holder names no client index: explore keeps the target and
// draws the rest around the file's values, and shrinking keeps the fault.
TEST_F(CliTest, ExploreDrawsAroundARepeatingFaultAimedAtTheHolder) {
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", (kScenarios / "jepsen-pauses.json").string(), "--lock", "token-lua",
                          "--schedules", "3", "--seed", "5", "--first", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    ASSERT_EQ(e.at("violations_found"), 1) << e.dump(2);
    const Json& fault = e.at("violations").at(0).at("shrunk").at("faults").at(0);
    EXPECT_EQ(fault.at("client"), "holder");
    EXPECT_EQ(fault.at("every_ms"), 500);
}

TEST_F(CliTest, ExploreFindsShrinksAndReplaysTheGcPauseViolation) {
    const std::string scenario = (kScenarios / "gc-pause.json").string();
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", scenario, "--lock", "token-lua", "--schedules", "20", "--seed", "5",
                          "--first", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    EXPECT_GE(e.at("schedules_run").get<long long>(), 1);
    EXPECT_GT(e.at("wall_s").get<double>(), 0.0);
    ASSERT_EQ(e.at("violations_found"), 1) << e.dump(2);
    const Json& v = e.at("violations").at(0);
    ASSERT_FALSE(e.at("violating_schedules").empty());
    EXPECT_EQ(e.at("violating_schedules").at(0).at("schedule_seed"), v.at("schedule_seed"));
    EXPECT_EQ(v.at("violation"), "mutual_exclusion_violations");
    // Found within the 20 schedules drawn (the time it takes is a benchmark: explore/*).
    EXPECT_LE(e.at("runs").at("token-lua").at("schedules").get<long long>(), 20);
    EXPECT_GT(v.at("found_after_s").get<double>(), 0.0);
    // Shrunk: fewer clients than the scenario's eight, and only the pause is left.
    EXPECT_LT(v.at("shrunk").at("clients").get<int>(), 8);
    ASSERT_EQ(v.at("shrunk").at("faults").size(), 1u);
    EXPECT_EQ(v.at("shrunk").at("faults").at(0).at("fault"), "pause");

    // The witness is a scenario anyone can run: it violates again in the simulator and live.
    const fs::path witness = out / v.at("witness").at("scenario").get<std::string>();
    // Its simulated run is a results tree: the report draws the violation's timeline from it.
    const Result report = run({"report", out.string()});
    ASSERT_EQ(report.exit_code(), 0) << report.describe();
    bool timeline = false;
    for (const auto& f : fs::directory_iterator(out / "report-images"))
        timeline = timeline || f.path().filename().string().find("timeline") != std::string::npos;
    EXPECT_TRUE(timeline) << "no timeline drawn from the witness";
    for (const char* backend : {"sim", "live"}) {
        const fs::path o = dir() / (std::string("witness-") + backend);
        const Result w = run({"run", witness.string(), "--backend", backend, "--out", o.string()});
        EXPECT_EQ(w.exit_code(), 0) << backend << "\n" << w.describe();
        EXPECT_GT(read_json(o / "summary.json").at("runs").at(0).at("safety").at("mutual_exclusion_violations").get<long long>(), 0)
            << backend;
    }

    // --replay SEED: the same schedule, byte for byte, twice.
    const std::string seed = std::to_string(v.at("schedule_seed").get<std::uint64_t>());
    std::vector<std::map<std::string, std::string>> replays;
    for (const char* name : {"replay-a", "replay-b"}) {
        const Result p = run({"explore", scenario, "--lock", "token-lua", "--replay", seed, "--out",
                              (dir() / name).string()});
        ASSERT_EQ(p.exit_code(), 0) << p.describe();
        replays.push_back(tree(dir() / name / "run" / "runs"));
    }
    ASSERT_GT(replays[0].size(), 3u);
    EXPECT_TRUE(replays[0] == replays[1]);
    EXPECT_GT(read_json(dir() / "replay-a" / "run" / "summary.json").at("runs").at(0).at("safety").at("mutual_exclusion_violations").get<long long>(), 0);
}

TEST_F(CliTest, ExploreLeavesWhatTheScenarioFixesAndDrawsTheRest) {
    const fs::path file = write_file("fixed.json", R"({"name": "fixed", "seed": 1,
        "workload": {"clients": 4, "duration_ms": 1000},
        "explore": {"fixed": ["faults.*.client", "faults.0.duration_ms"]},
        "faults": [{"fault": "pause", "point": "after_acquire", "client": 2, "occurrence": 2, "duration_ms": 300}],
        "runs": [{"algorithm": "token-lua", "params": {"ttl_ms": 200}}]})");
    std::set<long long> occurrences;
    for (int seed = 1; seed <= 8; ++seed) {
        const fs::path out = dir() / ("replay-" + std::to_string(seed));
        const Result r = run({"explore", file.string(), "--algorithm", "token-lua+ttl_ms=200", "--replay",
                              std::to_string(seed), "--out", out.string()});
        ASSERT_EQ(r.exit_code() == 0 || r.exit_code() == 1, true) << r.describe();
        const Json fault = read_json(out / "scenario.json").at("runs").at(0).at("faults").at(0);
        EXPECT_EQ(fault.at("client"), 2);
        EXPECT_EQ(fault.at("duration_ms"), 300);
        occurrences.insert(fault.at("occurrence").get<long long>());
    }
    EXPECT_GT(occurrences.size(), 1u) << "what is not fixed is drawn";
    const fs::path bad = write_file("bad.json", R"({"name": "bad", "explore": {"fixed": ["faults.0.colour"]},
        "runs": [{"algorithm": "token-lua"}]})");
    const Result b = run({"explore", bad.string(), "--schedules", "1", "--out", (dir() / "bad").string()});
    EXPECT_EQ(b.exit_code(), 2);
    EXPECT_EQ(lines_of(b.err).size(), 1u) << b.describe();
    EXPECT_NE(b.err.find("explore.fixed"), std::string::npos) << b.describe();
}

// Each run's search has its own clock: a run searched second that violates at once reports a
// first violation within the time of its own first schedule, not after the run before it.
TEST_F(CliTest, ExploreTimesEachRunFromItsOwnStart) {
    // The long lease never expires under these short sections; the 1 ms one expires inside each.
    const fs::path file = write_file("two-runs.json", R"({"name": "two-runs", "seed": 1,
        "workload": {"clients": 3, "duration_ms": 300, "work_ms": {"uniform": [10, 20]}, "retry_ms": {"uniform": [2, 4]}},
        "runs": [{"algorithm": "token-lua", "params": {"ttl_ms": 5000}},
                 {"algorithm": "token-lua", "params": {"ttl_ms": 1}}]})");
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", file.string(), "--schedules", "40", "--first", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    const Json& held = e.at("runs").at("token-lua+ttl_ms=5000");
    const Json& broke = e.at("runs").at("token-lua+ttl_ms=1");
    // The premise: the first run searched all 40 schedules, the second violated in its first.
    ASSERT_EQ(held.at("schedules"), 40) << e.dump(2);
    ASSERT_EQ(held.at("violating"), 0) << e.dump(2);
    ASSERT_EQ(broke.at("schedules"), 1) << e.dump(2);
    ASSERT_EQ(e.at("violations").size(), 1u) << e.dump(2);
    // One schedule (drawn, simulated, checked) of the second run against the forty of the first.
    EXPECT_LT(broke.at("first_violation_s").get<double>(), held.at("wall_s").get<double>()) << e.dump(2);
    EXPECT_LE(broke.at("first_violation_s").get<double>(), broke.at("wall_s").get<double>()) << e.dump(2);
    EXPECT_EQ(e.at("violations").at(0).at("found_after_s"), broke.at("first_violation_s"));
    EXPECT_LE(held.at("wall_s").get<double>() + broke.at("wall_s").get<double>(), e.at("wall_s").get<double>());
}

TEST_F(CliTest, ExploreFindsNoStaleWriteAcceptedByTheFencedLockOnOneNode) {
    const fs::path out = dir() / "explore";
    const Result r = run({"explore", (kScenarios / "gc-pause.json").string(), "--algorithm", "token-lua+fence",
                          "--schedules", "100", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json e = read_json(out / "explore.json");
    EXPECT_EQ(e.at("schedules_run"), 100);
    EXPECT_EQ(e.at("violations_found"), 0) << e.dump(2);
    EXPECT_TRUE(e.at("violating_schedules").empty());
    EXPECT_EQ(e.at("runs").at("token-lua+fence").at("invalid"), 0);
}

// The renewal policy in virtual time: a renewal too short for its period fails once the key
// has expired; "stop" ends the renewals there, "retry" goes on trying (and failing) until
// the release. One client alone: nobody else takes the key, so each retry fails the same way.
TEST_F(CliTest, RenewalStopsAfterAFailureUnlessTheRunRetries) {
    const fs::path s = write_file("renew.json", R"({"name": "renew", "workload": {"clients": 1, "duration_ms": 2000,
        "sections_per_client": 1, "work_ms": {"fixed": 1000}},
        "runs": [{"algorithm": "token-lua", "name": "stop", "params": {"ttl_ms": 300},
                  "renew": {"every_ms": 100, "ttl_ms": 50, "mode": "replace"}},
                 {"algorithm": "token-lua", "name": "retry", "params": {"ttl_ms": 300},
                  "renew": {"every_ms": 100, "ttl_ms": 50, "mode": "replace", "on_failure": "retry"}}]})");
    const fs::path out = dir() / "out";
    const Result r = run({"run", s.string(), "--backend", "sim", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    std::map<std::string, std::map<std::string, int>> renewals;
    for (const char* name : {"stop", "retry"}) {
        std::ifstream in(out / "runs" / name / "history" / "client-0.jsonl");
        for (std::string line; std::getline(in, line);)
            if (const Json j = Json::parse(line); j.at("op") == "renew") ++renewals[name][j.at("type")];
    }
    // At 100 ms the key (300 ms) is still there and gets 50 ms; at 200 ms it is gone.
    EXPECT_EQ(renewals["stop"]["ok"], 1);
    EXPECT_EQ(renewals["stop"]["fail"], 1);
    EXPECT_EQ(renewals["retry"]["ok"], 1);
    EXPECT_EQ(renewals["retry"]["fail"], 8) << "every 100 ms from 200 ms to the write at 1000 ms";
    EXPECT_EQ(renewals["retry"]["invoke"], 9);
}

// "until_sections": past its duration a workload goes on while the store counts fewer sections,
// up to four durations in all. One client, 40 ms sections, 100 ms: three sections; with 5
// wanted it goes on to at least five; with 1000 wanted it stops at its 400 ms bound.
TEST_F(CliTest, AWorkloadGoesOnUntilTheStoreCountsItsSectionsWithinItsBound) {
    const fs::path s = write_file("until.json", R"({"name": "until", "workload": {"clients": 1, "duration_ms": 100,
        "work_ms": {"fixed": 40}, "retry_ms": {"fixed": 1}},
        "runs": [{"algorithm": "token-lua", "name": "plain", "params": {"ttl_ms": 1000}},
                 {"algorithm": "token-lua", "name": "five", "params": {"ttl_ms": 1000}, "workload": {"clients": 1,
                  "duration_ms": 100, "until_sections": 5, "work_ms": {"fixed": 40}, "retry_ms": {"fixed": 1}}},
                 {"algorithm": "token-lua", "name": "many", "params": {"ttl_ms": 1000}, "workload": {"clients": 1,
                  "duration_ms": 100, "until_sections": 1000, "work_ms": {"fixed": 40}, "retry_ms": {"fixed": 1}}}]})");
    const fs::path out = dir() / "out";
    const Result r = run({"run", s.string(), "--backend", "sim", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    std::map<std::string, int> writes;
    for (const char* name : {"plain", "five", "many"}) {
        std::ifstream in(out / "runs" / name / "store.jsonl");
        ASSERT_TRUE(in) << name;
        for (std::string line; std::getline(in, line);)
            if (const Json j = Json::parse(line); j.at("kind") == "write") ++writes[name];
    }
    EXPECT_EQ(writes["plain"], 3);
    EXPECT_GE(writes["five"], 5);
    EXPECT_LE(writes["five"], 6) << "it stops once the store has counted five";
    EXPECT_GE(writes["many"], 8);
    EXPECT_LE(writes["many"], 10) << "at most 400 ms of 40 ms sections";
}

}  // namespace
