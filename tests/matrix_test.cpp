// `lockbench matrix`, `sweep`, `merge` and `report` end to end, on the real binary against
// live redis-server, with tests/data/tiny-pause.json: a GC pause past the lease that the
// unfenced token lock cannot survive and the fenced one can (half a second per run).
//
//   matrix ...... every cell N times with seeds s..s+N-1; per-repetition figures and their
//                 aggregate; progress on stderr
//   resume ...... a matrix killed with SIGKILL and started again keeps what it had done
//   shards ...... two shards on this machine, merged, equal the whole; other specs refused; an
//                 incomplete set refused unless allowed, and then recorded; the Slurm jobs of
//                 scripts/slurm/ run as they are
//   sweep ....... the swept field really changes the run (no violation below the TTL, some
//                 above it)
//   bad input ... one line, exit 2, nothing written
//   report ...... `lockbench report` over a matrix and a sweep: every figure is there, the page
//                 opens in headless Chromium with every image loaded and nothing cut off; a
//                 folder that is not results, or from another version, or a damaged history is
//                 one line and leaves the previous report as it was; a cell that never ran is
//                 shown as not run and no finding speaks for it
#include <sys/stat.h>

#include "cli_util.h"

namespace {

using Json = nlohmann::json;

const fs::path kTiny = fs::path(LOCKBENCH_SOURCE_DIR) / "tests" / "data" / "tiny-pause.json";
const std::string kUnfenced = "tiny-pause/token-lua+ttl_ms=100";
const std::string kFenced = "tiny-pause/token-lua+ttl_ms=100+fence";

Json read_json(const fs::path& p) {
    std::ifstream in(p);
    return Json::parse(in);
}

const Json& cell(const Json& summary, const std::string& id) {
    for (const auto& c : summary.at("cells"))
        if (c.at("id") == id) return c;
    throw std::runtime_error("no cell " + id);
}

// Each run's sections.json, as a run wrote it, under a tree's repetitions.
std::map<fs::path, std::string> sections_files(const fs::path& tree) {
    std::map<fs::path, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(tree))
        if (e.path().filename() == "sections.json") files[e.path()] = read_text(e.path());
    return files;
}

class MatrixTest : public CliTest {};

TEST_F(MatrixTest, RunsEveryCellRepeatTimesWithDistinctSeedsAndAggregates) {
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", kTiny.string(), "--repeat", "2", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    // Progress: repetitions done, the cell now running, elapsed and time left.
    EXPECT_NE(r.err.find("repetitions done"), std::string::npos) << r.err;
    // In rounds: every cell's first repetition before any cell's second.
    EXPECT_LT(r.err.find(kFenced + " rep 1/2"), r.err.find(kUnfenced + " rep 2/2")) << r.err;
    EXPECT_NE(r.err.find(kFenced + " rep 2/2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("elapsed"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("left"), std::string::npos) << r.err;

    const Json header = read_json(out / "lockbench-results.json");
    EXPECT_EQ(header.at("format"), "lockbench-results");
    EXPECT_EQ(header.at("kind"), "matrix");
    const Json summary = read_json(out / "summary.json");
    ASSERT_EQ(summary.at("cells").size(), 2u);
    for (const auto& c : summary.at("cells")) {
        ASSERT_EQ(c.at("reps").size(), 2u) << c.dump(2);
        EXPECT_TRUE(c.at("complete").get<bool>());
        EXPECT_EQ(c.at("reps").at(0).at("seed"), 5);  // the scenario's seed, then the next
        EXPECT_EQ(c.at("reps").at(1).at("seed"), 6);
        long long total = 0, violating = 0;
        for (const auto& rep : c.at("reps")) {
            // Each repetition is a whole `lockbench run` folder that `check` re-reads alike.
            const fs::path rep_dir = out / rep.at("dir").get<std::string>();
            const Json run_summary = read_json(rep_dir / "summary.json");
            EXPECT_EQ(run_summary.at("runs").at(0).at("seed"), rep.at("seed"));
            const long long v = rep.at("mutual_exclusion_violations").get<long long>();
            EXPECT_EQ(run_summary.at("runs").at(0).at("safety").at("mutual_exclusion_violations"), v);
            total += v;
            violating += v > 0 ? 1 : 0;
        }
        const Json& a = c.at("aggregate");
        EXPECT_EQ(a.at("violations").at("total").get<long long>(), total);
        EXPECT_EQ(a.at("violating_reps").get<long long>(), violating);
        EXPECT_DOUBLE_EQ(a.at("violation_rate").get<double>(), violating / 2.0);
        EXPECT_LE(a.at("violation_rate_ci95").at(0).get<double>(), a.at("violation_rate").get<double>());
        EXPECT_GE(a.at("violation_rate_ci95").at(1).get<double>(), a.at("violation_rate").get<double>());
        EXPECT_GT(a.at("acquire_ms").at("count").get<long long>(), 0);
    }
    // The pause past the lease: the unfenced lock violates every time, the fenced one never.
    EXPECT_EQ(cell(summary, kUnfenced).at("aggregate").at("violating_reps"), 2);
    EXPECT_EQ(cell(summary, kFenced).at("aggregate").at("violating_reps"), 0);
    EXPECT_EQ(cell(summary, kFenced).at("variant"), "token-lua+fence");
    // Two repetitions of 2/2 give a Wilson interval well inside (0, 1].
    EXPECT_NEAR(cell(summary, kUnfenced).at("aggregate").at("violation_rate_ci95").at(0).get<double>(), 0.342, 0.001);
}

// A time budget stops the work between rounds: here every round takes longer than the
// whole budget, so only the first runs, and every cell has exactly one repetition.
TEST_F(MatrixTest, TimeBudgetEndsTheWorkBetweenRounds) {
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", kTiny.string(), "--repeat", "3", "--time-budget-s", "0.001", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.err.find("time budget: stopping after 1 of 3 repetitions per cell"), std::string::npos) << r.err;
    const Json summary = read_json(out / "summary.json");
    EXPECT_EQ(summary.at("budget").at("repetitions_per_cell"), 1);
    for (const auto& c : summary.at("cells")) EXPECT_EQ(c.at("reps_done"), 1) << c.at("id");
    // Without a budget the same command runs the rest, keeping the first round.
    const Result rest = run({"matrix", kTiny.string(), "--repeat", "3", "--out", out.string()});
    ASSERT_EQ(rest.exit_code(), 0) << rest.describe();
    const Json whole = read_json(out / "summary.json");
    EXPECT_FALSE(whole.contains("budget"));
    for (const auto& c : whole.at("cells")) EXPECT_EQ(c.at("reps_done"), 3) << c.at("id");
}

// When a repetition ran, on the system clock: [start, end] from its timing.json.
std::pair<long long, long long> ran_between(const fs::path& rep_dir, const std::string& run) {
    const Json t = read_json(rep_dir / "runs" / run / "timing.json");
    return {t.at("between_unix_ms").at(0).get<long long>(), t.at("between_unix_ms").at(1).get<long long>()};
}

// Every repetition of the tree: its cell's run and when it ran.
std::vector<std::tuple<std::string, std::pair<long long, long long>>> repetitions(const fs::path& out) {
    std::vector<std::tuple<std::string, std::pair<long long, long long>>> reps;
    const Json summary = read_json(out / "summary.json");
    for (const auto& c : summary.at("cells"))
        for (const auto& rep : c.at("reps"))
            reps.emplace_back(c.at("id").get<std::string>(),
                              ran_between(out / rep.at("dir").get<std::string>(), c.at("run").get<std::string>()));
    return reps;
}

bool overlap(std::pair<long long, long long> a, std::pair<long long, long long> b) {
    return a.first < b.second && b.first < a.second;
}

// --jobs 3: repetitions side by side, each in a process of its own with its own servers and
// clients, make the tree one at a time makes: every repetition, its seed, its forced outcome
// (the unfenced lock's two holders, the fenced one's refusal: the expectations, so exit 0).
TEST_F(MatrixTest, RepetitionsSideBySideMakeTheSameTree) {
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", kTiny.string(), "--repeat", "3", "--jobs", "3", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json summary = read_json(out / "summary.json");
    ASSERT_EQ(summary.at("cells").size(), 2u);
    for (const auto& c : summary.at("cells")) {
        ASSERT_EQ(c.at("reps_done"), 3) << c.dump(2);
        for (int k = 0; k < 3; ++k) EXPECT_EQ(c.at("reps").at(k).at("seed"), 5 + k) << c.at("id");
        EXPECT_EQ(c.at("aggregate").at("violating_reps"), c.at("id") == kUnfenced ? 3 : 0) << c.at("id");
    }
    const auto reps = repetitions(out);
    ASSERT_EQ(reps.size(), 6u);
    bool side_by_side = false;
    for (size_t i = 0; i < reps.size(); ++i)
        for (size_t j = i + 1; j < reps.size(); ++j) side_by_side = side_by_side || overlap(std::get<1>(reps[i]), std::get<1>(reps[j]));
    EXPECT_TRUE(side_by_side) << "no two repetitions ran at the same time";
    EXPECT_NE(r.err.find(kFenced + " rep 3/3"), std::string::npos) << r.err;
}

// Side by side, a round takes its cases in turn: the first two repetitions to start are of
// two cases, though each case has two cells.
TEST_F(MatrixTest, RepetitionsSideBySideAreOfDifferentCases) {
    Json other = read_json(kTiny);
    other["name"] = "tiny-other";
    const fs::path other_file = write_file("tiny-other.json", other.dump());
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", kTiny.string(), other_file.string(), "--jobs", "2", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    auto reps = repetitions(out);
    ASSERT_EQ(reps.size(), 4u);
    std::ranges::sort(reps, {}, [](const auto& rep) { return std::get<1>(rep).first; });
    const auto case_of = [](const std::string& id) { return id.substr(0, id.find('/')); };
    EXPECT_NE(case_of(std::get<0>(reps[0])), case_of(std::get<0>(reps[1])))
        << std::get<0>(reps[0]) << " and " << std::get<0>(reps[1]) << " started first";
}

// Side by side, a round's cases take turns and it ends on short repetitions (round_order):
// here a 4-second case's two cells and a half-second case's two start one of each (in either
// order: they start together), then long, then short (long first would start the two long
// ones together; turns alone would end on a long one).
TEST_F(MatrixTest, RepetitionsSideBySideTakeTurnsAndEndOnShortOnes) {
    Json long_case = read_json(kTiny);
    long_case["name"] = "tiny-long";
    long_case["workload"]["duration_ms"] = 4000;
    const fs::path long_file = write_file("tiny-long.json", long_case.dump());
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", kTiny.string(), long_file.string(), "--jobs", "2", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    auto reps = repetitions(out);
    ASSERT_EQ(reps.size(), 4u);
    std::ranges::sort(reps, {}, [](const auto& rep) { return std::get<1>(rep).first; });
    std::string started;
    for (const auto& rep : reps) started += std::get<0>(rep).starts_with("tiny-long/") ? 'L' : 'S';
    EXPECT_EQ((std::set<char>{started[0], started[1]}), (std::set<char>{'L', 'S'})) << started;
    EXPECT_EQ(started.substr(2), "LS") << started;
}

// A case marked "alone" (its outcome is timed, not forced) runs beside no repetition of
// another case, and beside at most one more of its own kind (two alone cases of two cells
// each here: four such repetitions in the round, never three at once), while the others run
// side by side.
TEST_F(MatrixTest, ACaseMarkedAloneRunsBesideNoOtherCaseAndAtMostOneOfItsKind) {
    std::vector<std::string> args{"matrix", kTiny.string()};
    for (const char* name : {"tiny-alone", "tiny-alone-too"}) {
        Json alone = read_json(kTiny);
        alone["name"] = name;
        alone["alone"] = true;
        args.push_back(write_file(std::string(name) + ".json", alone.dump()).string());
    }
    const fs::path out = dir() / "m";
    for (const char* a : {"--jobs", "3", "--out"}) args.emplace_back(a);
    args.push_back(out.string());
    const Result r = run(args);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const auto reps = repetitions(out);
    ASSERT_EQ(reps.size(), 6u);
    const auto is_alone = [](const std::string& id) { return id.starts_with("tiny-alone"); };
    int alone_pairs = 0;
    for (const auto& [id, when] : reps) {
        if (!is_alone(id)) continue;
        int alone_at_its_start = 0;
        for (const auto& [other, other_when] : reps) {
            if (other == id) continue;
            if (!is_alone(other)) EXPECT_FALSE(overlap(when, other_when)) << id << " ran beside " << other;
            else if (other_when.first <= when.first && when.first < other_when.second) ++alone_at_its_start;
            if (is_alone(other) && overlap(when, other_when)) ++alone_pairs;
        }
        EXPECT_LE(alone_at_its_start, 1) << id << " started beside two others that run alone";
    }
    EXPECT_GT(alone_pairs, 0) << "no two repetitions that run alone ran side by side";
}

// A repetition that misses an expectation says which one, with the value it had, on its
// progress line and again after the table (the end of a long log), with its folder.
TEST_F(MatrixTest, RepetitionsThatMissAnExpectationAreNamedAfterTheTable) {
    Json greedy = read_json(kTiny);
    greedy["name"] = "tiny-greedy";
    greedy["runs"][1]["expect"]["sections_completed"] = ">= 100000";
    const fs::path file = write_file("tiny-greedy.json", greedy.dump());
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", file.string(), "--repeat", "2", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 1) << r.describe();
    const std::string fenced = "tiny-greedy/token-lua+ttl_ms=100+fence";
    const size_t progress = r.err.find(fenced + " rep 2/2 (seed 6)");
    ASSERT_NE(progress, std::string::npos) << r.err;
    const std::string line = r.err.substr(progress, r.err.find('\n', progress) - progress);
    EXPECT_NE(line.find("0 violations, expectations NOT held: sections_completed >= 100000 ("), std::string::npos)
        << r.err;
    const size_t list = r.out.find("expectations NOT held in 2 repetitions:\n");
    ASSERT_NE(list, std::string::npos) << r.out;
    EXPECT_GT(list, r.out.find("NOT HELD in 2/2")) << "the list follows the table: " << r.out;
    for (const int rep : {1, 2})
        EXPECT_NE(r.out.find("  " + fenced + " rep " + std::to_string(rep) + ": sections_completed >= 100000 (", list),
                  std::string::npos)
            << r.out;
    EXPECT_NE(r.out.find("(cells/tiny-greedy/token-lua+ttl_ms=100+fence/rep-1)", list), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("tiny-greedy/token-lua+ttl_ms=100 rep", list), std::string::npos)
        << "the unfenced cell held: " << r.out;
}

// A case of two clients whose run `run` is an adapter started by `/bin/sh -c script` (redis-py's
// lock once the script is done with its own business), then `more_runs` (",{...}" or "").
std::string adapter_case(const std::string& name, const std::string& run, const std::string& script,
                         const std::string& more_runs = "") {
    const Json command = Json::array({"/bin/sh", "-c", script});
    return R"({"name": ")" + name + R"(", "seed": 7,
        "workload": {"clients": 2, "duration_ms": 300, "work_ms": {"uniform": [0.5, 2]}, "retry_ms": {"uniform": [1, 3]}},
        "runs": [{"algorithm": "external", "name": ")" + run + R"(", "expect": {"sections_completed": ">= 1"},
                  "command": )" + command.dump() + "}" + more_runs + "]}";
}

// One repetition's set-up never ends a matrix: an adapter that takes 12 s to print its ready
// line once (its first start, which the matrix's check of the adapter makes) fails that attempt
// at its 10 s; the repetition is run again, the adapter given 30 s, and happens as written.
// The other cell runs too, and the slow one's entry says why it was run again.
TEST_F(MatrixTest, AnAdapterSlowToStartOnceIsRunAgainAndTheMatrixRunsToItsEnd) {
    const std::string marker = (dir() / "started-once").string();
    const fs::path file = write_file("slow-start.json", adapter_case("slow-start", "slow",
        "mkdir " + marker + " 2>/dev/null && sleep 12; exec /usr/bin/python3 adapters/redis_py_lock.py",
        R"(, {"algorithm": "token-lua", "name": "quick", "expect": {"sections_completed": ">= 1"}})"));
    const fs::path out = dir() / "m";
    const Result r = run({"matrix", file.string(), "--repeat", "1", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json summary = read_json(out / "summary.json");
    const Json& slow = cell(summary, "slow-start/slow");
    EXPECT_EQ(slow.at("reps_as_written"), 1) << slow.dump(2);
    ASSERT_EQ(slow.at("not_as_written").size(), 1u) << slow.dump(2);
    EXPECT_EQ(slow.at("not_as_written")[0].at("attempt"), 1);
    EXPECT_NE(slow.at("not_as_written")[0].at("reason").get<std::string>().find("10000 ms"), std::string::npos) << slow.dump(2);
    EXPECT_TRUE(slow.at("could_not_force").empty());
    EXPECT_EQ(cell(summary, "slow-start/quick").at("reps_as_written"), 1);
    EXPECT_NE(r.out.find("not as written, run again: 1 attempt"), std::string::npos) << r.out;
}

// A kept repetition is checked before it counts: one damaged since (here its summary.json cut
// short) is run again rather than kept (before: "1 repetitions already done are kept", then a
// report that refused the tree).
TEST_F(MatrixTest, AResumedMatrixRunsADamagedRepetitionAgain) {
    const fs::path out = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--repeat", "1", "--out", out.string()}).exit_code(), 0);
    const fs::path damaged = out / "cells" / kUnfenced / "rep-0" / "summary.json";
    ASSERT_TRUE(fs::exists(damaged));
    write_text(damaged, "{\"runs\": [");
    const Result r = run({"matrix", kTiny.string(), "--repeat", "1", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.err.find(kUnfenced + " rep 1 is damaged"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1 repetitions already done are kept"), std::string::npos) << r.err;  // the fenced one
    EXPECT_EQ(read_json(damaged).at("runs").size(), 1u);
    EXPECT_EQ(run({"report", out.string()}).exit_code(), 0);
}

// A repetition is checked once, where it is made: the cell pools the acquire latencies the
// checker wrote beside its histories (sections.json), the same figures as checking again; a
// repetition an older lockbench wrote, with none there, or a damaged file goes through the
// checker again.
TEST_F(MatrixTest, ACellPoolsTheAcquireLatenciesItsRepetitionsWroteAndChecksOnlyOlderOnesAgain) {
    const fs::path out = dir() / "m";
    const std::vector<std::string> args = {"matrix", kTiny.string(), "--backend", "sim", "--repeat", "2",
                                           "--out", out.string()};
    ASSERT_EQ(run(args).exit_code(), 0);
    const auto acquire = [&] {
        std::map<std::string, Json> by_cell;
        const Json summary = read_json(out / "summary.json");
        for (const Json& c : summary.at("cells"))
            by_cell[c.at("id").get<std::string>()] = c.at("aggregate").at("acquire_ms");
        return by_cell;
    };
    // Each cell made again from its repetitions' files, as a resumed matrix does.
    const auto refreshed = [&] {
        for (const auto& e : fs::recursive_directory_iterator(out))
            if (e.path().filename() == "cell.json") fs::remove(e.path());
        const Result r = run(args);
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        return acquire();
    };
    const auto rewrite_sections = [&](const std::function<void(Json&)>& change) {
        const auto files = sections_files(out);
        ASSERT_EQ(files.size(), 4u);  // two cells, two repetitions each
        for (const auto& [path, text] : files) {
            Json j = Json::parse(text);
            ASSERT_GT(j.at("acquire_ms").size(), 0u) << path;
            change(j);
            write_text(path, j.dump());
        }
    };
    const auto made = acquire();
    ASSERT_EQ(made.size(), 2u);
    EXPECT_EQ(refreshed(), made);
    rewrite_sections([](Json& j) { j["acquire_ms"] = {1234.5}; });  // read, not checked again
    for (const auto& [id, a] : refreshed()) {
        EXPECT_EQ(a.at("count"), 2) << id;
        EXPECT_EQ(a.at("p50"), 1234.5) << id;
    }
    rewrite_sections([](Json& j) { j["acquire_ms"] = "damaged"; });  // none to trust: checked again
    EXPECT_EQ(refreshed(), made);
    rewrite_sections([](Json& j) { j.erase("acquire_ms"); });  // an older tree's: checked again
    EXPECT_EQ(refreshed(), made);
}

// A repetition that could not run is no evidence: resumed after its adapter was fixed, the
// matrix runs it again rather than keeping "could not force" (before: kept as done).
TEST_F(MatrixTest, AResumedMatrixRunsARepetitionThatCouldNotRunAgain) {
    const std::string broken = (dir() / "broken").string();
    const fs::path file = write_file("fixed-later.json", adapter_case("fixed-later", "fixed",
        "test -e " + broken + " && exit 7; exec /usr/bin/python3 adapters/redis_py_lock.py"));
    write_text(broken, "");
    const fs::path out = dir() / "m";
    const Result first = run({"matrix", file.string(), "--repeat", "1", "--out", out.string()});
    ASSERT_EQ(first.exit_code(), 3) << first.describe();
    fs::remove(broken);
    const Result again = run({"matrix", file.string(), "--repeat", "1", "--out", out.string()});
    ASSERT_EQ(again.exit_code(), 0) << again.describe();
    EXPECT_NE(again.err.find("fixed-later/fixed rep 1 is no evidence (it could not run): run again"), std::string::npos)
        << again.err;
    EXPECT_EQ(read_json(out / "cells" / "fixed-later" / "fixed" / "rep-0" / "summary.json").at("runs").size(), 1u);
}

// `check` on a whole matrix tree says what it is and what reads it (before: "no summary.json and
// runs/" where there is a summary.json).
TEST_F(MatrixTest, CheckOnAMatrixTreeSaysWhatToCheckInstead) {
    const fs::path out = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--repeat", "1", "--out", out.string()}).exit_code(), 0);
    ASSERT_TRUE(fs::exists(out / "summary.json"));
    expect_one_line_error(run({"check", out.string()}), "a matrix's results tree; check reads one repetition's folder");
    EXPECT_EQ(run({"check", (out / "cells" / kUnfenced / "rep-0").string()}).exit_code(), 0);
}

// A FIFO where a results file should be would block its reader for ever: check and report
// refuse it in one line (before: both blocked).
TEST_F(MatrixTest, AFifoInAResultsTreeIsRefusedNotWaitedOn) {
    const fs::path out = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--repeat", "1", "--out", out.string()}).exit_code(), 0);
    const fs::path rep = out / "cells" / kUnfenced / "rep-0";
    const fs::path history = rep / "runs" / "token-lua+ttl_ms=100" / "history" / "client-0.jsonl";
    ASSERT_TRUE(fs::exists(history)) << history;
    fs::remove(history);
    ASSERT_EQ(::mkfifo(history.c_str(), 0644), 0);
    expect_one_line_error(run({"check", rep.string()}), "not a regular file");
    expect_one_line_error(run({"report", out.string()}), "not a regular file");
}

TEST_F(MatrixTest, KilledMatrixResumesKeepingDoneRepetitions) {
    const fs::path out = dir() / "m";
    const std::vector<std::string> args{"matrix", kTiny.string(), "--repeat", "3", "--out", out.string()};
    const fs::path first_rep = out / "cells" / kUnfenced / "rep-0" / "summary.json";
    {
        auto tool = start(args);
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (!fs::exists(first_rep) && tool->running() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(10ms);
        ASSERT_TRUE(fs::exists(first_rep)) << tool->finish(1s).describe();
        ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
        tool->finish(10s);
    }
    int done_before = 0;
    for (const auto& e : fs::recursive_directory_iterator(out / "cells"))
        if (e.path().filename() == "summary.json") ++done_before;
    ASSERT_LT(done_before, 6) << "the matrix finished before it could be killed";
    const auto inode = [](const fs::path& p) {
        struct stat st {};
        return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
    };
    const auto first_inode = inode(first_rep);
    const std::string first_text = read_text(first_rep);

    const Result r = run(args);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.err.find(std::to_string(done_before) + " repetitions already done are kept"), std::string::npos) << r.err;
    EXPECT_EQ(inode(first_rep), first_inode) << "a done repetition was run again";
    EXPECT_EQ(read_text(first_rep), first_text);
    const Json summary = read_json(out / "summary.json");
    for (const auto& c : summary.at("cells")) EXPECT_EQ(c.at("reps_done"), 3) << c.at("id");
    // Nothing left half-done: no staging folders.
    for (const auto& e : fs::recursive_directory_iterator(out))
        EXPECT_EQ(e.path().filename().string().find(".incomplete."), std::string::npos) << e.path();
}

TEST_F(MatrixTest, TwoShardsMergeIntoTheWholeAndOtherSpecsAreRefused) {
    const fs::path a = dir() / "shard0", b = dir() / "shard1", merged = dir() / "merged";
    const Result r0 = run({"matrix", kTiny.string(), "--shard", "0/2", "--out", a.string()});
    ASSERT_EQ(r0.exit_code(), 0) << r0.describe();
    const Result r1 = run({"matrix", kTiny.string(), "--shard", "1/2", "--out", b.string()});
    ASSERT_EQ(r1.exit_code(), 0) << r1.describe();
    // Each shard ran only its own cells (index modulo 2).
    EXPECT_EQ(cell(read_json(a / "summary.json"), kUnfenced).at("reps_done"), 1);
    EXPECT_EQ(cell(read_json(a / "summary.json"), kFenced).at("reps_done"), 0);
    EXPECT_EQ(cell(read_json(b / "summary.json"), kUnfenced).at("reps_done"), 0);
    EXPECT_EQ(cell(read_json(b / "summary.json"), kFenced).at("reps_done"), 1);

    const Result m = run({"merge", merged.string(), a.string(), b.string()});
    ASSERT_EQ(m.exit_code(), 0) << m.describe();
    const Json summary = read_json(merged / "summary.json");
    for (const auto& c : summary.at("cells")) EXPECT_TRUE(c.at("complete").get<bool>()) << c.at("id");
    EXPECT_EQ(read_text(merged / "cells" / kUnfenced / "rep-0" / "summary.json"),
              read_text(a / "cells" / kUnfenced / "rep-0" / "summary.json"));
    EXPECT_EQ(read_text(merged / "cells" / kFenced / "rep-0" / "summary.json"),
              read_text(b / "cells" / kFenced / "rep-0" / "summary.json"));
    EXPECT_EQ(read_json(merged / "lockbench-results.json").at("spec_id"),
              read_json(a / "lockbench-results.json").at("spec_id"));

    // A shard of another spec (two repetitions instead of one) does not merge.
    const fs::path other = dir() / "other";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--repeat", "2", "--algorithm", "token-lua+ttl_ms=100+fence", "--out",
                   other.string()}).exit_code(), 0);
    const Result bad = run({"merge", (dir() / "merged2").string(), a.string(), other.string()});
    expect_one_line_error(bad, "another spec");
    EXPECT_FALSE(fs::exists(dir() / "merged2"));
    // Nor does a matrix of another spec resume into a tree.
    expect_one_line_error(run({"matrix", kTiny.string(), "--repeat", "2", "--out", a.string()}), "another matrix");
}

// One shard of two, simulated: its tree holds the unfenced cell and not the fenced one.
TEST_F(MatrixTest, MergeOfAnIncompleteSetIsRefusedUnlessAllowedAndThenRecordsWhatIsMissing) {
    const fs::path a = dir() / "shard0", merged = dir() / "merged";
    const Result r0 = run({"matrix", kTiny.string(), "--backend", "sim", "--shard", "0/2", "--out", a.string()});
    ASSERT_EQ(r0.exit_code(), 0) << r0.describe();

    // Without the other shard: refused in one line that counts what is missing and names the
    // shard to run again; nothing is written.
    const Result refused = run({"merge", merged.string(), a.string()});
    expect_one_line_error(refused, "1 of 2 cells are missing repetitions");
    EXPECT_NE(refused.err.find(kFenced + " has 0 of 1"), std::string::npos) << refused.describe();
    EXPECT_NE(refused.err.find("shard 1 of 2"), std::string::npos) << refused.describe();
    EXPECT_NE(refused.err.find("--allow-incomplete"), std::string::npos) << refused.describe();
    EXPECT_FALSE(fs::exists(merged));

    // Asked to accept it: merged, and the summary lists the cell that did not run.
    const Result allowed = run({"merge", "--allow-incomplete", merged.string(), a.string()});
    ASSERT_NE(allowed.exit_code(), 2) << allowed.describe();
    EXPECT_NE(allowed.err.find("1 of 2 cells complete; 1 incomplete"), std::string::npos) << allowed.describe();
    const Json summary = read_json(merged / "summary.json");
    EXPECT_EQ(summary.at("incomplete_cells"), Json::array({kFenced})) << summary.dump(2);
    EXPECT_EQ(cell(summary, kFenced).at("reps_done"), 0);
    EXPECT_EQ(cell(summary, kUnfenced).at("reps_done"), 1);
}

// The Slurm jobs of scripts/slurm/, run by hand as a Slurm node would run them (a task is the
// script with SLURM_ARRAY_TASK_ID set): with one task missing the merge job refuses and names
// the --rerun that fixes it; with both, it merges and writes the report.
TEST_F(MatrixTest, SlurmJobsMergeOnlyAWholeSetAndSayWhichTaskToRunAgain) {
    const fs::path slurm = fs::path(LOCKBENCH_SOURCE_DIR) / "scripts" / "slurm", out = dir() / "big";
    const auto job = [&](const std::string& script, std::vector<std::string> args, const std::string& task) {
        ToolOptions o;
        o.program = "/bin/bash";
        o.set_env = {{"LOCKBENCH", LOCKBENCH_BINARY}, {"SLURM_ARRAY_TASK_ID", task}};
        args.insert(args.begin(), (slurm / script).string());
        return run(args, o);
    };
    const std::vector<std::string> shard_args{out.string(), "2", "matrix", kTiny.string(), "--backend", "sim"};
    const Result t0 = job("shard.sbatch", shard_args, "0");
    ASSERT_EQ(t0.exit_code(), 0) << t0.describe();
    const Result refused = job("merge.sbatch", {out.string()}, "");
    EXPECT_EQ(refused.exit_code(), 2) << refused.describe();
    EXPECT_NE(refused.err.find("submit --rerun 1 " + out.string()), std::string::npos) << refused.describe();
    EXPECT_FALSE(fs::exists(out / "merged"));

    const Result t1 = job("shard.sbatch", shard_args, "1");
    ASSERT_EQ(t1.exit_code(), 0) << t1.describe();
    const Result merged = job("merge.sbatch", {out.string()}, "");
    ASSERT_EQ(merged.exit_code(), 0) << merged.describe();
    EXPECT_EQ(read_json(out / "merged" / "summary.json").at("incomplete_cells"), Json::array());
    EXPECT_TRUE(fs::is_regular_file(out / "merged" / "report.html"));
}

TEST_F(MatrixTest, SweepChangesTheFieldAtEveryStep) {
    const fs::path out = dir() / "s";
    const Result r = run({"sweep", kTiny.string(), "--param", "faults.0.duration_ms=50..250", "--steps", "3",
                          "--algorithm", "token-lua+ttl_ms=100", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json summary = read_json(out / "summary.json");
    EXPECT_EQ(summary.at("kind"), "sweep");
    EXPECT_EQ(summary.at("sweep").at("values"), Json::parse("[50, 150, 250]"));
    ASSERT_EQ(summary.at("cells").size(), 3u);
    for (int step = 0; step < 3; ++step) {
        const Json& c = summary.at("cells").at(step);
        EXPECT_EQ(c.at("step"), step);
        // The run really had that pause: its scenario and its fault log say so.
        const fs::path rep = out / c.at("reps").at(0).at("dir").get<std::string>();
        EXPECT_EQ(read_json(rep / "scenario.json").at("faults").at(0).at("duration_ms"), c.at("value"));
    }
    // A 50 ms pause leaves the 100 ms lease valid; 150 and 250 ms outlast it.
    EXPECT_EQ(summary.at("cells").at(0).at("aggregate").at("violations").at("total"), 0);
    EXPECT_GT(summary.at("cells").at(1).at("aggregate").at("violations").at("total").get<double>(), 0);
    EXPECT_GT(summary.at("cells").at(2).at("aggregate").at("violations").at("total").get<double>(), 0);
}

TEST_F(MatrixTest, BadInputIsOneLineAndWritesNothing) {
    const fs::path out = dir() / "out";
    expect_one_line_error(run({"sweep", kTiny.string(), "--param", "faults.3.duration_ms=1..2", "--steps", "2", "--out",
                               out.string()}),
                          "no element 3");
    expect_one_line_error(run({"sweep", kTiny.string(), "--param", "workload.clients", "--steps", "2", "--out",
                               out.string()}),
                          "PATH=FROM..TO");
    expect_one_line_error(run({"sweep", kTiny.string(), "--param", "workload.clients=0..2", "--steps", "3", "--out",
                               out.string()}),
                          "workload.clients");
    expect_one_line_error(run({"matrix", kTiny.string(), "--shard", "2/2", "--out", out.string()}), "--shard 2/2");
    expect_one_line_error(run({"matrix", kTiny.string(), "--repeat", "0", "--out", out.string()}), "--repeat 0");
    // Bounds checked before anything is written (before, 2^31 - 1 repetitions ran silently and NaN
    // was a budget).
    expect_one_line_error(run({"matrix", kTiny.string(), "--repeat", "2147483647", "--out", out.string()}), "--repeat");
    expect_one_line_error(run({"matrix", kTiny.string(), "--time-budget-s", "nan", "--out", out.string()}),
                          "--time-budget-s");
    expect_one_line_error(run({"sweep", kTiny.string(), "--param", "faults.0.duration_ms=1..2", "--steps", "2",
                               "--time-budget-s", "inf", "--out", out.string()}),
                          "--time-budget-s");
    expect_one_line_error(run({"matrix", kTiny.string(), "--algorithm", "nosuch", "--out", out.string()}),
                          "--algorithm nosuch");
    EXPECT_FALSE(fs::exists(out));
    write_file("notes.txt", "mine");
    expect_one_line_error(run({"matrix", kTiny.string(), "--out", dir().string()}), "not a lockbench results tree");
    expect_one_line_error(run({"merge", (dir() / "m").string(), dir().string()}), "not a lockbench results tree");
}

// The report of a matrix and a sweep, side by side in one folder as scripts/run leaves them.
class ReportTest : public MatrixTest {
protected:
    Result report(const fs::path& folder) { return run({"report", folder.string()}); }

    // A refused report: exit 2, no traceback, and one line of error; the only other lines are
    // its progress ("report: drawing ...") up to the point where it found the damage.
    static void expect_refused(const Result& r, const std::string& piece) {
        EXPECT_EQ(r.exit_code(), 2) << r.describe();
        EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.describe();
        std::vector<std::string> errors;
        for (const auto& line : lines_of(r.err))
            if (!line.starts_with("report: ")) errors.push_back(line);
        ASSERT_EQ(errors.size(), 1u) << r.describe();
        EXPECT_TRUE(errors[0].starts_with("lockbench report: ")) << r.describe();
        EXPECT_NE(errors[0].find(piece), std::string::npos) << "the error should mention " << piece << "\n"
                                                            << r.describe();
    }

    static std::set<std::string> files_in(const fs::path& folder) {
        std::set<std::string> names;
        if (fs::is_directory(folder))
            for (const auto& e : fs::directory_iterator(folder)) names.insert(e.path().filename().string());
        return names;
    }
};

TEST_F(ReportTest, DrawsEveryFigureIntoOnePageThatOpensInChromium) {
    const fs::path results = dir() / "results";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--out", (results / "m").string()}).exit_code(), 0);
    ASSERT_EQ(run({"sweep", kTiny.string(), "--param", "faults.0.duration_ms=50..250", "--steps", "3", "--algorithm",
                   "token-lua+ttl_ms=100", "--algorithm", "token-lua+ttl_ms=100+fence", "--out",
                   (results / "s").string()})
                  .exit_code(),
              0);
    const Result r = report(results);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();

    const std::string page = read_text(results / "report.html");
    const std::string md = read_text(results / "report.md");
    ASSERT_FALSE(md.empty());
    // Self-contained: every image is a data URI, nothing is fetched from elsewhere.
    size_t images = 0;
    for (size_t at = page.find("<img"); at != std::string::npos; at = page.find("<img", at + 1)) {
        ++images;
        EXPECT_EQ(page.compare(page.find("src=", at), 27, "src=\"data:image/png;base64,"), 0)
            << page.substr(at, 80);
    }
    // The four kinds of figure, from the real runs: the verdict matrix of each tree, the
    // timeline of the unfenced cell's violation, latency and throughput of the scenario, the
    // sweep's phase diagram.
    const auto pngs = files_in(results / "report-images");
    EXPECT_EQ(pngs.size(), images);
    for (const std::string name :
         {"m-verdict-matrix.png", "m-latency-tiny-pause.png", "m-throughput-tiny-pause.png", "s-phase.png"})
        EXPECT_TRUE(pngs.contains(name)) << name << " missing; report-images holds " << ::testing::PrintToString(pngs);
    EXPECT_TRUE(std::any_of(pngs.begin(), pngs.end(), [](const std::string& n) {
        return n.starts_with("m-timeline-") && n.find("fence") == std::string::npos;
    })) << ::testing::PrintToString(pngs);
    // Every image is embedded in the page and also linked from the Markdown.
    for (const auto& name : pngs) EXPECT_NE(md.find("report-images/" + name), std::string::npos) << name;
    // Per-scenario text names what was injected and which algorithms held.
    EXPECT_NE(page.find("tiny-pause"), std::string::npos);
    EXPECT_NE(md.find("token-lua+ttl_ms=100+fence"), std::string::npos);
    // The families side by side: the scenario's row says what single Redis came to, with and
    // without the fence, and "—" where no run of a family took part.
    const std::vector<std::string> md_lines = lines_of(md);
    const auto row = std::ranges::find_if(md_lines, [](const std::string& l) { return l.starts_with("| tiny-pause |"); });
    ASSERT_NE(row, md_lines.end()) << md;
    EXPECT_EQ(*row, "| tiny-pause | 2 holders; fenced: stale write refused | — | — | — |");

    // A real browser: it opens, every image loads, nothing sticks out of a 1280-px window.
    ToolOptions py;
    py.program = "/usr/bin/python3";
    const Result check = run({(fs::path(LOCKBENCH_SOURCE_DIR) / "tests" / "report_browser_check.py").string(),
                              (results / "report.html").string()},
                             py);
    EXPECT_EQ(check.exit_code(), 0) << check.describe();
    EXPECT_NE(check.out.find("OK "), std::string::npos) << check.describe();
    EXPECT_NE(check.out.find(std::to_string(images) + " images loaded"), std::string::npos) << check.describe();
}

// resource-check in the simulator: the report sets the store's checks side by side, one row
// per case, and says in which reps each check let the stale write through.
// The catalog's resource-check, plus a run that differs from before-enter+token in a setting
// other than the check (the careful client, which does not write once its lease is gone): it
// compares with nothing, and must not stand in for before-enter+token in that row.
TEST_F(ReportTest, RunsThatDifferOnlyInTheStoresCheckAreComparedInOneTable) {
    const fs::path results = dir() / "results";
    // The case with one more variant, alike but for the length of one pause: compared with nothing.
    Json resource_check = read_json(fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios" / "resource-check.json");
    Json longer = resource_check.at("variants").at(2);
    ASSERT_EQ(longer.at("name"), "before-enter");
    longer["name"] = "before-enter-longer";
    longer["faults"][0]["duration_ms"] = 1400;
    resource_check["variants"].push_back(longer);
    const fs::path scenario = write_file("resource-check.json", resource_check.dump());
    ASSERT_EQ(run({"matrix", scenario.string(), "--lock", "token-lua+fence", "--backend", "sim", "--out", (results / "m").string()})
                  .exit_code(), 0);
    const Result r = report(results);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::vector<std::string> md = lines_of(read_text(results / "report.md"));
    EXPECT_NE(std::ranges::find(md, "| case | check none | check fence | check token |"), md.end());
    const auto row = [&](const std::string& name) {
        const auto it = std::ranges::find_if(md, [&](const std::string& l) {
            return l.starts_with("| resource-check: token-lua+fence@" + name + " |");
        });
        return it == md.end() ? std::string() : *it;
    };
    const auto cells = [](const std::string& line) {  // the three checks' cells, in order
        std::vector<std::string> out;
        for (size_t at = line.find(" | "); at != std::string::npos; at = line.find(" | ", at + 1))
            out.push_back(line.substr(at + 3, line.find(" |", at + 3) - at - 3));
        return out;
    };
    const std::vector<std::string> write = cells(row("before-write")), enter = cells(row("before-enter"));
    ASSERT_EQ(write.size(), 3u) << row("before-write");
    ASSERT_EQ(enter.size(), 3u) << row("before-enter");
    EXPECT_TRUE(write[0].starts_with("stale accepted in 1/1, refused 0 stale writes,")) << write[0];
    EXPECT_TRUE(write[1].starts_with("stale accepted in 0/1, refused 1 stale write,")) << write[1];
    EXPECT_TRUE(write[2].starts_with("stale accepted in 0/1, refused 1 stale write,")) << write[2];
    // Before-enter: the fence refuses the stale write, check-and-set accepts it and refuses the
    // lock's current holder's, as the lock server says right after (how many writes each
    // refuses is the case's, not the table's).
    EXPECT_TRUE(enter[1].starts_with("stale accepted in 0/1, refused ") &&
                !enter[1].starts_with("stale accepted in 0/1, refused 0 ") && enter[1].find("holder") == std::string::npos)
        << enter[1];
    EXPECT_TRUE(enter[2].starts_with("stale accepted in 1/1, refused 0 stale writes and ") &&
                enter[2].find(" holder's write") != std::string::npos)
        << enter[2];
    EXPECT_EQ(row("before-enter-longer"), "") << "a run alone with its settings is compared with nothing";
}

// A matrix and a sweep merged from one shard of two (--allow-incomplete): the fenced variant
// never ran, and the report says so and nothing else about it.
TEST_F(ReportTest, CellsThatNeverRanAreShownAsNotRunAndNoFindingSpeaksForThem) {
    const fs::path shards = dir() / "shards", results = dir() / "results";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--backend", "sim", "--shard", "0/2", "--out", (shards / "m").string()})
                  .exit_code(),
              0);
    // Cells by step, then run: 0 and 2 are the unfenced line, 1 and 3 the fenced one.
    ASSERT_EQ(run({"sweep", kTiny.string(), "--param", "faults.0.duration_ms=50..250", "--steps", "2", "--backend", "sim",
                   "--shard", "0/2", "--out", (shards / "s").string()})
                  .exit_code(),
              0);
    for (const char* name : {"m", "s"})
        ASSERT_NE(run({"merge", "--allow-incomplete", (results / name).string(), (shards / name).string()}).exit_code(), 2);
    const Result r = report(results);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::string md = read_text(results / "report.md");
    const size_t from = md.find("## Findings"), to = md.find("## How to read");
    ASSERT_TRUE(from != std::string::npos && to != std::string::npos) << md;
    const std::string findings = md.substr(from, to - from);
    EXPECT_EQ(findings.find("token-lua+fence never violated"), std::string::npos) << findings;
    EXPECT_NE(findings.find("token-lua+fence not run"), std::string::npos) << findings;
    EXPECT_NE(findings.find("Not run (no repetition, so nothing is said of it): token-lua+fence"), std::string::npos)
        << findings;
    // The cover counts what is missing, and the verdict matrices show those cells as not run.
    EXPECT_NE(md.find("INCOMPLETE: m lacks repetitions in 1 of 2 cells"), std::string::npos) << md;
    EXPECT_NE(md.find("INCOMPLETE: s lacks repetitions in 2 of 4 cells"), std::string::npos) << md;
    size_t not_run = 0;
    for (const auto& line : lines_of(md))
        if (line.starts_with("| token-lua+fence |")) {
            EXPECT_EQ(line.find("safe"), std::string::npos) << line;
            not_run += line.find("not run") != std::string::npos ? 1 : 0;
        }
    EXPECT_EQ(not_run, 2u) << md;
}

TEST_F(ReportTest, BadResultsAreOneLineAndLeaveThePreviousReport) {
    // Not a results folder at all.
    fs::create_directories(dir() / "empty");
    expect_refused(report(dir() / "empty"), "empty");
    EXPECT_TRUE(files_in(dir() / "empty").empty());
    expect_refused(report(dir() / "nosuch"), "nosuch");

    // A good report first, then damage under it.
    const fs::path results = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--out", results.string()}).exit_code(), 0);
    ASSERT_EQ(report(results).exit_code(), 0);
    const std::string html_before = read_text(results / "report.html");
    const std::string md_before = read_text(results / "report.md");
    const auto images_before = files_in(results / "report-images");
    auto unchanged = [&] {
        EXPECT_EQ(read_text(results / "report.html"), html_before);
        EXPECT_EQ(read_text(results / "report.md"), md_before);
        EXPECT_EQ(files_in(results / "report-images"), images_before);
        for (const auto& n : files_in(results)) EXPECT_FALSE(n.starts_with(".report.tmp")) << n;
    };

    // A history line cut in half, as a crash mid-write would leave it.
    const Json summary = read_json(results / "summary.json");
    const fs::path rep = results / cell(summary, kUnfenced).at("reps").at(0).at("dir").get<std::string>();
    std::map<fs::path, std::string> histories;
    for (const auto& e : fs::recursive_directory_iterator(rep))
        if (e.path().parent_path().filename() == "history") histories[e.path()] = read_text(e.path());
    ASSERT_FALSE(histories.empty()) << "no history/ under " << rep;
    for (const auto& [path, text] : histories)
        write_text(path, text + text.substr(0, text.find('\n') / 2) + "\n");
    expect_refused(report(results), "history/client-");
    unchanged();
    for (const auto& [path, text] : histories) write_text(path, text);

    // A results tree from a newer version of lockbench.
    const std::string good_header = read_text(results / "lockbench-results.json");
    Json header = Json::parse(good_header);
    const int newer = header.at("version").get<int>() + 1;  // one past this lockbench's
    header["version"] = newer;
    write_text(results / "lockbench-results.json", header.dump());
    expect_refused(report(results), "version " + std::to_string(newer));
    unchanged();
    write_text(results / "lockbench-results.json", good_header);
    EXPECT_EQ(report(results).exit_code(), 0);
}

// Makes `tree` look as an older lockbench left it: version `version`, no sections.json.
void make_older(const fs::path& tree, int version) {
    for (const char* file : {"lockbench-results.json", "summary.json"}) {
        Json j = read_json(tree / file);
        j["version"] = version;
        write_text(tree / file, j.dump());
    }
    for (const auto& [path, text] : sections_files(tree)) fs::remove(path);
}

// A version 2 tree (before each run's sections.json) is refused by the report and by a
// matrix in one line naming `lockbench check TREE --write`, which writes what a run of this
// version writes (the same bytes) and marks the tree version 6, the oldest both take (its
// histories are not rewritten: version 7 differs only in how they record a release that did
// not say what it removed). A tree continued at 6 stays 6.
TEST_F(ReportTest, AnOlderTreeIsRefusedUntilCheckWritesWhatTheReportReads) {
    const fs::path tree = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--backend", "sim", "--out", tree.string()}).exit_code(), 0);
    const auto written = sections_files(tree);
    ASSERT_EQ(written.size(), 2u);  // one run in each of the two cells' repetition
    EXPECT_EQ(read_json(tree / "lockbench-results.json").at("version"), 7);  // a new tree: this version
    make_older(tree, 2);

    const std::string command = "lockbench check " + tree.string() + " --write";
    expect_refused(report(tree), command);
    const Result resumed = run({"matrix", kTiny.string(), "--backend", "sim", "--out", tree.string()});
    expect_one_line_error(resumed, command);

    const Result fixed = run({"check", tree.string(), "--write"});
    ASSERT_EQ(fixed.exit_code(), 0) << fixed.describe();
    EXPECT_EQ(sections_files(tree), written);
    EXPECT_EQ(read_json(tree / "lockbench-results.json").at("version"), 6);
    EXPECT_EQ(read_json(tree / "summary.json").at("version"), 6);
    const Result drawn = report(tree);
    EXPECT_EQ(drawn.exit_code(), 0) << drawn.describe();
    const Result continued = run({"matrix", kTiny.string(), "--backend", "sim", "--out", tree.string()});
    EXPECT_EQ(continued.exit_code(), 0) << continued.describe();
    EXPECT_EQ(read_json(tree / "lockbench-results.json").at("version"), 6);
    EXPECT_EQ(read_json(tree / "summary.json").at("version"), 6);
}

// A version 1 tree whose figures an older checker computed differently: `check --write` says
// which figure differs and writes nothing (the tree is made afresh instead).
TEST_F(ReportTest, CheckWritesNothingIntoATreeWhoseFiguresDiffer) {
    const fs::path tree = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--backend", "sim", "--out", tree.string()}).exit_code(), 0);
    make_older(tree, 1);
    const Json cells = read_json(tree / "summary.json").at("cells");
    const fs::path rep_summary = tree / cells.at(0).at("reps").at(0).at("dir").get<std::string>() / "summary.json";
    Json rep = read_json(rep_summary);
    rep["runs"][0]["safety"]["lost_updates"] = 7;
    write_text(rep_summary, rep.dump());

    const Result r = run({"check", tree.string(), "--write"});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.out.find("safety.lost_updates: summary.json has 7"), std::string::npos) << r.describe();
    EXPECT_NE(r.out.find("nothing written"), std::string::npos) << r.describe();
    EXPECT_TRUE(sections_files(tree).empty());
    EXPECT_EQ(read_json(tree / "lockbench-results.json").at("version"), 1);
    // The report still names the command; the command names the figure.
    expect_refused(report(tree), "--write");
}

// What `lockbench check` refuses, `report` refuses before drawing anything: a store log
// emptied, a run.json that is not one, a figure summary.json holds that its histories do not
// give. The simulator makes the tree (no Redis needed).
TEST_F(ReportTest, RefusesWhatCheckRefusesAndLeavesThePreviousReport) {
    const fs::path results = dir() / "m";
    ASSERT_EQ(run({"matrix", kTiny.string(), "--backend", "sim", "--out", results.string()}).exit_code(), 0);
    ASSERT_EQ(report(results).exit_code(), 0);
    const std::string md_before = read_text(results / "report.md");
    const Json summary = read_json(results / "summary.json");
    const fs::path rep = results / cell(summary, kUnfenced).at("reps").at(0).at("dir").get<std::string>();
    const fs::path run_dir = rep / "runs" / "token-lua+ttl_ms=100";
    ASSERT_EQ(run({"check", rep.string()}).exit_code(), 0);

    const std::string store = read_text(run_dir / "store.jsonl");
    write_text(run_dir / "store.jsonl", "");
    expect_refused(report(results), (run_dir / "store.jsonl").string());
    EXPECT_EQ(read_text(results / "report.md"), md_before);
    write_text(run_dir / "store.jsonl", store);

    const std::string record = read_text(run_dir / "run.json");
    write_text(run_dir / "run.json", "{\"final_counter\": ");
    expect_refused(report(results), (run_dir / "run.json").string());
    EXPECT_EQ(read_text(results / "report.md"), md_before);
    write_text(run_dir / "run.json", record);

    const std::string rep_summary = read_text(rep / "summary.json");
    Json changed = Json::parse(rep_summary);
    changed["runs"][0]["safety"]["lost_updates"] = 12345;
    write_text(rep / "summary.json", changed.dump());
    expect_refused(report(results), "safety.lost_updates: summary.json has 12345");
    EXPECT_EQ(read_text(results / "report.md"), md_before);
    write_text(rep / "summary.json", rep_summary);
    EXPECT_EQ(report(results).exit_code(), 0);
}

}  // namespace
