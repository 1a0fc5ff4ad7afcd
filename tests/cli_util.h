// Driving the real lockbench binary (LOCKBENCH_BINARY) from a test: a started process with
// stdout and stderr captured to files, its children read from /proc, and a fixture that gives
// each test its own temp folder. Shared by cli_test and matrix_test.
#pragma once

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

#include "proc_util.h"

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
    std::string program;                         // what to run instead of lockbench
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

inline std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_text(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.flush()) << "cannot write " << p;
}

inline std::vector<std::string> lines_of(const std::string& text) {
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
        std::vector<std::string> argv_s{opts.program.empty() ? LOCKBENCH_BINARY : opts.program};
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

inline std::optional<ProcInfo> read_proc(pid_t pid) {
    const std::optional<std::string> stat = lockbench::testing_util::proc_stat(pid);
    if (!stat) return std::nullopt;
    const std::string& text = *stat;
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

inline std::vector<ProcInfo> children_of(pid_t parent) {
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
inline bool gone(const ProcInfo& p) {
    const auto now = read_proc(p.pid);
    return !now || now->starttime != p.starttime || now->state == 'Z' || now->state == 'X';
}

// Reaps whatever exited among our own children (orphans come to us as a subreaper).
inline void reap_children() {
    int st = 0;
    while (waitpid(-1, &st, WNOHANG) > 0) {
    }
}

inline std::string describe(const std::vector<ProcInfo>& ps) {
    std::string s;
    for (const auto& p : ps)
        s += "  pid " + std::to_string(p.pid) + " (" + p.comm + ") state " + p.state + " ppid " +
             std::to_string(p.ppid) + "\n";
    return s;
}

// ---- Fixture --------------------------------------------------------------------------------

class CliTest : public ::testing::Test {
protected:
    // Expects `r` to be a clean refusal: exit 2 and one line on stderr holding `piece`.
    static void expect_one_line_error(const Result& r, const std::string& piece) {
        EXPECT_EQ(r.exit_code(), 2) << r.describe();
        EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
        EXPECT_NE(r.err.find(piece), std::string::npos) << "stderr should mention " << piece << "\n" << r.describe();
        EXPECT_EQ(r.err.find("Traceback"), std::string::npos) << r.describe();
    }

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

}  // namespace
