// Live tests for process/process.h and sim/live/redis_node.h: real redis-server processes, real
// forks. Waits are bounded polls for an outcome; nothing asserts how long anything took.
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "proc_util.h"
#include "tests/test_util.h"
#include "faults/listeners.h"
#include "process/process.h"
#include "process/stopped.h"
#include "sim/live/redis_node.h"
#include "sim/live/sentinel.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// ---- Helpers --------------------------------------------------------------------------------

using testing_util::command;
using testing_util::connect_to;
using testing_util::Context;
using testing_util::Reply;

std::string text(const Reply& r) {
    return r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
               ? std::string(r->str, r->len)
               : "<not text>";
}

using testing_util::EnvOverride;

// Gone, or a zombie whose new parent (init) has not reaped it yet: either way, dead
// (process_state, process/stopped.h: '?' once it is gone).
bool process_gone(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    const char state = process_state(pid);
    return state == '?' || state == 'Z';
}

using testing_util::eventually;

// A plain listening socket on 127.0.0.1:port, or -1.
int listen_on(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd, 1) == 0)
        return fd;
    close(fd);
    return -1;
}

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "<no exception>";
}

class RedisNodeTest : public ::testing::Test {
protected:
    void TearDown() override { fs::remove_all(run_dir); }
    RedisNodeConfig config(Persistence persistence = Persistence::none) {
        RedisNodeConfig c;
        c.name = "lock0";
        c.persistence = persistence;
        return c;
    }
    fs::path run_dir = make_run_temp_dir();
};

// ---- RedisNode ------------------------------------------------------------------------------

TEST_F(RedisNodeTest, StartAnswersPingOnLoopbackOnly) {
    RedisNode node(config(), run_dir);
    EXPECT_EQ(node.dir(), run_dir / "lock0");
    EXPECT_TRUE(fs::exists(node.log_path()));
    EXPECT_EQ(getpgid(node.pid()), node.pid());  // its own process group

    const Context c = connect_to(node.port());
    ASSERT_TRUE(c && !c->err);
    EXPECT_EQ(text(command(c, "PING")), "PONG");
    const Reply bind = command(c, "CONFIG GET bind");
    ASSERT_TRUE(bind && bind->type == REDIS_REPLY_ARRAY && bind->elements == 2);
    EXPECT_EQ(std::string(bind->element[1]->str), "127.0.0.1");
    const Reply save = command(c, "CONFIG GET save");
    ASSERT_TRUE(save && save->type == REDIS_REPLY_ARRAY && save->elements == 2);
    EXPECT_EQ(std::string(save->element[1]->str), "");
}

TEST_F(RedisNodeTest, UsesTheGivenPortWhenFree) {
    const int port = find_free_port();
    RedisNodeConfig c = config();
    c.port = port;
    RedisNode node(c, run_dir);
    EXPECT_EQ(node.port(), port);
    EXPECT_TRUE(port_in_use(port));
}

// What a server's start asks before it believes an answer on its port is its own (ZooKeeper,
// etcd, PgBouncer): the port's listener is the server's process, not another's.
TEST_F(RedisNodeTest, ListensOnTellsWhoseListenerAPortIs) {
    RedisNode node(config(), run_dir);
    EXPECT_TRUE(listens_on(node.pid(), node.port()));
    EXPECT_FALSE(listens_on(::getpid(), node.port())) << "this test only connects to it";
    const int own = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::bind(own, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const int port = (::getsockname(own, reinterpret_cast<sockaddr*>(&addr), &len), ntohs(addr.sin_port));
    EXPECT_FALSE(listens_on(::getpid(), port)) << "bound, not yet listening";
    ASSERT_EQ(::listen(own, 1), 0);
    EXPECT_TRUE(listens_on(::getpid(), port));
    EXPECT_FALSE(listens_on(node.pid(), port));
    const auto listeners = tcp_listeners(node.pid());
    ASSERT_FALSE(listeners.empty());
    for (const TcpListener& l : listeners) EXPECT_TRUE(l.loopback()) << l.text();
    ::close(own);
    EXPECT_FALSE(listens_on(::getpid(), port));
    node.kill();
    EXPECT_TRUE(eventually([&] { return !node.running(); }));
    EXPECT_FALSE(listens_on(node.pid(), node.port())) << "a process that is gone listens on nothing";
}

// The processes of group `group` and the state letter of each, from /proc.
std::map<pid_t, char> group_states(pid_t group) {
    std::map<pid_t, char> states;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::optional<std::string> text = testing_util::proc_stat(std::stoi(name));
        const auto paren = text ? text->rfind(')') : std::string::npos;
        if (paren == std::string::npos) continue;
        std::istringstream rest(text->substr(paren + 2));
        char state = '?';
        pid_t parent = 0, its_group = 0;
        rest >> state >> parent >> its_group;
        if (its_group == group) states[std::stoi(name)] = state;
    }
    return states;
}

// Two connections straight from this process to the node are shut down, each end reads its
// end, and the node answers a new one; a connection of this process to itself is no
// connection between the two, and a second call finds nothing left.
TEST_F(RedisNodeTest, EndDirectConnectionsShutsDownTheOnesBetweenTwoProcessesOnly) {
    RedisNode node(config(), run_dir);
    auto first = connect_to(node.port()), second = connect_to(node.port());
    ASSERT_EQ(text(command(first, "PING")), "PONG");
    ASSERT_EQ(text(command(second, "PING")), "PONG");
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), self = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener, 1), 0);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    ASSERT_EQ(::connect(self, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const int accepted = ::accept(listener, nullptr, nullptr);
    ASSERT_GE(accepted, 0);

    EXPECT_EQ(end_direct_connections(node.pid(), ::getpid()), 2);
    char byte = 0;
    EXPECT_EQ(::recv(first->fd, &byte, 1, 0), 0) << "the node's end was shut down: this end reads its end";
    EXPECT_EQ(::recv(second->fd, &byte, 1, 0), 0);
    EXPECT_EQ(text(command(connect_to(node.port()), "PING")), "PONG");
    EXPECT_EQ(end_direct_connections(::getpid(), node.pid()), 0) << "none left, from either side";
    EXPECT_EQ(::send(self, "x", 1, MSG_NOSIGNAL), 1) << "this process's own connection is untouched";
    EXPECT_EQ(::recv(accepted, &byte, 1, 0), 1);
    for (int fd : {listener, self, accepted}) ::close(fd);
}

// A client's pause (the nemesis's SIGSTOP to its group) is in place once every process of
// the group is stopped: a client and its adapter each take the signal on their own. A member
// already dead is not waited for; a group that runs on is told, at the bound.
TEST(Stopped, AGroupIsStoppedOnceNoneOfItsProcessesRuns) {
    ChildProcess group = ChildProcess::spawn({{"sh", "-c", "true & sleep 1000 & sleep 1000 & wait"}});
    ASSERT_TRUE(eventually([&] { return group_states(group.pid()).size() >= 3; })) << "sh and its two sleeps";
    EXPECT_FALSE(wait_group_none_running(group.pid(), 50ms)) << "nothing has stopped it";
    ::kill(-group.pid(), SIGSTOP);
    ASSERT_TRUE(wait_group_none_running(group.pid(), 10s));
    for (const auto& [pid, state] : group_states(group.pid()))
        EXPECT_TRUE(state == 'T' || state == 'Z') << "pid " << pid << " is " << state;
    group.signal(SIGCONT);
    EXPECT_TRUE(group.stop());
    EXPECT_EQ(group_states(group.pid()).at(group.pid()), 'T') << "stop() is in place when it returns";
    group.signal(SIGKILL);
    EXPECT_TRUE(wait_exited(group.pid(), 10s));
    EXPECT_EQ(group_states(group.pid()).count(group.pid()), 1u) << "exited, not reaped: its pid is still its own";
    EXPECT_FALSE(group.running());
    // SIGKILL reached the sleeps too; each reads as running until it has died.
    EXPECT_TRUE(wait_group_none_running(group.pid(), 10s)) << "a group that is gone has nothing running";
}

TEST_F(RedisNodeTest, KillThenRestartWithoutDataComesBackEmpty) {
    RedisNode node(config(), run_dir);
    const int port = node.port();
    EXPECT_EQ(text(command(connect_to(port), "SET k v")), "OK");
    node.kill();  // returns at once; the server dies a moment later
    EXPECT_TRUE(eventually([&] { return !node.running(); }));
    node.restart(false);
    EXPECT_TRUE(node.running());
    EXPECT_EQ(node.port(), port);
    const Reply size = command(connect_to(port), "DBSIZE");
    ASSERT_TRUE(size && size->type == REDIS_REPLY_INTEGER);
    EXPECT_EQ(size->integer, 0);
}

// A restarted node is back for the clients once one asks it something: what a library sends
// on connecting (and lockbench's own PING and INFO) is no question; a SET or a script's run is.
TEST_F(RedisNodeTest, AskedSinceStartCountsAClientsQuestionNotItsConnecting) {
    RedisNode node(config(), run_dir);
    EXPECT_FALSE(node.asked_since_start());
    const auto c = connect_to(node.port());
    EXPECT_EQ(text(command(c, "PING")), "PONG");
    command(c, "CLIENT SETNAME lib");
    command(c, "HELLO 2");
    command(c, "SELECT 0");
    command(c, "INFO");
    EXPECT_FALSE(node.asked_since_start());
    command(c, "EVAL return 0");  // the script "return", no keys
    EXPECT_TRUE(node.asked_since_start());
    node.kill();
    EXPECT_TRUE(eventually([&] { return !node.running(); }));
    node.restart(false);
    EXPECT_FALSE(node.asked_since_start());  // its counts begin again
    EXPECT_EQ(text(command(connect_to(node.port()), "SET k v")), "OK");
    EXPECT_TRUE(node.asked_since_start());
}

TEST_F(RedisNodeTest, AofAlwaysKeepsAKeyAcrossKillOnlyWhenKeepingData) {
    RedisNode node(config(Persistence::aof_always), run_dir);
    EXPECT_EQ(text(command(connect_to(node.port()), "SET k v")), "OK");
    node.kill();
    node.restart(true);
    EXPECT_EQ(text(command(connect_to(node.port()), "GET k")), "v");
    node.restart(false);  // also kills the running server first
    const Reply gone = command(connect_to(node.port()), "GET k");
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->type, REDIS_REPLY_NIL);
}

TEST_F(RedisNodeTest, StopThenStartAgainOnTheSamePort) {
    RedisNode node(config(), run_dir);
    const int port = node.port();
    node.stop();
    EXPECT_FALSE(node.running());
    node.start();
    EXPECT_EQ(node.port(), port);
    EXPECT_EQ(text(command(connect_to(port), "PING")), "PONG");
}

TEST_F(RedisNodeTest, PauseStopsTheProcessAndResumeRevivesIt) {
    RedisNode node(config(), run_dir);
    node.pause();
    EXPECT_TRUE(eventually([&] { return process_state(node.pid()) == 'T'; }));
    node.resume();
    EXPECT_TRUE(eventually([&] { return process_state(node.pid()) != 'T'; }));
    EXPECT_EQ(text(command(connect_to(node.port()), "PING")), "PONG");
}

TEST_F(RedisNodeTest, DestructorLeavesNoProcess) {
    pid_t pid;
    {
        RedisNode node(config(), run_dir);
        pid = node.pid();
    }
    EXPECT_TRUE(process_gone(pid));
}

TEST_F(RedisNodeTest, PortInUseGivesAClearError) {
    const int port = find_free_port();
    const int listener = listen_on(port);
    ASSERT_GE(listener, 0);

    RedisNodeConfig c = config();
    c.port = port;
    EXPECT_EQ(error_of([&] { RedisNode node(c, run_dir); }),
              "port " + std::to_string(port) +
                  " on 127.0.0.1 is already in use (node lock0); choose another or leave the "
                  "port unset");
    close(listener);
}

TEST_F(RedisNodeTest, RestartOnAPortTakenMeanwhileGivesAClearError) {
    RedisNode node(config(), run_dir);
    const int port = node.port();
    node.kill();
    ASSERT_TRUE(eventually([&] { return !node.running(); }));  // its port is free once it is gone
    const int listener = listen_on(port);
    ASSERT_GE(listener, 0);
    EXPECT_EQ(error_of([&] { node.restart(true); }),
              "port " + std::to_string(port) +
                  " on 127.0.0.1 is already in use (node lock0); choose another or leave the "
                  "port unset");
    EXPECT_FALSE(node.running());
    close(listener);
}

TEST_F(RedisNodeTest, MissingConfiguredBinaryGivesAClearError) {
    EnvOverride env("LOCKBENCH_REDIS_SERVER", "/nonexistent/redis-server");
    EXPECT_EQ(error_of([&] { RedisNode node(config(), run_dir); }),
              "LOCKBENCH_REDIS_SERVER=/nonexistent/redis-server: no such executable");
}

TEST_F(RedisNodeTest, BinaryNotOnPathNamesTheFix) {
    EnvOverride path("PATH", run_dir.string());
    EXPECT_EQ(error_of([] { redis_server_binary(); }),
              "redis-server not found on PATH: run scripts/setup (or apt-get install redis-server)");
}

// The error quotes what the log said rather than naming it: a run's log lives in a
// temporary folder that is gone by the time the error is read.
TEST_F(RedisNodeTest, ServerThatExitsAtStartQuotesItsLog) {
    RedisNodeConfig c = config();
    c.extra_args = {"--no-such-directive", "1"};
    const std::string error = error_of([&] { RedisNode node(c, run_dir); });
    EXPECT_NE(error.find("redis node lock0"), std::string::npos) << error;
    EXPECT_NE(error.find("exited during start-up"), std::string::npos) << error;
    EXPECT_NE(error.find("no-such-directive"), std::string::npos) << error;
    EXPECT_NE(error.find("Bad directive"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(RunTempDir, RemovesFoldersOfDeadRunsOnly) {
    std::string base_pattern = (fs::temp_directory_path() / "lockbench-test.XXXXXX").string();
    const fs::path base = mkdtemp(base_pattern.data());
    const pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, nullptr, 0);
    const fs::path stale = base / ("lockbench." + std::to_string(dead) + ".aaaaaa");
    const fs::path ours = base / ("lockbench." + std::to_string(getpid()) + ".bbbbbb");
    fs::create_directories(stale / "lock0");
    fs::create_directories(ours);

    EnvOverride tmpdir("TMPDIR", base.string());
    const fs::path fresh = make_run_temp_dir();
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(ours));
    EXPECT_TRUE(fs::is_directory(fresh));
    EXPECT_EQ(fresh.parent_path(), base);
    EXPECT_TRUE(fresh.filename().string().starts_with("lockbench." + std::to_string(getpid()) + "."));
    fs::remove_all(base);
}

// ---- ChildProcess ---------------------------------------------------------------------------

SpawnOptions options(std::vector<std::string> argv, std::string stdout_path = "") {
    SpawnOptions opts;
    opts.argv = std::move(argv);
    opts.stdout_path = std::move(stdout_path);
    return opts;
}

TEST(ChildProcess, ExecFailureThrowsInsteadOfReturningADeadChild) {
    EXPECT_EQ(error_of([] { ChildProcess::spawn(options({"/nonexistent/prog"})); }),
              "cannot start /nonexistent/prog: No such file or directory");
    EXPECT_EQ(error_of([] { ChildProcess::spawn(options({"lockbench-no-such-program"})); }),
              "cannot start lockbench-no-such-program: not found on PATH");
}

TEST(ChildProcess, NonExecutableFileReportsTheChildsErrno) {
    const fs::path dir = make_run_temp_dir();
    const fs::path script = dir / "not-executable";
    std::ofstream(script) << "#!/bin/sh\n";
    EXPECT_EQ(error_of([&] { ChildProcess::spawn(options({script.string()})); }),
              "cannot start " + script.string() + ": Permission denied");
    const std::string missing_log = (dir / "missing" / "out.log").string();
    EXPECT_EQ(error_of([&] {
                  ChildProcess::spawn(options({"true"}, missing_log));
              }),
              "cannot start true: cannot open " + missing_log + ": No such file or directory");
    fs::remove_all(dir);
}

TEST(ChildProcess, RunsInItsOwnGroupWithRedirectedOutputAndExtraEnvironment) {
    const fs::path dir = make_run_temp_dir();
    const fs::path out = dir / "out.txt";
    SpawnOptions opts = options({"sh", "-c", "echo \"$LB_GREETING\""}, out.string());
    opts.extra_env = {"LB_GREETING=hello"};
    ChildProcess child = ChildProcess::spawn(opts);
    const auto status = child.wait_for(5000ms);
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    std::string line;
    std::getline(std::ifstream(out), line);
    EXPECT_EQ(line, "hello");
    EXPECT_FALSE(child.running());
    fs::remove_all(dir);
}

// The guard of a process that ended comes to the subreaper above it as a zombie: a matrix that
// ran thousands of repetitions held hundreds of them until it ended. reap_orphaned_guards()
// takes them. In a helper process, so that this test's own process adopts nothing.
TEST(ChildProcess, AnOrphanedGuardIsReapedByTheSubreaperItCameTo) {
    const pid_t helper = fork();
    ASSERT_GE(helper, 0);
    if (helper == 0) {
        adopt_orphans();
        const pid_t watched = fork();
        if (watched == 0) {
            setpgid(0, 0);  // a guard watches a group's leader
            kill_own_group_when_gone();
            _exit(0);
        }
        waitpid(watched, nullptr, 0);
        // Each zombie guard of ours, by pid, from /proc.
        const auto zombie_guards = [] {
            int n = 0;
            for (const auto& e : fs::directory_iterator("/proc")) {
                std::string stat;
                std::getline(std::ifstream(e.path() / "stat"), stat);
                const size_t close_paren = stat.rfind(')');
                if (stat.find("(lockbench-guard)") == std::string::npos || close_paren == std::string::npos) continue;
                std::istringstream rest(stat.substr(close_paren + 1));
                char state = 0;
                pid_t ppid = 0;
                if (rest >> state >> ppid && state == 'Z' && ppid == getpid()) ++n;
            }
            return n;
        };
        int before = 0;
        for (int i = 0; i < 500 && (before = zombie_guards()) == 0; ++i) usleep(10'000);
        reap_orphaned_guards();
        _exit(before != 1 ? 1 : zombie_guards() != 0 ? 2 : 0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(helper, &status, 0), helper);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_NE(WEXITSTATUS(status), 1) << "the guard never came to the subreaper as a zombie";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the zombie guard is still there";
}

// Forks a helper that spawns `sleep 1000` with ChildProcess and then waits forever; returns
// the helper's pid and the sleeper's.
std::pair<pid_t, pid_t> helper_with_sleeping_child(bool install_cleanup) {
    int fds[2];
    if (pipe(fds) != 0) return {-1, -1};
    const pid_t helper = fork();
    if (helper == 0) {
        close(fds[0]);
        try {
            if (install_cleanup) install_cleanup_on_signals();
            ChildProcess sleeper = ChildProcess::spawn(options({"sleep", "1000"}));
            const pid_t pid = sleeper.pid();
            if (write(fds[1], &pid, sizeof pid) != sizeof pid) _exit(2);
            for (;;) pause();
        } catch (...) {
            _exit(1);
        }
    }
    close(fds[1]);
    pid_t sleeper = -1;
    if (read(fds[0], &sleeper, sizeof sleeper) != sizeof sleeper) sleeper = -1;
    close(fds[0]);
    return {helper, sleeper};
}

// While it lives, orphans are re-parented to this test process instead of init: the test can
// then see how the orphaned sleeper died, and reap it instead of leaving a zombie behind.
class AdoptOrphans {
public:
    AdoptOrphans() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
    ~AdoptOrphans() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// The wait status of our (adopted) child `pid` once it has died.
std::optional<int> reap_when_dead(pid_t pid) {
    int status = 0;
    if (eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; })) return status;
    return std::nullopt;
}

bool killed_by(std::optional<int> status, int sig) {
    return status && WIFSIGNALED(*status) && WTERMSIG(*status) == sig;
}

TEST(ChildProcess, DiesWhenItsParentIsKilled) {
    AdoptOrphans adopt;
    const auto [helper, sleeper] = helper_with_sleeping_child(false);
    ASSERT_GT(helper, 0);
    ASSERT_GT(sleeper, 0);
    EXPECT_FALSE(process_gone(sleeper));
    ::kill(helper, SIGKILL);
    waitpid(helper, nullptr, 0);
    EXPECT_TRUE(killed_by(reap_when_dead(sleeper), SIGKILL));
}

TEST(ChildProcess, CleanupHandlerKillsChildrenAndReraisesTheSignal) {
    AdoptOrphans adopt;
    const auto [helper, sleeper] = helper_with_sleeping_child(true);
    ASSERT_GT(helper, 0);
    ASSERT_GT(sleeper, 0);
    ::kill(helper, SIGTERM);
    int status = 0;
    waitpid(helper, &status, 0);
    EXPECT_TRUE(killed_by(status, SIGTERM));  // re-raised, so the shell sees the real cause
    EXPECT_TRUE(killed_by(reap_when_dead(sleeper), SIGKILL));
}

// ---- SentinelGroup ----------------------------------------------------------------------------

// A free port can be taken before the Sentinel binds it (side by side, another repetition's
// server took one in a catalog round): the Sentinel that could not bind its port starts again
// on another, rather than the run waiting 10 s for it and failing.
TEST_F(RedisNodeTest, ASentinelWhosePortWasTakenStartsOnAnother) {
    RedisNode master(config(), run_dir / "master");
    master.start();
    const int taken = find_free_port();
    const int fd = listen_on(taken);
    ASSERT_GE(fd, 0);
    int picked = 0;
    const auto pick = [&] { return picked++ == 0 ? taken : find_free_port(); };
    const SentinelGroup group("lockbench", {"127.0.0.1", master.port()}, run_dir / "sentinels", SentinelSettings{}, pick);
    close(fd);
    EXPECT_EQ(picked, 2);
    ASSERT_EQ(group.endpoints().size(), 1u);
    EXPECT_NE(group.endpoints()[0].port, taken);
    Context c = connect_to(group.endpoints()[0].port);
    const Reply master_addr = command(c, "SENTINEL get-master-addr-by-name lockbench");
    ASSERT_TRUE(master_addr && master_addr->type == REDIS_REPLY_ARRAY && master_addr->elements == 2);
    EXPECT_EQ(std::string(master_addr->element[1]->str), std::to_string(master.port()));
}

}  // namespace
}  // namespace lockbench
