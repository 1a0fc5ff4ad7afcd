// External lock libraries through the adapter protocol, on the real binary against live
// redis-server:
//
//   example ..... docs/adapters.md's minimal adapter is adapters/redis_py_lock.py, word for
//                 word, and it runs: a clean baseline under its own name, the library it reported
//   pause ....... a pause stops the client and its adapter together (both in state T), and
//                 a clock fault on the client has its shim loaded into the adapter
//   broken ...... an adapter that crashes, prints garbage or hangs is one line naming it and
//                 what it printed last; the client is recorded as failed, the run is not
//                 trusted (exit 1), and no adapter is left running
//   missing ..... an adapter that cannot start fails the run before it begins: one line
//   bad input ... "external" without a command, or a command elsewhere, is refused
//   matrix ...... the matrix gives each library its own row, by its name, beside the
//                 built-in algorithm; the report names both, and the crashed client
#include "cli_util.h"

namespace {

using Json = nlohmann::json;

const fs::path kSource = LOCKBENCH_SOURCE_DIR;
const std::string kRedisPy = R"("algorithm": "external", "name": "redis-py", "command": ["/usr/bin/python3", "adapters/redis_py_lock.py"])";

Json read_json(const fs::path& p) {
    std::ifstream in(p);
    return Json::parse(in);
}

class ExternalTest : public CliTest {
protected:
    fs::path scenario(const std::string& runs, const std::string& extra = "", int clients = 3, int duration_ms = 800) {
        return write_file("scenario.json", R"({"name": "ext", "seed": 3,)" + extra + R"( "workload": {"clients": )" +
                                               std::to_string(clients) + R"(, "duration_ms": )" +
                                               std::to_string(duration_ms) + R"(, "work_ms": {"uniform": [1, 3]}},
                                               "runs": [)" + runs + "]}");
    }

    // Pids the bad adapters wrote into our TMPDIR.
    std::vector<pid_t> bad_adapter_pids() {
        std::vector<pid_t> pids;
        for (const auto& e : fs::directory_iterator(dir() / "tmp"))
            if (e.path().filename().string().starts_with("bad-adapter."))
                pids.push_back(static_cast<pid_t>(std::stol(read_text(e.path()))));
        return pids;
    }
};

TEST_F(ExternalTest, ManualExampleIsTheShippedAdapterAndItRuns) {
    // The manual's code block under "A complete minimal adapter" is the file, line for line.
    const std::string readme = read_text(kSource / "docs" / "adapters.md");
    const std::string file = read_text(kSource / "adapters" / "redis_py_lock.py");
    const auto start = readme.find("```python\n#!/usr/bin/python3\n\"\"\"lockbench adapter for redis-py");
    ASSERT_NE(start, std::string::npos) << "docs/adapters.md should show adapters/redis_py_lock.py in a ```python block";
    const auto body = start + std::string("```python\n").size();
    EXPECT_EQ(readme.substr(body, readme.find("```\n", body) - body), file);

    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario("{" + kRedisPy + R"(, "expect": {"mutual_exclusion_violations": "== 0",
                                         "lost_updates": "== 0", "sections_completed": ">= 20"}})")
                                     .string(),
                          "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const Json run0 = read_json(out / "summary.json").at("runs").at(0);
    EXPECT_EQ(run0.at("name"), "redis-py");
    EXPECT_EQ(run0.at("algorithm"), "external");
    EXPECT_EQ(run0.at("command").at(1), "adapters/redis_py_lock.py");
    EXPECT_TRUE(run0.at("clients_failed").empty());
    // The library's tokens reached the history: redis-py's own uuid4 hex, 32 characters.
    const std::string history = read_text(out / "runs" / "redis-py" / "history" / "client-0.jsonl");
    const auto at = history.find("\"token\":\"");
    ASSERT_NE(at, std::string::npos) << history.substr(0, 400);
    EXPECT_EQ(history.find('"', at + 9) - (at + 9), 32u) << history.substr(at, 60);
    // Its release says where it removed the key (removed_on): the history keeps it.
    EXPECT_NE(history.find(R"("op":"release","type":"ok")"), std::string::npos);
    for (size_t p = history.find(R"("op":"release","type":"ok")"); p != std::string::npos;
         p = history.find(R"("op":"release","type":"ok")", p + 1))
        EXPECT_NE(history.substr(p, history.find('\n', p) - p).find(R"("nodes":[)"), std::string::npos);
}

TEST_F(ExternalTest, APauseStopsTheClientAndItsAdapterTogetherAndTheClockShimIsInBoth) {
    const fs::path s = scenario("{" + kRedisPy + R"(, "params": {"ttl_ms": 300}})",
                                R"( "faults": [{"fault": "pause", "point": "after_acquire", "client": 0, "duration_ms": 1500},
                                               {"fault": "clock", "at_ms": 0, "client": 0, "jump_ms": 2000}],)",
                                2, 2500);
    auto tool = start({"run", s.string(), "--out", (dir() / "out").string()});
    // lockbench → client (lockbench) → adapter (python3). Catch the paused client, then look
    // at its adapter.
    bool seen = false;
    std::vector<ProcInfo> adapters;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!seen && tool->running() && std::chrono::steady_clock::now() < deadline) {
        for (const auto& client : children_of(tool->pid())) {
            if (client.state != 'T') continue;
            EXPECT_NE(read_text("/proc/" + std::to_string(client.pid) + "/maps").find("clockshim"), std::string::npos);
            for (auto adapter : children_of(client.pid)) {
                if (adapter.comm.find("python") == std::string::npos) continue;
                // SIGSTOP to a group reaches its processes one by one: give it a moment.
                for (int i = 0; i < 50 && adapter.state != 'T'; ++i) {
                    std::this_thread::sleep_for(2ms);
                    if (const auto again = read_proc(adapter.pid)) adapter.state = again->state;
                }
                EXPECT_EQ(adapter.state, 'T') << "the adapter of a paused client should be stopped too";
                // The client's clock is skewed: the shim is loaded into its adapter too.
                const std::string maps = read_text("/proc/" + std::to_string(adapter.pid) + "/maps");
                EXPECT_NE(maps.find("clockshim"), std::string::npos) << "no clock shim in the adapter";
                adapters.push_back(adapter);
                seen = true;
            }
        }
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(seen) << "never saw the paused client with its adapter";
    const Result r = tool->finish();
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    for (const auto& a : adapters) EXPECT_TRUE(gone(a)) << "adapter " << a.pid << " outlived the run";
}

// Adapters that live across repetitions (sim/live/adapter_pool.h): a matrix keeps each
// client's adapter for the next repetition and resets it there; a pause of the client stops
// its pooled adapter too, a kill kills it (the next repetition starts another), and nothing
// is left when the matrix ends.
TEST_F(ExternalTest, AMatrixKeepsItsAdaptersAcrossRepetitionsAndFaultsReachThemWithTheirClient) {
    const fs::path paused = scenario("{" + kRedisPy + R"(, "params": {"ttl_ms": 300}})",
                                     R"( "faults": [{"fault": "pause", "point": "after_acquire", "client": 0, "duration_ms": 1500}],)",
                                     2, 2500);
    auto tool = start({"matrix", paused.string(), "--repeat", "3", "--out", (dir() / "paused").string()});
    // One at a time, the clients and the pool's adapters are all the matrix's children.
    bool seen = false;
    std::vector<ProcInfo> adapters;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (tool->running() && std::chrono::steady_clock::now() < deadline) {
        const std::vector<ProcInfo> kids = children_of(tool->pid());
        for (const ProcInfo& k : kids)
            if (k.comm.find("python") != std::string::npos &&
                std::ranges::none_of(adapters, [&](const ProcInfo& a) { return a.pid == k.pid && a.starttime == k.starttime; }))
                adapters.push_back(k);
        const bool client_paused = std::ranges::any_of(kids, [](const ProcInfo& k) {
            return k.comm.find("lockbench") != std::string::npos && k.state == 'T';
        });
        if (client_paused && !seen) {
            int stopped = 0, others = 0;
            for (int i = 0; i < 50 && stopped == 0; ++i) {  // SIGSTOP reaches a group's processes one by one
                stopped = others = 0;
                for (const ProcInfo& k : children_of(tool->pid()))
                    if (k.comm.find("python") != std::string::npos) (k.state == 'T' ? stopped : others) += 1;
                std::this_thread::sleep_for(2ms);
            }
            EXPECT_EQ(stopped, 1) << "the paused client's pooled adapter should be stopped, and only it";
            EXPECT_EQ(others, 1);
            seen = true;
        }
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(seen) << "never saw a paused client";
    const Result r = tool->finish();
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    // Two clients, three repetitions: two adapters did it all (the first repetition's check
    // alone starts its own, not the pool's).
    EXPECT_NE(r.err.find("adapters: 2 started, 4 reused"), std::string::npos) << r.err;
    EXPECT_EQ(adapters.size(), 2u);
    for (int rep = 0; rep < 3; ++rep) {
        const Json summary = read_json(dir() / "paused" / "cells" / "ext" / "redis-py" / ("rep-" + std::to_string(rep)) / "summary.json");
        EXPECT_TRUE(summary.at("runs").at(0).at("adapter").value("library", std::string()).starts_with("redis-py ")) << rep;
        EXPECT_EQ(summary.at("runs").at(0).at("faults").at(0).at("fired"), 1) << rep;
        EXPECT_EQ(summary.at("runs").at(0).at("clients_failed"), Json::array()) << rep;
    }
    for (const auto& a : adapters) EXPECT_TRUE(gone(a)) << "adapter " << a.pid << " outlived the matrix";

    // A killed client's adapter is not kept (the nemesis kills its group with the client's, and
    // the pool ends what a client that died did not give back): each repetition starts one more.
    const fs::path killed = scenario("{" + kRedisPy + R"(, "params": {"ttl_ms": 300}})",
                                     R"( "faults": [{"fault": "kill", "point": "after_acquire", "client": 0}],)", 2, 800);
    const Result k = run({"matrix", killed.string(), "--repeat", "3", "--out", (dir() / "killed").string()});
    ASSERT_EQ(k.exit_code(), 0) << k.describe();
    EXPECT_NE(k.err.find("adapters: 4 started, 2 reused"), std::string::npos) << k.err;
}

// An adapter that does not say it may be kept (no kept=True) refuses the reset at its run's
// end: it ends as without a pool, and from then on every client of that kind starts its own.
TEST_F(ExternalTest, AnAdapterThatCannotResetIsStartedAnewForEachRepetition) {
    const std::string source = read_text(kSource / "adapters" / "redis_py_lock.py");
    const std::string kept = ", kept=True)";
    ASSERT_NE(source.find(kept), std::string::npos);
    std::string no_close = source;
    no_close.replace(no_close.find(kept), kept.size(), ")");
    const fs::path adapter = write_file("no_close_adapter.py", no_close);
    const std::string run_spec = R"("algorithm": "external", "name": "no-close", "command": ["/usr/bin/python3", ")" +
                                 adapter.string() + R"("])";
    const Result m = run({"matrix", scenario("{" + run_spec + "}", "", 2, 300).string(), "--repeat", "3", "--out",
                          (dir() / "m").string()});
    ASSERT_EQ(m.exit_code(), 0) << m.describe();
    // The first repetition's two from the pool said so; the others' clients started their own.
    EXPECT_NE(m.err.find("adapters: 2 started, 0 reused, 2 could not be reset"), std::string::npos) << m.err;
    for (int rep = 0; rep < 3; ++rep) {
        const Json summary = read_json(dir() / "m" / "cells" / "ext" / "no-close" / ("rep-" + std::to_string(rep)) / "summary.json");
        EXPECT_TRUE(summary.at("runs").at(0).at("adapter").value("library", std::string()).starts_with("redis-py ")) << rep;
        EXPECT_EQ(summary.at("runs").at(0).at("clients_failed"), Json::array()) << rep;
    }
}

TEST_F(ExternalTest, BrokenAdaptersAreOneLineEachAndLeaveNothingRunning) {
    const std::string bad = (kSource / "tests" / "data" / "bad_adapter.py").string();
    std::string runs;
    for (const char* mode : {"crash", "garbage", "hang"})
        runs += std::string(runs.empty() ? "" : ",") + R"({"algorithm": "external", "name": ")" + mode +
                R"(", "command": ["/usr/bin/python3", ")" + bad + R"(", ")" + mode + R"("]})";
    const fs::path out = dir() / "out";
    // One command timeout of 30 ms: the adapter's budget is 300 ms, and a hung one is given three.
    const Result r = run({"run", scenario(runs, R"( "client": {"command_timeout_ms": 30},)", 2).string(), "--out",
                          out.string()});
    EXPECT_EQ(r.exit_code(), 1) << "a run whose clients failed is not trusted\n" << r.describe();
    const Json summary = read_json(out / "summary.json");
    const std::map<std::string, std::string> expected = {
        {"crash", "exited with status 3 while lockbench waited for its answer to acquire; the last thing it printed: about to crash"},
        {"garbage", "answered acquire with something that is not the protocol (expected {\"ok\": true|false, ...}); the last thing it printed: hello, I am not JSON"},
        {"hang", "no answer within 900 ms (waiting for its answer to acquire); the last thing it printed: {\"ready\": true, \"library\": \"bad hang\"}"}};
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        EXPECT_FALSE(run.at("expectations_held").get<bool>()) << name;
        ASSERT_EQ(run.at("clients_failed").size(), 2u) << name << ": " << run.dump(2);
        for (const auto& f : run.at("clients_failed")) {
            const std::string error = f.at("error");
            EXPECT_TRUE(error.starts_with("adapter " + name + " (/usr/bin/python3 " + bad + " " + name + "): ")) << error;
            EXPECT_TRUE(error.ends_with(expected.at(name))) << error;
            EXPECT_EQ(error.find('\n'), std::string::npos);
            // The client said so on stderr, one line each.
            EXPECT_NE(r.err.find(error), std::string::npos) << r.err;
        }
    }
    // Three runs: a preflight adapter and two clients' adapters each, none left.
    const auto pids = bad_adapter_pids();
    EXPECT_EQ(pids.size(), 9u);
    for (pid_t pid : pids) {
        const auto p = read_proc(pid);
        EXPECT_TRUE(!p || p->state == 'Z' || p->comm.find("python") == std::string::npos)
            << "adapter " << pid << " still running";
    }
}

// The protocol is one answer a request: an adapter that answers twice, answers before it was
// asked, or streams a line with no end breaks it, and its runs are no verdict ("adapter broke"),
// never a grant read from a stray line (which made "2 holders" of a double answer, and "safe"
// of three early ones).
TEST_F(ExternalTest, AnAdapterThatAnswersTwiceOrUnaskedOrEndlesslyBrokeTheProtocol) {
    const std::string bad = (kSource / "tests" / "data" / "bad_adapter.py").string();
    std::string runs;
    for (const char* mode : {"twice", "early", "stream"})
        runs += std::string(runs.empty() ? "" : ",") + R"({"algorithm": "external", "name": ")" + mode +
                R"(", "command": ["/usr/bin/python3", ")" + bad + R"(", ")" + mode + R"("]})";
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(runs, "", 2).string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    const Json summary = read_json(out / "summary.json");
    const std::map<std::string, std::string> expected = {
        {"twice", "broke the protocol: a line that answers no request, after acquire #1: {\"ok\": true, \"token\": \"t1\"}"},
        {"early", "broke the protocol: a line that answers no request, after its ready line: {\"ok\": true}"},
        {"stream", "broke the protocol: a line longer than 16 MiB (waiting for its answer to acquire)"}};
    for (const auto& run : summary.at("runs")) {
        const std::string name = run.at("name");
        EXPECT_EQ(run.at("verdict"), "adapter broke") << name;
        ASSERT_EQ(run.at("clients_failed").size(), 2u) << name << ": " << run.dump(2);
        for (const auto& f : run.at("clients_failed")) {
            const std::string error = f.at("error");
            EXPECT_TRUE(error.ends_with(expected.at(name))) << error;
        }
        // No grant read from a stray line: the double answer made 12 violations of a lock that grants
        // only what it is asked (the sections before it broke were under real grants).
        EXPECT_EQ(run.at("safety").at("mutual_exclusion_violations"), 0) << name;
    }
}

// An adapter flooding its stderr (before: 954 MB in 0.6 s) cannot fill the disk: each file it
// writes stops at 16 MiB, and the run says it cut it.
TEST_F(ExternalTest, AnAdapterFloodingItsStderrIsCutAtTheCap) {
    const std::string bad = (kSource / "tests" / "data" / "bad_adapter.py").string();
    const std::string runs = R"({"algorithm": "external", "name": "flood", "command": ["/usr/bin/python3", ")" + bad + R"(", "flood"]})";
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(runs, "", 2).string(), "--out", out.string()});
    EXPECT_NE(r.exit_code(), 2) << r.describe();
    int files = 0;
    for (const auto& e : fs::directory_iterator(out / "runs" / "flood" / "adapter")) {
        ++files;
        EXPECT_LE(fs::file_size(e.path()), (16u << 20) + 200) << e.path();
        EXPECT_NE(read_text(e.path()).find("[lockbench: cut at 16 MiB"), std::string::npos) << e.path();
    }
    EXPECT_GE(files, 2);
}

TEST_F(ExternalTest, AnAdapterThatCannotStartFailsTheRunInOneLine) {
    const std::string bad = (kSource / "tests" / "data" / "bad_adapter.py").string();
    const fs::path out = dir() / "out";
    const Result r = run({"run",
                          scenario(R"({"algorithm": "external", "name": "slow", "command": ["/usr/bin/python3", ")" + bad +
                                   R"(", "noready"]})").string(),
                          "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("run slow: adapter slow (/usr/bin/python3 " + bad + " noready): its first line should be "
                         "{\"ready\": true, \"library\": ...}; the last thing it printed: Starting up, please wait..."),
              std::string::npos)
        << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json"));
    for (pid_t pid : bad_adapter_pids()) {
        const auto p = read_proc(pid);
        EXPECT_TRUE(!p || p->state == 'Z' || p->comm.find("python") == std::string::npos) << pid;
    }

    // An adapter that cannot start: exit 2, one line, saying why. A command that does not
    // exist; one with an '@' of its own (the reason still goes where it belongs); a folder to
    // run in that is not there (before: "exited with status 126 ... it printed nothing").
    const auto expect_not_ready = [&](const std::string& run_text, const std::string& line) {
        const Result r = run({"run", scenario(run_text).string(), "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 2) << r.describe();
        EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
        EXPECT_NE(r.err.find(line), std::string::npos) << r.describe();
    };
    expect_not_ready(R"({"algorithm": "external", "name": "nolib", "command": ["/nonexistent/adapter"]})",
                     "run nolib: adapter nolib (/nonexistent/adapter): not ready: cannot execute "
                     "/nonexistent/adapter: No such file or directory");
    expect_not_ready(R"({"algorithm": "external", "name": "atlib", "command": ["/nonexistent/a@b"]})",
                     "run atlib: adapter atlib (/nonexistent/a@b): not ready: cannot execute /nonexistent/a@b: "
                     "No such file or directory");
    expect_not_ready(R"({"algorithm": "external", "name": "nocwd", "command": ["/bin/true"], "cwd": "/nonexistent/folder"})",
                     "run nocwd: adapter nocwd (/bin/true): not ready: cannot enter its folder (cwd) "
                     "/nonexistent/folder: No such file or directory");
}

// The ready line may take max(three op timeouts, 10 s): a message about it names the wait it
// had, not the op timeout (here 300 ms) that it did not.
TEST_F(ExternalTest, AnAdapterThatNeverSaysReadyIsToldTheWaitItHad) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(R"({"algorithm": "external", "name": "mute", "command": ["/bin/sh", "-c", "exec sleep 60"]})",
                                          R"( "client": {"command_timeout_ms": 30},)")
                                     .string(),
                          "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("run mute: adapter mute (/bin/sh -c exec sleep 60): no answer within 10000 ms (waiting for "
                         "its first line, {\"ready\": true, ...}); it printed nothing"),
              std::string::npos)
        << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json"));
}

// An adapter that dies before its ready line: its own reason, the last line of its stderr
// (Python's "can't open file ..."), is in the one line the user reads.
TEST_F(ExternalTest, AnAdapterThatDiesSaysWhyInItsOwnWords) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(R"({"algorithm": "external", "name": "dies", "command": ["/bin/sh", "-c",
                                          "echo 'Traceback (most recent call last):' >&2; echo 'No module named foo' >&2; exit 3"]})")
                                     .string(),
                          "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("; its stderr ends: No module named foo"), std::string::npos) << r.describe();
}

// What an adapter says is its to choose: 3 MB of error, an escape sequence. A message quotes
// 200 characters of it, as text.
TEST_F(ExternalTest, AnAdaptersOwnWordsAreCutAndEscapedInAMessage) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(R"json({"algorithm": "external", "name": "loud", "command": ["/usr/bin/python3", "-c",
        "import json; print(json.dumps({'ready': False, 'error': '\\u001b[2J' + 'x' * 3000000}))"]})json").string(),
                          "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe().substr(0, 2000);
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe().substr(0, 2000);
    EXPECT_LT(r.err.size(), 1000u) << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find("not ready: \\u001b[2Jxxx"), std::string::npos) << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find("xxx... (3000004 characters)"), std::string::npos) << r.err.substr(0, 2000);
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal";
}

// A field of the wrong type is the adapter's doing, told as such: a "ready" that is not true or
// false breaks the protocol in one line naming the adapter, and an "error" that is not a string
// is kept as its JSON text. Neither ends in nlohmann's type_error failing the whole run.
TEST_F(ExternalTest, AnAnswerFieldOfTheWrongTypeIsNoCrash) {
    const fs::path out = dir() / "out";
    const Result ready = run({"run", scenario(R"json({"algorithm": "external", "name": "typed", "command": ["/usr/bin/python3", "-c",
        "import json; print(json.dumps({'ready': 'yes'}), flush=True)"]})json").string(), "--out", out.string()});
    EXPECT_EQ(ready.exit_code(), 2) << ready.describe();
    ASSERT_EQ(lines_of(ready.err).size(), 1u) << ready.describe();
    EXPECT_NE(ready.err.find("): its first line should be {\"ready\": true, \"library\": ...}; the last thing it printed: "
                             "{\"ready\": \"yes\"}"), std::string::npos) << ready.describe();

    const Result error = run({"run", scenario(R"json({"algorithm": "external", "name": "typed", "command": ["/usr/bin/python3", "-c",
        "import json, sys; print(json.dumps({'ready': True}), flush=True); [print(json.dumps({'ok': False, 'error': 42}), flush=True) for _ in sys.stdin]"]})json",
                                              "", 1, 300).string(), "--out", out.string()});
    EXPECT_EQ(error.exit_code(), 0) << error.describe();
    const std::string history = read_text(out / "runs" / "typed" / "history" / "client-0.jsonl");
    EXPECT_NE(history.find(R"("op":"acquire","type":"fail")"), std::string::npos) << history.substr(0, 400);
    EXPECT_NE(history.find(R"("detail":"42")"), std::string::npos) << history.substr(0, 400);
}

TEST_F(ExternalTest, ScenarioErrorsNameTheField) {
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "external", "name": "lib"}]})", {"runs[0].command", "required"});
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "external", "name": "lib", "command": "python3 a.py"}]})",
                    {"runs[0].command", "array"});
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "external", "command": ["a"]}]})", {"runs[0].name", "required"});
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "token-lua", "command": ["a"]}]})",
                    {"runs[0].command", "only an \"external\""});
}

// A matrix starts a lock's adapter alone before the clients (the preflight) only until one
// repetition with it has run; later repetitions learn what the adapter is from client 0's.
TEST_F(ExternalTest, AMatrixChecksAnAdapterAloneOnlyInItsFirstRepetition) {
    const fs::path out = dir() / "m";
    const Result m = run({"matrix", scenario("{" + kRedisPy + "}", "", 2, 300).string(), "--repeat", "3", "--out", out.string()});
    ASSERT_EQ(m.exit_code(), 0) << m.describe();
    std::vector<Json> adapters;
    for (int rep = 0; rep < 3; ++rep) {
        const fs::path rep_dir = out / "cells" / "ext" / "redis-py" / ("rep-" + std::to_string(rep));
        const Json summary = read_json(rep_dir / "summary.json");
        adapters.push_back(summary.at("runs").at(0).at("adapter"));
        const Json timing = read_json(rep_dir / "runs" / "redis-py" / "timing.json");
        EXPECT_EQ(timing.at("phases_s").contains("adapter_check"), rep == 0) << rep << ": " << timing.dump();
    }
    EXPECT_TRUE(adapters[0].value("library", std::string()).starts_with("redis-py ")) << adapters[0].dump();
    EXPECT_EQ(adapters[1], adapters[0]);
    EXPECT_EQ(adapters[2], adapters[0]);
}

// Side by side, only the first repetition started with an adapter checks it alone: the
// others started beside it go without, as the later ones do.
TEST_F(ExternalTest, SideBySideOnlyTheFirstRepetitionWithAnAdapterChecksIt) {
    const std::string kRedisPyB = R"("algorithm": "external", "name": "redis-py-b", "command": ["/usr/bin/python3", "adapters/redis_py_lock.py"])";
    const fs::path out = dir() / "m";
    const Result m = run({"matrix", scenario("{" + kRedisPy + "}, {" + kRedisPyB + "}", "", 2, 300).string(), "--jobs",
                          "2", "--out", out.string()});
    ASSERT_EQ(m.exit_code(), 0) << m.describe();
    int checked = 0;
    std::vector<std::pair<long long, long long>> spans;  // when each ran: side by side, they overlap
    for (const char* run_name : {"redis-py", "redis-py-b"}) {
        const Json timing = read_json(out / "cells" / "ext" / run_name / "rep-0" / "runs" / run_name / "timing.json");
        checked += timing.at("phases_s").contains("adapter_check") ? 1 : 0;
        spans.emplace_back(timing.at("between_unix_ms").at(0).get<long long>(), timing.at("between_unix_ms").at(1).get<long long>());
    }
    ASSERT_LT(std::max(spans[0].first, spans[1].first), std::min(spans[0].second, spans[1].second)) << "not side by side";
    EXPECT_EQ(checked, 1);
}

TEST_F(ExternalTest, MatrixAndReportShowEachLibraryByItsName) {
    const std::string bad = (kSource / "tests" / "data" / "bad_adapter.py").string();
    const std::string runs =
        "{" + kRedisPy + R"(}, {"algorithm": "token-lua"},
        {"algorithm": "external", "name": "node-redlock", "command": ["node", "adapters/node-redlock/adapter.js"], "nodes": 5},
        {"algorithm": "external", "name": "crash", "command": ["/usr/bin/python3", ")" + bad + R"(", "crash"]})";
    const fs::path results = dir() / "results";
    const Result m = run({"matrix", scenario(runs, "", 2, 600).string(), "--out", (results / "m").string()});
    EXPECT_EQ(m.exit_code(), 1) << "the crashed adapter's cell is not trusted\n" << m.describe();
    std::map<std::string, Json> cells;
    const Json summary = read_json(results / "m" / "summary.json");
    for (const auto& c : summary.at("cells")) cells[c.at("variant")] = c;
    ASSERT_EQ(cells.size(), 4u) << "one row each: " << m.describe();
    for (const char* lib : {"redis-py", "node-redlock"}) {
        ASSERT_TRUE(cells.contains(lib)) << lib;
        EXPECT_EQ(cells[lib].at("algorithm"), "external");
        EXPECT_TRUE(cells[lib].at("reps").at(0).at("clients_failed").empty()) << lib;
        EXPECT_GT(cells[lib].at("reps").at(0).at("sections_completed").get<long long>(), 0) << lib;
    }
    EXPECT_TRUE(cells.contains("token-lua"));
    EXPECT_EQ(cells.at("crash").at("reps").at(0).at("clients_failed").size(), 2u);
    EXPECT_NE(m.out.find("CLIENTS FAILED in 1/1"), std::string::npos) << m.out;

    const Result r = run({"report", results.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::string md = read_text(results / "report.md");
    for (const char* name : {"redis-py", "node-redlock", "token-lua"}) EXPECT_NE(md.find(name), std::string::npos) << name;
    EXPECT_NE(md.find("adapter broke (not trusted) with crash"), std::string::npos) << md;
    EXPECT_NE(md.find("NOT TRUSTED: crash rep 0: 2 clients failed, e.g. client 0: adapter crash"), std::string::npos) << md;
}

}  // namespace

// ---- lock services: ZooKeeper and etcd (docs/services.md) ------------------------------------

namespace {

// Every history line of a run's clients with this op and type.
std::vector<Json> history_lines(const fs::path& run_dir, const std::string& op, const std::string& type) {
    std::vector<Json> out;
    for (const auto& e : fs::directory_iterator(run_dir / "history")) {
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line);) {
            const Json j = Json::parse(line);
            if (j.value("op", "") == op && j.value("type", "") == type) out.push_back(j);
        }
    }
    return out;
}

}  // namespace

TEST_F(ExternalTest, ACrashOfTheLeaderNamesTheServerItStruckAndTheServersLogsAreKept) {
    const fs::path out = dir() / "out";
    const Result r = run({"run", scenario(R"({"algorithm": "external", "name": "zookeeper-3", "service": "zookeeper",
        "nodes": 3, "command": ["/usr/bin/python3", "adapters/kazoo-lock/adapter.py"], "params": {"ttl_ms": 3000},
        "faults": [{"fault": "crash", "point": "after_acquire", "occurrence": 2, "node": "leader", "restart_after_ms": 300}],
        "expect": {"faults_injected": "== 1", "mutual_exclusion_violations": "== 0"}})",
                                   R"( "client": {"command_timeout_ms": 500},)", 3, 2500)
                              .string(),
                          "--out", out.string()},
                         {});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    std::ifstream nemesis(out / "runs" / "zookeeper-3" / "nemesis.jsonl");
    std::string first;
    std::getline(nemesis, first);
    const Json start = Json::parse(first);
    ASSERT_TRUE(start.contains("node")) << first;
    const int struck = start["node"].get<int>();
    EXPECT_TRUE(struck >= 0 && struck < 3) << first;
    for (int i = 0; i < 3; ++i) {
        const fs::path log = out / "runs" / "zookeeper-3" / "servers" / ("zk" + std::to_string(i) + ".log");
        ASSERT_TRUE(fs::exists(log)) << log;
        EXPECT_FALSE(read_text(log).empty()) << log;
    }
    // The struck server led: its own log says it took the lead (before the crash).
    const std::string struck_log = read_text(out / "runs" / "zookeeper-3" / "servers" / ("zk" + std::to_string(struck) + ".log"));
    EXPECT_NE(struck_log.find("Peer state changed: leading"), std::string::npos) << "zk" << struck << " never led";
}

TEST_F(ExternalTest, TheStoreFencesOnALibrarysTokenOnlyWhenTheRunSaysSo) {
    const fs::path out = dir() / "out";
    const std::string etcd = R"("algorithm": "external", "service": "etcd", "command": ["/usr/bin/python3", "adapters/etcd-lock/adapter.py"])";
    const Result r = run({"run", scenario("{" + etcd + R"(, "name": "etcd"}, {)" + etcd + R"(, "name": "etcd+fence", "params": {"fence": true}})",
                                          R"( "client": {"command_timeout_ms": 500},)", 2, 800)
                                     .string(),
                          "--out", out.string()},
                         {});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::vector<Json> plain = history_lines(out / "runs" / "etcd", "write", "invoke");
    const std::vector<Json> fenced = history_lines(out / "runs" / "etcd+fence", "write", "invoke");
    ASSERT_FALSE(plain.empty());
    ASSERT_FALSE(fenced.empty());
    for (const Json& w : plain) EXPECT_FALSE(w.contains("fence")) << w.dump();
    for (const Json& w : fenced) EXPECT_TRUE(w.contains("fence") && w["fence"].get<long long>() > 0) << w.dump();
}

// ---- renewal through the adapter (docs/files.md: Renewal) ------------------------------------

TEST_F(ExternalTest, RenewalSendsExtendAndALostEventMakesTheHolderAbandon) {
    const std::string lost = (kSource / "tests" / "data" / "lost_adapter.py").string();
    const std::string run_text = R"({"algorithm": "external", "name": "lost", "command": ["/usr/bin/python3", ")" + lost +
                                 R"("], "params": {"ttl_ms": 900}, "renew": {"every_ms": 50, "ttl_ms": 700, "mode": "replace",
                                 "abandon": true}})";
    const fs::path s = write_file("scenario.json", R"({"name": "ext", "seed": 3, "workload": {"clients": 1,
        "duration_ms": 2000, "sections_per_client": 1, "work_ms": {"fixed": 1000}}, "runs": [)" + run_text + "]}");
    const fs::path out = dir() / "out";
    const Result r = run({"run", s.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    const fs::path run_dir = out / "runs" / "lost";
    // The extend carried the policy's T and mode, and the first failure ended the renewals.
    std::vector<Json> extends;
    std::ifstream requests(dir() / "tmp" / "lost-adapter.requests");
    for (std::string line; std::getline(requests, line);)
        if (Json j = Json::parse(line); j.at("op") == "extend") extends.push_back(j);
    ASSERT_EQ(extends.size(), 1u);
    EXPECT_EQ(extends[0].at("ttl_ms"), 700);
    EXPECT_EQ(extends[0].at("replace"), true);
    // The event line that came before the extend's answer is a history event of its own.
    const std::vector<Json> lost_events = history_lines(run_dir, "lost", "info");
    ASSERT_EQ(lost_events.size(), 1u);
    EXPECT_EQ(lost_events[0].at("lease"), "c0.1");
    EXPECT_EQ(history_lines(run_dir, "renew", "fail").size(), 1u);
    // Abandoned: no write reached the store, and the lease was still released.
    EXPECT_TRUE(history_lines(run_dir, "write", "ok").empty());
    ASSERT_EQ(history_lines(run_dir, "write", "fail").size(), 1u);
    const std::vector<Json> releases = history_lines(run_dir, "release", "ok");
    ASSERT_EQ(releases.size(), 1u);
    // Its answer said nothing of what it removed ({"ok": true}): recorded without "nodes",
    // unlike a release that removed nothing ("nodes": []).
    EXPECT_FALSE(releases[0].contains("nodes")) << releases[0].dump();
    EXPECT_EQ(read_json(run_dir / "run.json").at("renew").at("abandon"), true);
}

TEST_F(ExternalTest, AnAdapterThatDiesDuringARenewalFailsTheClientOnceAndTheRenewalStops) {
    const std::string dying = (kSource / "tests" / "data" / "dying_adapter.py").string();
    const std::string run_text = R"({"algorithm": "external", "name": "dying", "command": ["/usr/bin/python3", ")" + dying +
                                 R"("], "params": {"ttl_ms": 900}, "renew": {"every_ms": 50, "ttl_ms": 700}})";
    const fs::path s = write_file("scenario.json", R"({"name": "ext", "seed": 3, "workload": {"clients": 1,
        "duration_ms": 2000, "sections_per_client": 1, "work_ms": {"fixed": 600}}, "runs": [)" + run_text + "]}");
    const fs::path out = dir() / "out";
    const Result r = run({"run", s.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    // One renewal met the dead adapter; none after it wrote to a closed pipe.
    const fs::path run_dir = out / "runs" / "dying";
    EXPECT_EQ(history_lines(run_dir, "renew", "invoke").size(), 1u);
    EXPECT_EQ(history_lines(run_dir, "renew", "info").size(), 1u);
    // The worker's release says why the adapter is gone, in the words of its first failure.
    const Json summary = read_json(out / "summary.json");
    ASSERT_EQ(summary.at("runs").at(0).at("clients_failed").size(), 1u) << summary.dump(2);
    const std::string error = summary.at("runs").at(0).at("clients_failed").at(0).at("error");
    EXPECT_NE(error.find("exited with status 3 while lockbench waited for its answer to extend"), std::string::npos)
        << error;
}

TEST_F(ExternalTest, ALateLostEventCountsForTheReleasedLeaseAndOtherEventsAreKept) {
    const std::string lost = (kSource / "tests" / "data" / "lost_adapter.py").string();
    const std::string run_text = R"({"algorithm": "external", "name": "late", "command": ["/usr/bin/python3", ")" + lost +
                                 R"(", "late"], "params": {"ttl_ms": 900}, "renew": {"every_ms": 50, "ttl_ms": 700,
                                 "abandon": true}, "faults": [{"fault": "pause", "task": "background",
                                 "point": "after_acquire", "client": 0, "occurrence": 1, "duration_ms": 100}]})";
    const fs::path s = write_file("scenario.json", R"({"name": "ext", "seed": 3, "workload": {"clients": 1,
        "duration_ms": 3000, "sections_per_client": 2, "work_ms": {"fixed": 300}}, "runs": [)" + run_text + "]}");
    const fs::path out = dir() / "out";
    const Result r = run({"run", s.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    const fs::path run_dir = out / "runs" / "late";
    // The first lease's loss, announced during the second acquire, is the first lease's:
    // the second holder does not abandon a valid write for it.
    const std::vector<Json> lost_events = history_lines(run_dir, "lost", "info");
    ASSERT_EQ(lost_events.size(), 1u);
    EXPECT_EQ(lost_events[0].at("lease"), "c0.1");
    EXPECT_EQ(history_lines(run_dir, "write", "ok").size(), 2u);
    // Recorded when it was heard, before the answer it came ahead of, not when it was taken.
    const std::vector<Json> acquired = history_lines(run_dir, "acquire", "ok");
    ASSERT_EQ(acquired.size(), 2u);
    EXPECT_LT(lost_events[0].at("t_ns").get<long long>(), acquired[1].at("t_ns").get<long long>());
    // An answer with an "event" field is an answer; an event of another kind is kept.
    EXPECT_FALSE(history_lines(run_dir, "renew", "ok").empty());
    EXPECT_TRUE(history_lines(run_dir, "renew", "info").empty());
    const std::vector<Json> others = history_lines(run_dir, "adapter", "info");
    ASSERT_FALSE(others.empty());
    EXPECT_NE(others[0].at("detail").get<std::string>().find("reconnected"), std::string::npos);
    // The adapters (preflight and client) started with no signal blocked, though the client
    // blocks SIGUSR1/2 for its background control.
    const std::string sigblk = read_text(dir() / "tmp" / "lost-adapter.sigblk");
    EXPECT_NE(sigblk.find("SigBlk:"), std::string::npos);
    std::istringstream lines(sigblk);
    for (std::string line; std::getline(lines, line);)
        EXPECT_EQ(line, "SigBlk:\t0000000000000000") << sigblk;
}

// A library that queues a waiting acquire says so ({"event": "waiting"}): the point in_line,
// which ends a keep (keep_holder_ms) as the late answer having met the holder. Said nothing, the
// same wait outlasts the keep's bound: the repetition is not as written (exit 3).
TEST_F(ExternalTest, AWaitingEventEndsAKeepAsTheAcquireQueuedBehindTheHolder) {
    const std::string queue = (kSource / "tests" / "data" / "queue_adapter.py").string();
    const auto run_with = [&](const std::string& mode) {
        const std::string args = mode.empty() ? "" : R"(, ")" + mode + R"(")";
        const fs::path s = write_file("scenario-" + mode + ".json", R"({"name": "ext", "seed": 3, "workload": {"clients": 2,
            "duration_ms": 3000, "work_ms": {"fixed": 100}, "retry_ms": {"fixed": 20}}, "runs": [{"algorithm": "external",
            "name": "queue", "command": ["/usr/bin/python3", ")" + queue + R"(")" + args + R"(], "params": {"ttl_ms": 5000},
            "faults": [{"fault": "gate", "point": "before_acquire", "client": 0, "occurrence": 1,
            "until": "another-enters", "max_ms": 1000, "keep_holder_ms": 1000}]}]})");
        const fs::path out = dir() / ("out-" + mode);
        return std::pair{run({"run", s.string(), "--out", out.string()}), out};
    };
    const auto [said, out] = run_with("");
    EXPECT_EQ(said.exit_code(), 0) << said.describe();
    const Json fault = read_json(out / "summary.json").at("runs").at(0).at("faults").at(0);
    ASSERT_EQ(fault.at("kept").size(), 1u) << fault;
    EXPECT_EQ(fault.at("kept").at(0).at("ended"), "in line") << fault;
    EXPECT_EQ(fault.at("kept").at(0).at("holder"), 1);
    std::vector<Json> in_line;
    for (const Json& p : history_lines(out / "runs" / "queue", "point", "reached"))
        if (p.value("name", "") == "in_line") in_line.push_back(p);
    ASSERT_EQ(in_line.size(), 1u);
    EXPECT_EQ(in_line[0].at("client"), 0);

    const auto [silent, silent_out] = run_with("silent");
    EXPECT_EQ(silent.exit_code(), 3) << silent.describe();
    const Json kept = read_json(silent_out / "summary.json").at("runs").at(0).at("faults").at(0).at("kept").at(0);
    EXPECT_EQ(kept.at("ended"), "bound") << kept;
}

// ---- what a library needs from the protocol (issue 17) ---------------------------------------

TEST_F(ExternalTest, TheLibrarysOwnParamsReachItAndWhatItSaysAndWarnsIsKept) {
    const fs::path out = dir() / "out";
    const std::string adapter = (kSource / "tests" / "data" / "params_adapter.py").string();
    const Result r = run({"run", scenario(R"({"algorithm": "external", "name": "params", "command": ["/usr/bin/python3", ")" +
                                          adapter + R"("], "params": {"ttl_ms": 400, "variant": "v", "retry": {"count": 2}}},
                                          {)" + kRedisPy + "}", "", 2, 300)
                                     .string(),
                          "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    // The ready line's description, in run.json and in the summary; nothing it did not say.
    const Json described = Json::parse(R"({"library": "params 1.2.3", "algorithm": "grants everything", "fencing": false})");
    EXPECT_EQ(read_json(out / "runs" / "params" / "run.json").at("adapter"), described);
    EXPECT_EQ(read_json(out / "summary.json").at("runs").at(0).at("adapter"), described);
    // Each adapter's stderr, in the run folder: the params as the run gave them, its warning.
    const fs::path kept = out / "runs" / "params" / "adapter";
    for (const char* file : {"preflight.stderr", "client-0.stderr", "client-1.stderr"}) {
        const std::string text = read_text(kept / file);
        EXPECT_NE(text.find(R"("retry":{"count":2})"), std::string::npos) << file << ": " << text;
        EXPECT_NE(text.find(R"("variant":"v")"), std::string::npos) << file << ": " << text;
        EXPECT_NE(text.find("a library's own warning"), std::string::npos) << file << ": " << text;
    }
    EXPECT_NE(read_text(kept / "client-1.stderr").find("client 1"), std::string::npos);
    // redis-py says nothing on stderr: no empty files are left.
    EXPECT_FALSE(fs::exists(out / "runs" / "redis-py" / "adapter"));
    EXPECT_EQ(read_json(out / "runs" / "redis-py" / "run.json").at("adapter").at("library").get<std::string>().rfind("redis-py ", 0), 0u);
}

// tooz's and Laravel's lock TTLs are whole seconds: their adapters refuse a ttl_ms they cannot
// say (ready false, naming the TTL) rather than round it, and the run fails in one line.
TEST_F(ExternalTest, WholeSecondLibrariesRefuseATtlTheyCannotSay) {
    const std::vector<std::pair<std::string, std::string>> adapters = {
        {"tooz", R"("/usr/bin/python3", "adapters/tooz/adapter.py")"},
        {"laravel", R"("/usr/bin/php", "adapters/laravel-lock/adapter.php")"}};
    for (const auto& [name, command] : adapters) {
        const fs::path out = dir() / ("out-" + name);
        const Result r = run({"run",
                              scenario(R"({"algorithm": "external", "name": ")" + name + R"(", "command": [)" + command +
                                       R"(], "params": {"ttl_ms": 1500}})")
                                  .string(),
                              "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 2) << r.describe();
        ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe();
        EXPECT_NE(r.err.find("run " + name + ": adapter " + name), std::string::npos) << r.describe();
        EXPECT_NE(r.err.find("is whole seconds: ttl_ms 1500 is not"), std::string::npos) << r.describe();
        EXPECT_FALSE(fs::exists(out / "summary.json"));
    }
}

// probe_key_ttl: right after each acquire the client reads the key's TTL on the nodes the
// adapter named (if the key still holds the lock's token), and the summary holds the library's
// validity against it. The test adapter says every lock it hands out is already spent.
TEST_F(ExternalTest, TheProbeReadsTheKeysRealTtlAndTheSummaryHoldsTheLibrarysValidityAgainstIt) {
    const std::string adapter =
        R"("algorithm": "external", "name": "ttl", "command": ["/usr/bin/python3", "tests/data/ttl_adapter.py"])";
    const auto run_with = [&](const std::string& name, const std::string& params) {
        const fs::path out = dir() / name;
        const Result r = run({"run", scenario("{" + adapter + R"(, "params": )" + params + "}", "", 1, 300).string(),
                              "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        std::vector<Json> acquired;
        for (const std::string& line : lines_of(read_text(out / "runs" / "ttl" / "history" / "client-0.jsonl")))
            if (Json j = Json::parse(line); j.at("op") == "acquire" && j.at("type") == "ok") acquired.push_back(j);
        EXPECT_FALSE(acquired.empty());
        return std::pair{acquired, read_json(out / "summary.json").at("runs").at(0)};
    };
    const auto [probed, probed_run] = run_with("probed", R"({"ttl_ms": 500, "said_validity_ms": -50, "probe_key_ttl": true})");
    for (const Json& a : probed) {
        ASSERT_EQ(a.at("key_ttl_ms").size(), 1u) << a.dump();
        EXPECT_GT(a.at("key_ttl_ms").at(0).get<long long>(), 0) << a.dump();
        EXPECT_LE(a.at("key_ttl_ms").at(0).get<long long>(), 500) << a.dump();
    }
    const Json& v = probed_run.at("validity");
    EXPECT_EQ(v.at("validity_probes").get<size_t>(), probed.size());
    EXPECT_EQ(v.at("validity_spent_live").get<size_t>(), probed.size());  // each spent, each standing
    EXPECT_GT(v.at("validity_understated_ms").get<double>(), 50);
    EXPECT_EQ(v.at("validity_overstated_ms").get<double>(), 0);
    EXPECT_EQ(v.at("validity_gone"), 0);

    // The token as a hash's field (Redisson) or a sorted set's member scored with its expiry
    // (Symfony's RedisStore) is read as well as a string's value.
    for (const char* layout : {"hash", "zset"}) {
        const auto [held, held_run] = run_with(layout, std::string(R"({"ttl_ms": 500, "said_validity_ms": -50, "probe_key_ttl": true, "layout": ")") + layout + "\"}");
        for (const Json& a : held) {
            EXPECT_GT(a.at("key_ttl_ms").at(0).get<long long>(), 0) << layout << " " << a.dump();
            EXPECT_LE(a.at("key_ttl_ms").at(0).get<long long>(), 500) << layout << " " << a.dump();
        }
        EXPECT_EQ(held_run.at("validity").at("validity_gone"), 0) << layout;
    }

    // A token the key does not hold is not this lock's key: read as gone.
    const auto [wrong, wrong_run] = run_with("wrong", R"({"ttl_ms": 500, "said_validity_ms": -50, "probe_key_ttl": true, "wrong_token": true})");
    for (const Json& a : wrong) EXPECT_EQ(a.at("key_ttl_ms"), Json::array({-2})) << a.dump();
    EXPECT_EQ(wrong_run.at("validity").at("validity_spent_live"), 0);
    EXPECT_EQ(wrong_run.at("validity").at("validity_gone").get<size_t>(), wrong.size());

    // Without the probe nothing is read, and the summary has no validity figures.
    const auto [plain, plain_run] = run_with("plain", R"({"ttl_ms": 500, "said_validity_ms": -50})");
    for (const Json& a : plain) EXPECT_FALSE(a.contains("key_ttl_ms")) << a.dump();
    EXPECT_FALSE(plain_run.contains("validity"));
}
