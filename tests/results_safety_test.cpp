// Results folders that never lose a result, on the real binary (LOCKBENCH_BINARY):
//
//   one writer ...... while a matrix writes a folder, a second matrix, sweep, run, merge,
//                     report or explore on it is refused in one line; a killed writer does
//                     not leave the folder locked; temporary files are unique per writer
//   publishing ...... a run stopped at each step of publishing (LOCKBENCH_TEST_EXIT_AT, see
//                     sim/harness/results_folder.h) leaves the old results or the new ones, whole,
//                     and the next run into the folder works
//   a bad TMPDIR .... one line naming TMPDIR, and nothing left in --out
//   a server that will not start: the error quotes its log, and names no deleted file
//   the adapter check: a child like every other (its own process group, no inherited
//                     socket, ended by Ctrl-C)
#include "cli_util.h"

namespace {

using Json = nlohmann::json;

Json read_json(const fs::path& p) {
    std::ifstream in(p);
    return Json::parse(in);
}

const std::string kTiny = R"({"name": "safety", "seed": 7, "workload": {"clients": 2, "duration_ms": 300,
    "work_ms": {"uniform": [0.5, 2]}, "retry_ms": {"uniform": [1, 3]}},
    "runs": [{"algorithm": "token-lua", "name": "tiny"}]})";

class SafetyTest : public CliTest {
protected:
    // A run's results folder, whole: its summary, and every run it names with its record and
    // history, and `check` reads it. Returns the summary's seed (0 if it is not whole).
    std::uint64_t whole_run_folder(const fs::path& out) {
        if (!fs::is_regular_file(out / "summary.json")) {
            ADD_FAILURE() << out << " holds no summary.json";
            return 0;
        }
        const Json summary = read_json(out / "summary.json");
        EXPECT_FALSE(summary.at("runs").empty());
        for (const auto& run : summary.at("runs")) {
            const fs::path run_dir = out / run.at("run_dir").get<std::string>();
            EXPECT_TRUE(fs::is_regular_file(run_dir / "run.json")) << run_dir;
            EXPECT_TRUE(fs::is_directory(run_dir / "history")) << run_dir;
        }
        EXPECT_TRUE(fs::is_regular_file(out / "scenario.json"));
        const Result check = run({"check", out.string()});
        EXPECT_TRUE(check.exit_code() == 0 || check.exit_code() == 1) << check.describe();
        return summary.at("seed").get<std::uint64_t>();
    }

    // Names in DIR (not below) that look like what a writer leaves while it works.
    std::vector<std::string> leftovers(const fs::path& where) {
        std::vector<std::string> found;
        for (const auto& e : fs::directory_iterator(where)) {
            const std::string n = e.path().filename().string();
            if (n.find(".incomplete.") != std::string::npos || n.find(".replaced.") != std::string::npos) found.push_back(n);
        }
        return found;
    }
};

// ---- One writer per folder -------------------------------------------------------------------

TEST_F(SafetyTest, ASecondWriterOfAFolderIsRefusedWhileTheFirstLives) {
    // A matrix whose one repetition lasts two minutes: alive for every check below.
    const fs::path file = write_file("long.json", R"({"name": "long", "seed": 1,
        "workload": {"clients": 1, "duration_ms": 120000}, "runs": [{"algorithm": "token-lua"}]})");
    const fs::path out = dir() / "results" / "m";
    auto first = start({"matrix", file.string(), "--out", out.string()});
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!fs::exists(out / "lockbench-results.json") && first->running() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(fs::exists(out / "lockbench-results.json")) << first->finish(1s).describe();
    const std::string in_use = "in use by another lockbench (pid " + std::to_string(first->pid()) + ")";

    const std::vector<std::vector<std::string>> seconds{
        {"matrix", file.string(), "--out", out.string()},
        {"sweep", file.string(), "--param", "workload.duration_ms=100..200", "--steps", "2", "--out", out.string()},
        {"run", file.string(), "--out", out.string()},
        {"merge", out.string(), (dir() / "elsewhere").string()},
        {"merge", (dir() / "merged").string(), out.string()},
        {"report", out.string()},
        {"report", (dir() / "results").string()},  // a folder of trees: it reads this one
        {"explore", file.string(), "--schedules", "1", "--out", out.string()}};
    for (const auto& args : seconds) {
        // A second writer that is not refused would run for two minutes: stop waiting well before.
        const Result r = start(args)->finish(20s);
        expect_one_line_error(r, in_use);
        EXPECT_NE(r.err.find(out.string()), std::string::npos) << r.describe();
    }
    EXPECT_TRUE(first->running()) << "the first writer ended before the checks were done";
    EXPECT_FALSE(fs::exists(dir() / "merged")) << "a refused merge made its output folder";
    EXPECT_NO_THROW(read_json(out / "lockbench-results.json"));

    // A writer killed with SIGKILL leaves no lock behind: the next one takes the folder (this
    // shard of the same matrix has no cells, so it ends at once).
    ASSERT_EQ(::kill(first->pid(), SIGKILL), 0);
    first->finish(10s);
    const Result next = run({"matrix", file.string(), "--shard", "1/2", "--out", out.string()});
    EXPECT_EQ(next.exit_code(), 0) << next.describe();
}

TEST_F(SafetyTest, TemporaryFilesAreUniquePerWriter) {
    // Another writer's temporary file under the shared name `<file>.tmp`, as two matrices
    // on one folder used to leave each other: the writer goes on with its own.
    const fs::path file = write_file("tiny.json", kTiny);
    const fs::path out = dir() / "m";
    ASSERT_EQ(run({"matrix", file.string(), "--backend", "sim", "--out", out.string()}).exit_code(), 0);
    const fs::path cell = out / "cells" / "safety" / "tiny";
    ASSERT_TRUE(fs::is_regular_file(cell / "cell.json"));
    fs::create_directories(out / "summary.json.tmp");
    fs::create_directories(cell / "cell.json.tmp");
    fs::remove_all(cell / "rep-0");
    const Result r = run({"matrix", file.string(), "--backend", "sim", "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_EQ(read_json(out / "summary.json").at("cells").at(0).at("reps_done"), 1);
    EXPECT_EQ(read_json(cell / "cell.json").at("reps_done"), 1);
}

// ---- Publishing ------------------------------------------------------------------------------

TEST_F(SafetyTest, ARunStoppedAtAnyStepOfPublishingLeavesTheOldResultsOrTheNew) {
    const fs::path file = write_file("tiny.json", kTiny);
    const fs::path out = dir() / "out";
    const auto run_seed = [&](int seed, const std::string& exit_at = "") {
        ToolOptions o;
        if (!exit_at.empty()) o.set_env["LOCKBENCH_TEST_EXIT_AT"] = exit_at;
        return run({"run", file.string(), "--backend", "sim", "--seed", std::to_string(seed), "--out", out.string()}, o);
    };

    // Stopped while publishing into a folder that held nothing: still nothing, or all of it.
    const Result fresh = run_seed(1, "publish-1");
    EXPECT_EQ(fresh.exit_code(), 86) << fresh.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json"));
    ASSERT_EQ(run_seed(1).exit_code(), 0);
    ASSERT_EQ(whole_run_folder(out), 1u);

    int seed = 1;
    for (const std::string step : {"publish-1", "publish-2", "publish-3"}) {
        const int old_seed = seed, new_seed = ++seed;
        const Result stopped = run_seed(new_seed, step);
        EXPECT_EQ(stopped.exit_code(), 86) << step << ": the test hook did not stop it\n" << stopped.describe();
        const std::uint64_t found = whole_run_folder(out);
        EXPECT_TRUE(found == static_cast<std::uint64_t>(old_seed) || found == static_cast<std::uint64_t>(new_seed))
            << step << ": seed " << found << ", expected " << old_seed << " or " << new_seed;
        // The next run into the folder works and leaves nothing of the stopped one behind.
        const Result next = run_seed(++seed);
        EXPECT_EQ(next.exit_code(), 0) << step << "\n" << next.describe();
        EXPECT_EQ(whole_run_folder(out), static_cast<std::uint64_t>(seed)) << step;
        EXPECT_TRUE(leftovers(dir()).empty()) << step << ": " << leftovers(dir()).front();
        EXPECT_TRUE(leftovers(out).empty()) << step << ": " << leftovers(out).front();
    }
}

TEST_F(SafetyTest, ARunRefusesAFolderHoldingSomethingElse) {
    const fs::path file = write_file("tiny.json", kTiny);
    const fs::path out = dir() / "out";
    fs::create_directories(out);
    write_text(out / "notes.txt", "mine");
    const Result r = run({"run", file.string(), "--backend", "sim", "--out", out.string()});
    expect_one_line_error(r, "notes.txt");
    EXPECT_EQ(read_text(out / "notes.txt"), "mine");
}

// ---- A bad TMPDIR, a server that will not start ----------------------------------------------

TEST_F(SafetyTest, ABadTmpdirIsOneLineAndLeavesNothing) {
    const fs::path file = write_file("tiny.json", kTiny);
    const fs::path out = dir() / "out";
    ToolOptions bad;
    bad.set_env["TMPDIR"] = (dir() / "nowhere").string();
    const Result r = run({"run", file.string(), "--backend", "sim", "--out", out.string()}, bad);
    expect_one_line_error(r, "TMPDIR=" + (dir() / "nowhere").string());
    EXPECT_FALSE(fs::exists(out)) << "a failed first run left its folder";

    // Into a folder that holds results: they stay as they were, and nothing is added.
    ASSERT_EQ(run({"run", file.string(), "--backend", "sim", "--out", out.string()}).exit_code(), 0);
    const std::string before = read_text(out / "summary.json");
    expect_one_line_error(run({"run", file.string(), "--backend", "sim", "--seed", "9", "--out", out.string()}, bad),
                          "TMPDIR");
    EXPECT_EQ(read_text(out / "summary.json"), before);
    EXPECT_TRUE(leftovers(out).empty()) << leftovers(out).front();
    EXPECT_TRUE(leftovers(dir()).empty()) << leftovers(dir()).front();
}

TEST_F(SafetyTest, AServerThatWillNotStartIsQuotedNotPointedAt) {
    const fs::path server = write_file("redis-server", "#!/bin/sh\necho 'first complaint' >&2\n"
                                                       "echo 'FATAL: this server will not start' >&2\nexit 1\n");
    fs::permissions(server, fs::perms::owner_all);
    const fs::path file = write_file("tiny.json", kTiny);
    ToolOptions o;
    o.set_env["LOCKBENCH_REDIS_SERVER"] = server.string();
    const Result r = run({"run", file.string(), "--out", (dir() / "out").string()}, o);
    expect_one_line_error(r, "FATAL: this server will not start");
    EXPECT_NE(r.err.find("first complaint"), std::string::npos) << r.describe();
    // Any log it names must still be there to read.
    for (size_t at = r.err.find('/'); at != std::string::npos; at = r.err.find('/', at + 1)) {
        const size_t end = r.err.find_first_of(" ,;\n", at);
        const std::string path = r.err.substr(at, end - at);
        if (path.ends_with(".log")) {
            EXPECT_TRUE(fs::exists(path)) << "names a log that is gone: " << path;
        }
        if (end == std::string::npos) break;
        at = end;
    }
}

// ---- The adapter check -----------------------------------------------------------------------

class AdapterCheckTest : public SafetyTest {
protected:
    // An adapter that, as the one-off check before the run (LOCKBENCH_CLIENT=-1), writes its
    // pid, process group, parent and the sockets it inherited into probe.txt, then does `then`.
    fs::path scenario(const std::string& then) {
        const fs::path probe = dir() / "probe.txt";
        const fs::path adapter = write_file("adapter.sh", "#!/bin/sh\n"
            "[ \"$LOCKBENCH_CLIENT\" = -1 ] || exit 1\n"
            "sockets=$(ls -l /proc/$$/fd | grep -c 'socket:')\n"
            "echo \"$$ $(cut -d' ' -f5 /proc/$$/stat) $PPID $sockets\" > " + (probe.string() + ".part") + "\n"
            "mv " + probe.string() + ".part " + probe.string() + "\n" + then + "\n");
        // A link fault: the run has proxies, whose listening sockets lockbench holds.
        return write_file("ext.json", R"({"name": "ext", "seed": 1, "workload": {"clients": 2, "duration_ms": 500},
            "runs": [{"algorithm": "external", "name": "probe", "command": ["/bin/sh", ")" + adapter.string() + R"("],
                      "faults": [{"fault": "link", "at_ms": 100, "client": 0, "mode": "hold", "nodes": [0]}]}]})");
    }

    struct Probe {
        pid_t pid = 0, pgid = 0, ppid = 0;
        int sockets = -1;
    };

    Probe probe() {
        Probe p;
        std::istringstream in(read_text(dir() / "probe.txt"));
        in >> p.pid >> p.pgid >> p.ppid >> p.sockets;
        return p;
    }
};

TEST_F(AdapterCheckTest, RunsInItsOwnGroupAndInheritsNoSocket) {
    const Result r = run({"run", scenario(R"(echo '{"ready": false, "error": "probe done"}')").string(), "--out",
                          (dir() / "out").string()});
    expect_one_line_error(r, "run probe: adapter probe (/bin/sh ");
    EXPECT_NE(r.err.find("not ready: probe done"), std::string::npos) << r.describe();
    const Probe p = probe();
    ASSERT_GT(p.pid, 0) << read_text(dir() / "probe.txt");
    EXPECT_EQ(p.sockets, 0) << "the adapter check inherited lockbench's sockets";
    // Under the child-process code: a child of its own group leader, not of lockbench itself,
    // and in no group of ours.
    EXPECT_EQ(p.pgid, p.ppid) << "the adapter check is not in a process group of its own";
    EXPECT_NE(p.pgid, ::getpgrp());
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json"));
}

TEST_F(AdapterCheckTest, CtrlCEndsIt) {
    auto tool = start({"run", scenario("exec sleep 120").string(), "--out", (dir() / "out").string()});
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!fs::exists(dir() / "probe.txt") && tool->running() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    ASSERT_TRUE(fs::exists(dir() / "probe.txt")) << tool->finish(1s).describe();
    const Probe p = probe();
    const auto adapter = read_proc(p.pid);
    ASSERT_TRUE(adapter.has_value());
    EXPECT_EQ(p.pgid, p.ppid) << "the adapter check is not in a process group of its own";
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    tool->finish(10s);
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!gone(*adapter) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(gone(*adapter)) << "the adapter check outlived Ctrl-C";
}

}  // namespace
