// End-to-end tests of the lockbench command line: the real binary (LOCKBENCH_BINARY) is run as
// a subprocess, with stdout and stderr captured to files, each test in its own temp folder.
//
//   bad input ........ exit 2, one line on stderr naming the file, the field and what was
//                      expected, and nothing written to --out
//   run / check ...... exit 0 when every expectation holds, 1 when one does not; summary.json
//   list ............. the five algorithms and their parameters
//   lifetime ......... SIGKILL or SIGINT to lockbench leaves no redis-server or client behind
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#ifndef LOCKBENCH_BINARY
#error "LOCKBENCH_BINARY must be defined to the path of the lockbench executable"
#endif

extern char** environ;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// ---- Running the tool -----------------------------------------------------------------------

struct ToolOptions {
    std::map<std::string, std::string> set_env;  // added or replaced
    std::vector<std::string> unset_env;          // removed
};

struct Result {
    int status = -1;  // raw wait status
    std::string out;
    std::string err;

    bool exited() const { return WIFEXITED(status); }
    int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
    std::string describe() const {
        std::string s = WIFEXITED(status)     ? "exit " + std::to_string(WEXITSTATUS(status))
                        : WIFSIGNALED(status) ? std::string("signal ") + strsignal(WTERMSIG(status))
                                              : "status " + std::to_string(status);
        return s + "\n--- stdout ---\n" + out + "--- stderr ---\n" + err + "--------------";
    }
};

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.flush()) << "cannot write " << p;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// A started lockbench process. Its stdout and stderr go to files (not pipes: a grandchild
// that kept a pipe open would make a reader wait forever).
class Tool {
public:
    Tool(const std::vector<std::string>& args, const fs::path& cwd, const fs::path& capture_stem,
         const ToolOptions& opts = {})
        : out_path_(capture_stem.string() + ".stdout"), err_path_(capture_stem.string() + ".stderr") {
        // Everything the child needs is built before fork: between fork and exec only
        // async-signal-safe calls.
        std::vector<std::string> argv_s{LOCKBENCH_BINARY};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        std::vector<std::string> env_s;
        for (char** e = environ; e && *e; ++e) {
            const std::string entry = *e;
            const std::string name = entry.substr(0, entry.find('='));
            if (opts.set_env.contains(name)) continue;
            if (std::find(opts.unset_env.begin(), opts.unset_env.end(), name) != opts.unset_env.end()) continue;
            env_s.push_back(entry);
        }
        for (const auto& [k, v] : opts.set_env) env_s.push_back(k + "=" + v);
        std::vector<char*> argv, envp;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        for (auto& e : env_s) envp.push_back(e.data());
        envp.push_back(nullptr);
        const std::string cwd_s = cwd.string();
        const pid_t parent = getpid();

        pid_ = fork();
        if (pid_ == 0) {
            // Our own death must not leave lockbench running on its own.
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(126);
            // Default dispositions and an empty mask, as from an interactive shell: a shell
            // that ran us in the background may have set SIGINT to SIG_IGN, which lockbench
            // (rightly) keeps honouring.
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            if (chdir(cwd_s.c_str()) != 0) _exit(126);
            const int in = open("/dev/null", O_RDONLY);
            const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (in < 0 || out < 0 || err < 0) _exit(126);
            dup2(in, STDIN_FILENO);
            dup2(out, STDOUT_FILENO);
            dup2(err, STDERR_FILENO);
            execve(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        if (pid_ < 0) ADD_FAILURE() << "fork: " << std::strerror(errno);
    }

    ~Tool() {
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            int st = 0;
            waitpid(pid_, &st, 0);
        }
    }
    Tool(const Tool&) = delete;
    Tool& operator=(const Tool&) = delete;

    pid_t pid() const { return pid_; }

    // The wait status if it exited within `timeout` (reaping it), nullopt otherwise.
    std::optional<int> wait_for(std::chrono::milliseconds timeout) {
        if (status_) return status_;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            int st = 0;
            const pid_t r = waitpid(pid_, &st, WNOHANG);
            if (r == pid_) return status_ = st;
            if (r < 0 && errno != EINTR) return status_ = -1;
            if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
            std::this_thread::sleep_for(10ms);
        }
    }

    bool running() { return !wait_for(0ms); }

    // Waits up to `timeout`; a tool that takes longer is killed and reported.
    Result finish(std::chrono::milliseconds timeout = 120s) {
        Result r;
        if (auto st = wait_for(timeout)) {
            r.status = *st;
        } else {
            ADD_FAILURE() << "lockbench did not finish within " << timeout.count() << " ms; killed";
            ::kill(pid_, SIGKILL);
            r.status = *wait_for(10s);
        }
        r.out = read_text(out_path_);
        r.err = read_text(err_path_);
        return r;
    }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
    std::string out_path_;
    std::string err_path_;
};

// ---- Processes, from /proc ------------------------------------------------------------------

struct ProcInfo {
    pid_t pid = 0;
    std::string comm;
    char state = '?';
    pid_t ppid = 0;
    unsigned long long starttime = 0;  // identifies the process across pid reuse
};

std::optional<ProcInfo> read_proc(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto open = text.find('(');
    const auto close = text.rfind(')');  // comm may itself hold ')' or spaces
    if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
    ProcInfo p;
    p.pid = pid;
    p.comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest(text.substr(close + 1));
    std::vector<std::string> f;  // f[0] is field 3 (state)
    for (std::string x; rest >> x;) f.push_back(x);
    if (f.size() < 20) return std::nullopt;
    p.state = f[0].empty() ? '?' : f[0][0];
    p.ppid = static_cast<pid_t>(std::stol(f[1]));
    p.starttime = std::stoull(f[19]);  // field 22
    return p;
}

std::vector<ProcInfo> children_of(pid_t parent) {
    std::vector<ProcInfo> kids;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (auto p = read_proc(static_cast<pid_t>(std::stol(name))); p && p->ppid == parent) kids.push_back(*p);
    }
    return kids;
}

// Gone: absent from /proc, reused by another process, or a zombie (dead, waiting to be
// reaped; in this sandbox PID 1 may never reap).
bool gone(const ProcInfo& p) {
    const auto now = read_proc(p.pid);
    return !now || now->starttime != p.starttime || now->state == 'Z' || now->state == 'X';
}

// Reaps whatever exited among our own children (orphans come to us as a subreaper).
void reap_children() {
    int st = 0;
    while (waitpid(-1, &st, WNOHANG) > 0) {
    }
}

std::string describe(const std::vector<ProcInfo>& ps) {
    std::string s;
    for (const auto& p : ps)
        s += "  pid " + std::to_string(p.pid) + " (" + p.comm + ") state " + p.state + " ppid " +
             std::to_string(p.ppid) + "\n";
    return s;
}

// ---- Fixture --------------------------------------------------------------------------------

class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = (fs::path(tmp && *tmp ? tmp : "/tmp") / "lbcli.XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
        dir_ = pattern;
        // lockbench's own run folders (redis data, client specs) stay inside ours.
        fs::create_directories(dir_ / "tmp");
    }

    void TearDown() override {
        std::error_code ec;
        if (!HasFailure() || !std::getenv("LOCKBENCH_KEEP_TEST_DIRS")) fs::remove_all(dir_, ec);
        else std::cerr << "kept " << dir_ << "\n";
    }

    const fs::path& dir() const { return dir_; }

    fs::path write_file(const std::string& name, const std::string& text) {
        const fs::path p = dir_ / name;
        write_text(p, text);
        return p;
    }

    ToolOptions env(ToolOptions opts = {}) const {
        opts.set_env.emplace("TMPDIR", (dir_ / "tmp").string());
        return opts;
    }

    std::unique_ptr<Tool> start(const std::vector<std::string>& args, ToolOptions opts = {}) {
        const fs::path stem = dir_ / ("call-" + std::to_string(++calls_));
        return std::make_unique<Tool>(args, dir_, stem, env(std::move(opts)));
    }

    Result run(const std::vector<std::string>& args, ToolOptions opts = {}) {
        return start(args, std::move(opts))->finish();
    }

    // `lockbench run FILE --out OUT` for an inline scenario that must be rejected: exit 2,
    // one line naming the file plus every piece of `expected`, and nothing written to OUT.
    void expect_rejected(const std::string& scenario_json, const std::vector<std::string>& expected,
                         bool write = true) {
        const fs::path file = dir_ / "scenario.json";
        if (write) write_text(file, scenario_json);
        const fs::path out = dir_ / "out";
        const Result r = run({"run", file.string(), "--out", out.string()});
        EXPECT_EQ(r.exit_code(), 2) << r.describe();
        const auto lines = lines_of(r.err);
        EXPECT_EQ(lines.size(), 1u) << "stderr should be exactly one line\n" << r.describe();
        EXPECT_TRUE(!r.err.empty() && r.err.back() == '\n') << r.describe();
        EXPECT_NE(r.err.find(file.string()), std::string::npos) << "stderr should name the file\n" << r.describe();
        for (const auto& piece : expected)
            EXPECT_NE(r.err.find(piece), std::string::npos) << "stderr should mention " << piece << "\n" << r.describe();
        EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
        EXPECT_FALSE(fs::exists(out / "runs")) << r.describe();
    }

private:
    fs::path dir_;
    int calls_ = 0;
};

// A small valid scenario: `clients` clients for `duration_ms`, the given runs.
std::string scenario(int clients, int duration_ms, const std::string& runs) {
    return R"({"name": "cli-test", "seed": 7, "workload": {"clients": )" + std::to_string(clients) +
           R"(, "duration_ms": )" + std::to_string(duration_ms) +
           R"(, "work_ms": {"uniform": [0.5, 2]}, "retry_ms": {"uniform": [1, 3]}}, "runs": )" + runs + "}";
}

const std::string tiny_token_lua =
    scenario(2, 300, R"([{"algorithm": "token-lua", "name": "tiny-token-lua", "expect": {"sections_completed": ">= 1"}}])");

// ---- 1. Bad scenario input ------------------------------------------------------------------

TEST_F(CliTest, RejectsUnknownTopLevelField) {
    expect_rejected(R"({"name": "x", "worklaod": {"clients": 2}, "runs": [{"algorithm": "setnx"}]})",
                    {"worklaod", "unknown field"});
}

TEST_F(CliTest, RejectsUnknownNestedField) {
    expect_rejected(R"({"name": "x", "workload": {"clinets": 2}, "runs": [{"algorithm": "setnx"}]})",
                    {"workload.clinets", "unknown field"});
}

TEST_F(CliTest, RejectsWrongType) {
    expect_rejected(R"({"name": "x", "workload": {"clients": "8"}, "runs": [{"algorithm": "setnx"}]})",
                    {"workload.clients", "expected an integer", "\"8\""});
}

TEST_F(CliTest, RejectsUnknownAlgorithm) {
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "setnxx"}]})",
                    {"runs[0].algorithm", "setnxx", "setnx", "getset", "token-lua", "redlock", "reentrant"});
}

TEST_F(CliTest, RejectsUnknownAlgorithmParameter) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx"}, {"algorithm": "token-lua", "params": {"tll_ms": 100}}]})",
        {"runs[1].params.tll_ms", "unknown parameter", "ttl_ms"});
}

TEST_F(CliTest, RejectsBadExpectation) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx", "expect": {"sections_completed": "== zero"}}]})",
        {"runs[0].expect.sections_completed", "expected a comparison", "== zero"});
}

TEST_F(CliTest, RejectsDuplicateRunName) {
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "setnx"}, {"algorithm": "setnx"}]})",
                    {"runs[1].name", "\"setnx\"", "earlier run"});
}

TEST_F(CliTest, RejectsDuplicateExplicitRunName) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx", "name": "a"}, {"algorithm": "token-lua", "name": "a"}]})",
        {"runs[1].name", "\"a\"", "earlier run"});
}

TEST_F(CliTest, RejectsAFaultAimedAtAClientThatDoesNotExist) {
    expect_rejected(
        R"({"name": "x", "workload": {"clients": 2, "duration_ms": 1000},
            "faults": [{"fault": "pause", "at_ms": 100, "client": 5, "duration_ms": 100}],
            "runs": [{"algorithm": "setnx"}]})",
        {"faults[0].client", "no such client"});
}

TEST_F(CliTest, RejectsAScheduleThatEndsAfterTheRun) {
    expect_rejected(
        R"({"name": "x", "workload": {"clients": 2, "duration_ms": 1000},
            "runs": [{"algorithm": "setnx", "faults": [{"fault": "pause", "at_ms": 800, "client": 0, "duration_ms": 500}]}]})",
        {"runs[0].faults[0].duration_ms", "after the run"});
}

TEST_F(CliTest, RejectsAnUnknownPoint) {
    expect_rejected(
        R"({"name": "x", "faults": [{"fault": "kill", "point": "after_aquire"}], "runs": [{"algorithm": "setnx"}]})",
        {"faults[0].point", "after_aquire", "after_acquire"});
}

TEST_F(CliTest, RejectsFileThatIsNotJson) {
    expect_rejected("this is { not json\n", {"not valid JSON"});
}

TEST_F(CliTest, RejectsMissingFile) {
    expect_rejected("", {"cannot open"}, /*write=*/false);
}

// ---- 2. --algorithm naming no run -----------------------------------------------------------

TEST_F(CliTest, RunWithAlgorithmNamingNoRun) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string(), "--algorithm", "redlock"});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("redlock"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
}

// ---- 3. Missing redis-server ----------------------------------------------------------------

// What must hold: exit 2, no summary.json, and the error line names redis-server.
void expect_no_redis(const Result& r, const fs::path& out, const std::string& must_mention) {
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    const auto lines = lines_of(r.err);
    ASSERT_FALSE(lines.empty()) << r.describe();
    EXPECT_NE(lines.back().find("redis-server"), std::string::npos) << r.describe();
    EXPECT_NE(lines.back().find(must_mention), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
}

TEST_F(CliTest, MissingRedisServerFromEnvironmentExits2WithoutSummary) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["LOCKBENCH_REDIS_SERVER"] = "/nonexistent/redis-server";
    expect_no_redis(run({"run", file.string(), "--out", out.string()}, o), out, "/nonexistent/redis-server");
}

TEST_F(CliTest, MissingRedisServerOnPathExits2WithoutSummary) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["PATH"] = (dir() / "empty-path").string();
    o.unset_env.push_back("LOCKBENCH_REDIS_SERVER");
    expect_no_redis(run({"run", file.string(), "--out", out.string()}, o), out, "PATH");
}

// The brief: "one clear line". Today the progress line of the run that failed
// ("lockbench: [1/1] ... failed") comes first, so stderr has two lines.
TEST_F(CliTest, MissingRedisServerStderrIsExactlyOneLine) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["LOCKBENCH_REDIS_SERVER"] = "/nonexistent/redis-server";
    const Result r = run({"run", file.string(), "--out", out.string()}, o);
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
}

// ---- 4. check -------------------------------------------------------------------------------

TEST_F(CliTest, CheckOnEmptyFolder) {
    fs::create_directories(dir() / "empty");
    const Result r = run({"check", (dir() / "empty").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("empty"), std::string::npos) << r.describe();
}

TEST_F(CliTest, CheckOnMissingFolder) {
    const Result r = run({"check", (dir() / "no-such-folder").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("no-such-folder"), std::string::npos) << r.describe();
}

void expect_member(const nlohmann::json& j, const std::string& path, const std::string& key) {
    EXPECT_TRUE(j.is_object() && j.contains(key)) << "summary.json: " << path << "." << key << " missing";
}

void expect_percentiles(const nlohmann::json& j, const std::string& path) {
    ASSERT_TRUE(j.is_object()) << path;
    for (const char* k : {"p50", "p90", "p99", "p999", "max"}) {
        expect_member(j, path, k);
        if (j.contains(k)) {
            EXPECT_TRUE(j.at(k).is_number()) << path << "." << k;
        }
    }
}

TEST_F(CliTest, RunThenCheckRealResults) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("tiny-token-lua"), std::string::npos) << r.describe();
    ASSERT_TRUE(fs::exists(out / "summary.json")) << r.describe();

    const nlohmann::json summary = nlohmann::json::parse(read_text(out / "summary.json"), nullptr, false);
    ASSERT_FALSE(summary.is_discarded()) << "summary.json is not JSON";
    ASSERT_TRUE(summary.contains("runs") && summary["runs"].is_array() && summary["runs"].size() == 1) << summary.dump(2);
    const nlohmann::json& run0 = summary["runs"][0];
    EXPECT_EQ(run0.value("name", ""), "tiny-token-lua");
    EXPECT_EQ(run0.value("algorithm", ""), "token-lua");
    expect_member(run0, "runs[0]", "params");
    EXPECT_TRUE(run0.contains("params") && run0["params"].is_object() && run0["params"].contains("ttl_ms"));
    expect_member(run0, "runs[0]", "seed");
    EXPECT_TRUE(run0.contains("seed") && run0["seed"].is_number_integer());
    for (const auto& [group, keys] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"ops", {"acquire_attempts", "acquired", "released", "sections_completed"}},
             {"safety", {"mutual_exclusion_violations", "lost_updates", "stale_writes_accepted",
                         "stale_writes_rejected", "foreign_releases"}},
             {"availability", {"unavailable_ms", "longest_unavailable_ms"}}}) {
        expect_member(run0, "runs[0]", group);
        if (!run0.contains(group)) continue;
        for (const auto& k : keys) {
            expect_member(run0[group], "runs[0]." + group, k);
            if (run0[group].contains(k)) {
                EXPECT_TRUE(run0[group][k].is_number()) << group << "." << k;
            }
        }
    }
    EXPECT_GE(run0["ops"].value("sections_completed", 0), 1);
    expect_member(run0, "runs[0]", "latency_ms");
    if (run0.contains("latency_ms")) {
        for (const char* k : {"acquire", "release"}) {
            expect_member(run0["latency_ms"], "runs[0].latency_ms", k);
            if (run0["latency_ms"].contains(k)) expect_percentiles(run0["latency_ms"][k], std::string("latency_ms.") + k);
        }
    }
    expect_member(run0, "runs[0]", "witnesses");
    EXPECT_TRUE(run0.contains("witnesses") && run0["witnesses"].is_array());

    const Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 0) << c.describe();
    EXPECT_NE(c.out.find("tiny-token-lua"), std::string::npos) << c.describe();
    EXPECT_NE(c.out.find("held"), std::string::npos) << c.describe();
    EXPECT_EQ(c.out.find("NOT HELD"), std::string::npos) << c.describe();
}

TEST_F(CliTest, ExpectationNotHeldExits1) {
    const fs::path file = write_file(
        "greedy.json",
        scenario(2, 300,
                 R"([{"algorithm": "token-lua", "name": "greedy", "expect": {"sections_completed": ">= 1000000"}}])"));
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.out.find("greedy"), std::string::npos) << r.describe();
    EXPECT_NE(r.out.find("NOT HELD"), std::string::npos) << r.describe();
    EXPECT_TRUE(fs::exists(out / "summary.json")) << "a result that misses its expectation is still a result";

    const Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 1) << c.describe();
    EXPECT_NE(c.out.find("NOT HELD"), std::string::npos) << c.describe();
}

// ---- 5. list --------------------------------------------------------------------------------

TEST_F(CliTest, ListShowsAlgorithmsAndParameters) {
    const Result r = run({"list"});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::map<std::string, std::vector<std::string>> expected = {
        {"setnx", {"ttl_ms", "expiry", "value", "release"}},
        {"getset", {"ttl_ms"}},
        {"token-lua", {"ttl_ms", "fence", "wait_replicas", "wait_timeout_ms"}},
        {"redlock", {"ttl_ms", "node_timeout_ms", "drift_factor", "drift_ms", "check_validity"}},
        {"reentrant", {"lease_ms", "watchdog", "depth"}},
    };
    // Each algorithm starts an unindented line; its parameters follow, indented, until the next.
    std::map<std::string, std::string> section;
    std::string current;
    for (const auto& line : lines_of(r.out)) {
        if (!line.empty() && line[0] != ' ') {
            current.clear();
            for (const auto& [name, _] : expected)
                if (line.rfind(name + " ", 0) == 0) current = name;
            continue;
        }
        if (!current.empty()) section[current] += line + "\n";
    }
    for (const auto& [name, params] : expected) {
        ASSERT_TRUE(section.contains(name)) << "no line for " << name << "\n" << r.describe();
        for (const auto& p : params)
            EXPECT_NE(section[name].find("    " + p + " = "), std::string::npos)
                << name << ": parameter " << p << " not listed\n" << r.describe();
    }
}

// ---- 6. Nothing outlives the tool -----------------------------------------------------------

class LifetimeTest : public CliTest {
protected:
    void SetUp() override {
        CliTest::SetUp();
        // Orphans of a killed lockbench come to us, so we can reap them instead of leaving
        // zombies to a PID 1 that may not.
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    }
    void TearDown() override {
        // Whatever the verdict, leave nothing running.
        for (const auto& p : seen_)
            if (!gone(p)) ::kill(p.pid, SIGKILL);
        for (int i = 0; i < 50; ++i) {
            reap_children();
            if (std::all_of(seen_.begin(), seen_.end(), gone)) break;
            std::this_thread::sleep_for(20ms);
        }
        reap_children();
        prctl(PR_SET_CHILD_SUBREAPER, 0);
        CliTest::TearDown();
    }

    // Starts a 5 s redlock run (5 lock nodes + store, 2 clients) and waits (up to 10 s) until
    // all its redis-server children and its client processes exist.
    std::unique_ptr<Tool> start_busy_run(const std::string& runs = R"([{"algorithm": "redlock", "name": "busy-redlock"}])") {
        const fs::path file = write_file("busy.json", scenario(2, 5000, runs));
        auto tool = start({"run", file.string(), "--out", (dir() / "out").string()});
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        std::vector<ProcInfo> kids;
        for (;;) {
            kids = children_of(tool->pid());
            const auto redis = std::count_if(kids.begin(), kids.end(),
                                             [](const ProcInfo& p) { return p.comm.starts_with("redis-server"); });
            const auto clients =
                std::count_if(kids.begin(), kids.end(), [](const ProcInfo& p) { return p.comm == "lockbench"; });
            if (redis >= 6 && clients >= 2) break;
            if (!tool->running() || std::chrono::steady_clock::now() >= deadline) {
                ADD_FAILURE() << "lockbench never had 6 redis-server and 2 client children; it had:\n"
                              << describe(kids) << tool->finish(1s).describe();
                return nullptr;
            }
            std::this_thread::sleep_for(20ms);
        }
        for (const auto& p : kids)
            if (p.comm.starts_with("redis-server") || p.comm == "lockbench") seen_.push_back(p);
        return tool;
    }

    // Polls (up to 5 s) until every process seen is gone; fails listing the survivors.
    void expect_all_gone() {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        std::vector<ProcInfo> alive;
        for (;;) {
            reap_children();
            alive.clear();
            for (const auto& p : seen_)
                if (!gone(p)) alive.push_back(read_proc(p.pid).value_or(p));
            if (alive.empty() || std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(20ms);
        }
        EXPECT_TRUE(alive.empty()) << "still running 5 s after lockbench ended:\n" << describe(alive);
    }

    std::vector<ProcInfo> seen_;
};

TEST_F(LifetimeTest, SigkillLeavesNoRedisServerOrClient) {
    auto tool = start_busy_run();
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json"));
}

TEST_F(LifetimeTest, SigintInTheMiddleOfFaultsLeavesNothingStoppedOrRunning) {
    // Client 0 is stopped (SIGSTOP) from the start; client 1's links to two nodes are held.
    auto tool = start_busy_run(R"([{"algorithm": "redlock", "name": "busy-redlock", "faults": [
        {"fault": "pause", "at_ms": 0, "client": 0, "duration_ms": 4500},
        {"fault": "link", "at_ms": 0, "client": 1, "mode": "hold", "nodes": [0, 1]}]}])");
    ASSERT_TRUE(tool);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    bool stopped = false;
    while (!stopped && std::chrono::steady_clock::now() < deadline) {
        for (const auto& p : children_of(tool->pid()))
            if (p.comm == "lockbench" && p.state == 'T') stopped = true;
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(stopped) << "client 0 should be stopped by the pause fault";
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) || (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0)) << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json")) << r.describe();
}

TEST_F(LifetimeTest, SigintLeavesNoRedisServerOrClient) {
    auto tool = start_busy_run();
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) || (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0))
        << "Ctrl-C should not end in success\n" << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json")) << r.describe();
}

}  // namespace
