// Live tests for ZooKeeper as a lock service (sim/live/zookeeper.h): real JVMs from Debian's
// zookeeper package, standalone and as a three-server ensemble, under the faults lockbench
// applies to them, and kazoo's lock through its adapter (adapters/kazoo-lock/adapter.py).
// Every wait polls for an outcome with a deadline; nothing asserts a duration.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "faults/clock_control.h"
#include "faults/link_proxy.h"
#include "faults/listeners.h"
#include "process/stopped.h"
#include "process/process.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"
#include "sim/live/server_pool.h"
#include "sim/live/zookeeper.h"
#include "proc_util.h"

extern char** environ;

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Polls for an outcome; generous because JVMs on two busy cores elect slowly, and the bound
// only keeps a broken build from hanging the suite.
bool eventually(const std::function<bool()>& condition, std::chrono::seconds bound = 30s) {
    const auto deadline = Clock::now() + bound;
    while (!condition()) {
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(50ms);
    }
    return true;
}

std::string mode_of(LockServer* server) {
    const auto srvr = four_letter_word(server->port(), "srvr", 1s);
    return srvr ? srvr_field(*srvr, "Mode").value_or("?") : "no answer";
}

bool process_gone(pid_t pid) {
    const std::optional<std::string> stat = lockbench::testing_util::proc_stat(pid);
    if (!stat) return true;
    const std::string line = stat->substr(0, stat->find('\n'));
    const auto close = line.rfind(')');
    return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

std::string read_all(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
}

// Runs /usr/bin/python3 with kazoo on `script`; returns its stdout once it has exited.
std::string run_python(const fs::path& dir, const std::string& script, std::vector<std::string> args = {}) {
    fs::remove(dir / "py.out");  // this run's alone
    args.insert(args.begin(), {"/usr/bin/python3", "-c", script});
    ChildProcess child = ChildProcess::spawn({args, (dir / "py.out").string(), (dir / "py.err").string(), {}});
    const auto status = child.wait_for(60s);
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_all(dir / "py.err");
    return read_all(dir / "py.out");
}

class ZooKeeperTest : public ::testing::Test {
protected:
    // A failed test shows what each server last logged (an election that never ended, a port
    // it could not bind): its run folder is gone after.
    void TearDown() override {
        if (HasFailure())
            for (int i = 0; fs::exists(run_dir / ("zk" + std::to_string(i))); ++i)
                std::cout << "zk" << i << "'s log ended:\n" << log_tail(run_dir / ("zk" + std::to_string(i)) / "zookeeper.log", 40) << "\n";
        fs::remove_all(run_dir);
    }
    std::unique_ptr<LockService> start(int size, ProxyHub* hub = nullptr, std::vector<std::vector<std::string>> env = {}) {
        ServiceConfig config;
        config.size = size;
        config.dir = run_dir;
        config.env = std::move(env);
        config.peer_proxies = hub;
        return start_service(Service::zookeeper, config);
    }
    // To be kept across repetitions: its state as new recorded for wipe(). In run_dir/`sub`.
    std::unique_ptr<LockService> start_kept(int size, const std::string& sub = "") {
        ServiceConfig config;
        config.size = size;
        config.dir = run_dir / sub;
        config.kept = true;
        return start_service(Service::zookeeper, config);
    }
    fs::path run_dir = make_run_temp_dir();
};

// ---- Start, answer, lead ------------------------------------------------------------------------

TEST_F(ZooKeeperTest, StandaloneAnswersAndLeads) {
    auto zk = start(1);
    ASSERT_EQ(zk->servers().size(), 1u);
    EXPECT_EQ(zk->servers()[0]->name(), "zk0");
    EXPECT_EQ(four_letter_word(zk->servers()[0]->port(), "ruok", 1s), "imok");
    EXPECT_EQ(mode_of(zk->servers()[0]), "standalone");
    EXPECT_EQ(zk->leader(), 0);
}

TEST_F(ZooKeeperTest, EnsembleElectsExactlyOneLeader) {
    auto zk = start(3);
    const auto leader = zk->leader();
    ASSERT_TRUE(leader);
    for (int i = 0; i < 3; ++i) {
        LockServer* server = zk->servers()[static_cast<size_t>(i)];
        EXPECT_EQ(server->name(), "zk" + std::to_string(i));
        EXPECT_EQ(four_letter_word(server->port(), "ruok", 1s), "imok");
        // A follower that has just started may still be syncing with the leader.
        EXPECT_TRUE(eventually([&] { return mode_of(server) == (i == *leader ? "leader" : "follower"); }))
            << server->name() << ": " << mode_of(server);
    }
}

TEST_F(ZooKeeperTest, EveryListenerOfTheJvmsIsOnLoopback) {
    auto zk = start(3);
    std::set<int> ports;
    for (LockServer* server : zk->servers())
        for (const TcpListener& l : tcp_listeners(server->pid())) {
            EXPECT_TRUE(l.loopback()) << server->name() << " listens on " << l.text();
            // Below the ephemeral range, where no outgoing connection can take it first.
            EXPECT_LT(l.port, 32768) << server->name();
            ports.insert(l.port);
        }
    for (LockServer* server : zk->servers()) EXPECT_TRUE(ports.contains(server->port())) << server->name();
    // Each server's client and election ports, and the leader's quorum port.
    EXPECT_GE(ports.size(), 7u);
}

// ---- Faults -------------------------------------------------------------------------------------

TEST_F(ZooKeeperTest, KilledFollowerRestartsAndRejoins) {
    auto zk = start(3);
    ASSERT_TRUE(zk->leader());
    const int leader = *zk->leader();
    LockServer* follower = zk->servers()[static_cast<size_t>((leader + 1) % 3)];
    const pid_t old_pid = follower->pid();
    follower->kill();
    EXPECT_TRUE(eventually([&] { return process_gone(old_pid); }));
    EXPECT_FALSE(four_letter_word(follower->port(), "ruok", 1s));
    EXPECT_EQ(zk->leader(), leader);  // two of three still form the quorum
    follower->restart(true);
    EXPECT_NE(follower->pid(), old_pid);
    EXPECT_EQ(four_letter_word(follower->port(), "ruok", 1s), "imok");
    EXPECT_TRUE(eventually([&] { return mode_of(follower) == "follower"; })) << mode_of(follower);
}

TEST_F(ZooKeeperTest, KilledLeaderIsReplacedAndRejoinsAsFollower) {
    auto zk = start(3);
    ASSERT_TRUE(zk->leader());
    const int old_leader = *zk->leader();
    LockServer* killed = zk->servers()[static_cast<size_t>(old_leader)];
    killed->kill();
    std::optional<int> now;
    EXPECT_TRUE(eventually([&] { return (now = zk->leader()) && *now != old_leader; }));
    killed->restart(false);  // keep_data=false is not meaningful for ZooKeeper: kept anyway
    EXPECT_TRUE(eventually([&] { return mode_of(killed) == "follower"; })) << mode_of(killed);
    EXPECT_EQ(zk->leader(), now);
}

TEST_F(ZooKeeperTest, PausedServerAnswersNothingAndLeaderDoesNotWaitForIt) {
    auto zk = start(1);
    LockServer* server = zk->servers()[0];
    server->pause();
    // In place when pause() returns: SIGSTOP stops a JVM's threads only once the one the kernel
    // woke for it runs, and the others meanwhile answer (CI: ruok answered 300 ms after it).
    EXPECT_TRUE(wait_stopped(server->pid(), 0ms)) << "a thread of the paused JVM still runs";
    const auto answer = four_letter_word(server->port(), "ruok", 300ms);
    EXPECT_FALSE(answer) << "answered \"" << answer.value_or("") << "\"; pid " << server->pid() << " state "
                         << read_all("/proc/" + std::to_string(server->pid()) + "/stat") << " listens: " << [&] {
                                std::string all;
                                for (const auto& l : tcp_listeners(server->pid())) all += l.text() + " ";
                                return all;
                            }() << " port " << server->port();
    EXPECT_EQ(zk->leader(), std::nullopt);  // a paused server is not asked
    server->resume();
    EXPECT_EQ(four_letter_word(server->port(), "ruok", 5s), "imok");
    EXPECT_EQ(zk->leader(), 0);
}

TEST_F(ZooKeeperTest, CuttingTheLeadersPeerLinksElectsAnotherLeader) {
    ProxyHub hub(1);
    auto zk = start(3, &hub);
    for (const char* link : {"s0-s1-quorum", "s0-s1-election", "s2-s1-election", "s1-s2-quorum"})
        EXPECT_TRUE(hub.find(link)) << link;
    // Each server's config names its peers by its own proxies, its own line by its real ports.
    const std::string cfg = read_all(run_dir / "zk0" / "zoo.cfg");
    EXPECT_NE(cfg.find(":" + std::to_string(hub.find("s0-s1-quorum")->port()) + ":"), std::string::npos) << cfg;
    ASSERT_TRUE(zk->leader());
    const int old_leader = *zk->leader();
    const std::string l = "s" + std::to_string(old_leader);
    // As the nemesis cuts a peer link: its proxies first, then the connections that go straight
    // between the two servers (a server calls a lower id back at the real election port it
    // announced). Left up, they carried the old leader's votes: the others went on electing it,
    // and it led again once healed (CI, once in many runs).
    const auto pid_of = [&](int i) { return zk->servers()[static_cast<size_t>(i)]->pid(); };
    int ended_at_cut = 0;  // how many there were (none, when the higher ids called first): told on failure
    for (int peer = 0; peer < 3; ++peer) {
        if (peer == old_leader) continue;
        const std::string p = "s" + std::to_string(peer);
        for (const std::string& link : {l + "-" + p + "-quorum", l + "-" + p + "-election",
                                        p + "-" + l + "-quorum", p + "-" + l + "-election"})
            hub.find(link)->set_both(LinkFault::reset());
        ended_at_cut += end_direct_connections(pid_of(old_leader), pid_of(peer));
    }
    // While cut, no straight connection forms again: each poll would end one it found.
    int reformed = 0;
    std::optional<int> now;
    EXPECT_TRUE(eventually([&] {
        for (int peer = 0; peer < 3; ++peer)
            if (peer != old_leader) reformed += end_direct_connections(pid_of(old_leader), pid_of(peer));
        return (now = zk->leader()) && *now != old_leader;
    })) << "straight connections ended at the cut: " << ended_at_cut;
    EXPECT_EQ(reformed, 0) << "straight connections ended at the cut: " << ended_at_cut;
    // The old leader, alone, stops serving; healed, it follows the new one.
    EXPECT_TRUE(eventually([&] { return mode_of(zk->servers()[static_cast<size_t>(old_leader)]) != "leader"; }));
    hub.heal_all();
    EXPECT_TRUE(eventually([&] { return mode_of(zk->servers()[static_cast<size_t>(old_leader)]) == "follower"; }));
    // After two elections each server still reaches its peers by its own proxies: none took
    // on another's view of the addresses (its `conf` lists the configuration in force).
    for (int i = 0; i < 3; ++i) {
        const auto conf = four_letter_word(zk->servers()[static_cast<size_t>(i)]->port(), "conf", 1s).value_or("");
        for (int j = 0; j < 3; ++j) {
            if (j == i) continue;
            const std::string via = "s" + std::to_string(i) + "-s" + std::to_string(j) + "-quorum";
            EXPECT_NE(conf.find(":" + std::to_string(hub.find(via)->port()) + ":"), std::string::npos) << via << "\n" << conf;
        }
    }
}

// ---- Kept across repetitions: wiped back to its state as new (sim/live/server_pool.h) ------------

// What a server says of itself, as the wipe's proof compares it, with the znodes a client sees.
struct AsSeen {
    std::vector<std::string> per_server;  // "znodes ephemerals watches mode", by server
    long long sessions = -1;              // the leader's count
    std::string tree;                     // every znode, as kazoo lists them
    bool operator==(const AsSeen&) const = default;
};

std::string hosts_of(LockService& zk) {
    std::string hosts;
    for (LockServer* s : zk.servers()) hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    return hosts;
}

long long mntr_figure(int port, const std::string& name) {
    const auto mntr = four_letter_word(port, "mntr", 1s).value_or("");
    const auto at = mntr.find(name + "\t");
    return at == std::string::npos ? -1 : std::stoll(mntr.substr(at + name.size() + 1));
}

AsSeen as_seen(LockService& zk, const fs::path& dir) {
    AsSeen seen;
    for (LockServer* s : zk.servers())
        seen.per_server.push_back(std::to_string(mntr_figure(s->port(), "zk_znode_count")) + " " +
                                  std::to_string(mntr_figure(s->port(), "zk_ephemerals_count")) + " " +
                                  std::to_string(mntr_figure(s->port(), "zk_watch_count")) + " " + mode_of(s));
    seen.sessions = mntr_figure(zk.servers()[static_cast<size_t>(*zk.leader())]->port(), "zk_global_sessions");
    seen.tree = run_python(dir, R"(
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start()
def walk(path):
    for child in sorted(zk.get_children(path)):
        full = (path.rstrip("/") + "/" + child)
        print(full)
        walk(full)
walk("/")
zk.stop()
zk.close()
)", {hosts_of(zk)});
    return seen;
}

// A client's znode that others may neither list nor delete below (its own digest ACL, with a
// child); prints whether /locks was absent before.
const char* const kGuardedZnode = R"(
import sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start()
print(zk.exists("/locks") is None)
zk.add_auth("digest", "owner:secret")
zk.create("/guarded", acl=[make_digest_acl("owner", "secret", all=True)])
zk.create("/guarded/x", acl=[make_digest_acl("owner", "secret", all=True)])
zk.stop()
zk.close()
)";

// A run leaves znodes of every kind (persistent, sequential, ephemeral, with data and a watch
// on them) and a session whose client died without closing it (kill -9: it ends only when its
// timeout runs out); wipe() removes all of it and proves it by asking every server, and the
// ensemble then says what it said right after its start.
TEST_F(ZooKeeperTest, AKeptEnsembleIsWipedBackToItsStateAsNew) {
    auto zk = start_kept(3);
    ASSERT_TRUE(eventually([&] { return zk->leader().has_value(); }));
    const AsSeen as_new = as_seen(*zk, run_dir);
    ASSERT_NE(as_new.tree.find("/zookeeper/config"), std::string::npos) << as_new.tree;
    run_python(run_dir, R"(
import os, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start()
zk.create("/locks/lockbench/lease-", b"c3.17", sequence=True, makepath=True)
zk.create("/locks/lockbench/lease-", b"c1.2", sequence=True, ephemeral=True)
zk.get("/locks", watch=lambda event: None)
gone = KazooClient(hosts=sys.argv[1], timeout=5.0)
gone.start()
gone.create("/dangling", ephemeral=True)
gone.exists("/locks/lockbench", watch=lambda event: None)
os._exit(0)  # neither session closed: each ends with its timeout, as a killed client's does
)", {hosts_of(*zk)});
    EXPECT_NE(as_seen(*zk, run_dir), as_new);
    const auto refused = zk->wipe();
    EXPECT_FALSE(refused) << *refused;
    const AsSeen after = as_seen(*zk, run_dir);
    EXPECT_EQ(after.per_server, as_new.per_server);
    EXPECT_EQ(after.sessions, 0);
    EXPECT_EQ(after.tree, as_new.tree);
}

// A znode the wipe may not delete (a client's own ACL on its parent) leaves the ensemble unproved:
// wipe() says which, and the pool then ends the ensemble rather than keep it.
TEST_F(ZooKeeperTest, AZnodeTheWipeCannotDeleteKeepsTheEnsembleFromBeingKept) {
    auto zk = start_kept(1);
    EXPECT_EQ(run_python(run_dir, kGuardedZnode, {hosts_of(*zk)}), "True\n");
    const auto refused = zk->wipe();
    ASSERT_TRUE(refused);
    EXPECT_EQ(*refused, "could not delete /guarded: not authenticated");  // its children may not even be listed
    // What no delete undoes, a run's data on the root itself, fails the proof too.
    auto other = start_kept(1, "other");
    run_python(run_dir, R"(
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start()
zk.set("/", b"left by the run")
zk.stop()
zk.close()
)", {hosts_of(*other)});
    EXPECT_EQ(other->wipe(), "/ says version 1, 15 bytes, ACL version 0 where new it said version 0, 0 bytes, ACL version 0");
    // A service started to be used once has nothing to compare with: it is never kept.
    ServiceConfig config;
    config.dir = run_dir / "once";
    auto once = start_service(Service::zookeeper, config);
    EXPECT_EQ(once->wipe(), "not started to be kept");
}

// The matrix's pool (sim/live/server_pool.h), from a run's side: a kept service takes no fault,
// answers who leads, goes back to the pool when the run lets it go, and serves the next run of
// the same shape (the same servers) once its wipe is proved; one whose wipe fails is ended, and
// the next run gets new servers.
TEST_F(ZooKeeperTest, ThePoolGivesAWipedEnsembleToTheNextRunAndEndsOneItCannotWipe) {
    ServerPool pool(run_dir);
    ServiceConfig config;
    config.size = 1;
    config.dir = run_dir / "run";
    auto first = take_kept_service(Service::zookeeper, config);
    ASSERT_TRUE(first);
    LockServer* server = first->servers().at(0);
    const int port = server->port();
    EXPECT_EQ(first->leader(), 0);
    EXPECT_THROW(server->pause(), std::logic_error);
    EXPECT_THROW(server->kill(), std::logic_error);
    run_python(run_dir, R"(
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start()
zk.create("/locks/lockbench", b"left by the run", makepath=True)
zk.stop()
zk.close()
)", {hosts_of(*first)});
    const pid_t jvm = server->pid();
    first.reset();  // the run is over: wiped, then idle, and stopped while idle
    ASSERT_TRUE(eventually([&] { return pool.idle() == 1; }));
    EXPECT_EQ(process_state(jvm), 'T');
    auto second = take_kept_service(Service::zookeeper, config);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->servers().at(0)->port(), port);
    EXPECT_NE(process_state(jvm), 'T');  // woken for its run
    EXPECT_EQ(pool.started(), 1);
    EXPECT_EQ(pool.reused(), 1);
    // Nothing of the first run's is left; this run leaves a znode the wipe may not delete.
    EXPECT_EQ(run_python(run_dir, kGuardedZnode, {hosts_of(*second)}), "True\n");
    const pid_t dirty = second->servers().at(0)->pid();
    second.reset();
    ASSERT_TRUE(eventually([&] { return pool.not_kept() == 1; }));
    auto third = take_kept_service(Service::zookeeper, config);
    ASSERT_TRUE(third);
    EXPECT_EQ(pool.started(), 2);
    EXPECT_EQ(pool.not_kept(), 1);
    EXPECT_EQ(pool.reasons(), (std::vector<std::string>{"could not delete /guarded: not authenticated"}));
    EXPECT_TRUE(eventually([&] { return process_gone(dirty); }));
    third.reset();
    pool.end_all();
    EXPECT_EQ(std::getenv(kServerPoolVar), nullptr);
}

TEST_F(ZooKeeperTest, DestroyingTheServiceLeavesNoJvm) {
    auto zk = start(3);
    std::vector<pid_t> pids;
    for (LockServer* server : zk->servers()) pids.push_back(server->pid());
    zk->servers()[1]->pause();  // a stopped JVM dies too
    zk.reset();
    for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << pid;
}

// The JVM is lockbench's direct child, so PR_SET_PDEATHSIG ends it when lockbench is killed
// with SIGKILL, which runs no destructor. A forked child stands in for lockbench here.
TEST_F(ZooKeeperTest, JvmDiesWhenItsOwnerIsKilled) {
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t owner = fork();
    if (owner == 0) {
        close(pipe_fds[0]);
        try {  // the forked owner never goes back into the test runner
            auto zk = start(1);
            const pid_t jvm = zk->servers()[0]->pid();
            if (write(pipe_fds[1], &jvm, sizeof jvm) != sizeof jvm) _exit(1);
            for (;;) pause();
        } catch (...) {
            _exit(1);
        }
    }
    close(pipe_fds[1]);
    pid_t jvm = 0;
    pollfd p{pipe_fds[0], POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 60'000), 1);
    ASSERT_EQ(read(pipe_fds[0], &jvm, sizeof jvm), static_cast<ssize_t>(sizeof jvm));
    close(pipe_fds[0]);
    EXPECT_FALSE(process_gone(jvm));
    kill(owner, SIGKILL);
    waitpid(owner, nullptr, 0);
    EXPECT_TRUE(eventually([&] { return process_gone(jvm); }, 10s)) << "java " << jvm << " outlived its owner";
}

// ---- The clock shim in the JVM ------------------------------------------------------------------

constexpr const char* create_and_print_ctime = R"(
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5.0)
zk.start(timeout=20)
zk.create("/stamped", b"")
print(zk.exists("/stamped").ctime, int(time.time() * 1000))
zk.stop()
)";

TEST_F(ZooKeeperTest, ClockShimStepMovesTheJvmsWallClock) {
    ClockControl clock(run_dir, "zk0");
    auto zk = start(1, nullptr, {clock.env()});
    clock.jump(1h);
    std::istringstream out(run_python(run_dir, create_and_print_ctime, {"127.0.0.1:" + std::to_string(zk->servers()[0]->port())}));
    long long ctime_ms = 0, real_ms = 0;
    ASSERT_TRUE(out >> ctime_ms >> real_ms);
    // The znode's ctime is the leader's System.currentTimeMillis(): an hour ahead.
    EXPECT_GT(ctime_ms - real_ms, 50 * 60 * 1000);
}

// Session A (4 s) holds an ephemeral node while the server's wall clock jumps an hour ahead;
// then session B (400 ms) lapses (its process exits without closing it). Once B's node is
// gone the server has run its expiry pass after the jump: is A's node still there? (A znode
// created then shows that the jump landed.)
constexpr const char* session_across_a_clock_jump = R"(
import json, os, subprocess, sys, time
from kazoo.client import KazooClient
hosts, flag = sys.argv[1], sys.argv[2]
a = KazooClient(hosts=hosts, timeout=4.0)
a.start(timeout=20)
a.create("/a", b"", ephemeral=True)
print("created", flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(flag) and time.monotonic() < deadline:
    time.sleep(0.01)
subprocess.run([sys.executable, "-c", """
import os, sys
from kazoo.client import KazooClient
b = KazooClient(hosts=sys.argv[1], timeout=0.4)
b.start(timeout=20)
b.create("/b", b"", ephemeral=True)
os._exit(0)
""", hosts], check=True)
while a.exists("/b") is not None and time.monotonic() < deadline:
    time.sleep(0.02)
a.create("/after", b"")
ahead_ms = a.exists("/after").ctime - int(time.time() * 1000)
print(json.dumps({"b_expired": a.exists("/b") is None, "a_kept": a.exists("/a") is not None,
                  "ahead_ms": ahead_ms}), flush=True)
a.stop()
)";

TEST_F(ZooKeeperTest, SessionsExpireByTheMonotonicClockNotTheWallClock) {
    ClockControl clock(run_dir, "zk0");
    auto zk = start(1, nullptr, {clock.env()});
    const fs::path out = run_dir / "session.out", flag = run_dir / "jumped";
    ChildProcess python = ChildProcess::spawn(
        {{"/usr/bin/python3", "-c", session_across_a_clock_jump,
          "127.0.0.1:" + std::to_string(zk->servers()[0]->port()), flag.string()},
         out.string(), (run_dir / "session.err").string(), {}});
    ASSERT_TRUE(eventually([&] { return read_all(out).starts_with("created"); })) << read_all(run_dir / "session.err");
    clock.jump(1h);
    std::ofstream(flag) << "";
    ASSERT_TRUE(python.wait_for(60s)) << read_all(run_dir / "session.err");
    const std::string text = read_all(out);
    const auto result = nlohmann::json::parse(text.substr(text.find('{')), nullptr, false);
    ASSERT_TRUE(result.is_object()) << text << read_all(run_dir / "session.err");
    EXPECT_GT(result.value("ahead_ms", 0LL), 50 * 60 * 1000);  // the step landed
    EXPECT_TRUE(result.value("b_expired", false));  // and the server ran an expiry pass since
    // The finding: ZooKeeper times sessions with System.nanoTime (CLOCK_MONOTONIC), which the
    // shim leaves alone: a wall-clock step expires nothing early.
    EXPECT_TRUE(result.value("a_kept", false));
}

// ---- kazoo's lock through the adapter ------------------------------------------------------------

// One adapter process, spoken to in the protocol's JSON lines.
class Adapter {
public:
    // Its stderr (kazoo's log) goes to `log`. Like lockbench, it waits op_timeout for an answer.
    Adapter(const std::vector<std::string>& env, const fs::path& log, std::chrono::milliseconds op_timeout = 10s)
        : op_timeout_(op_timeout) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        std::vector<std::string> args = {"/usr/bin/python3", LOCKBENCH_SOURCE_DIR "/adapters/kazoo-lock/adapter.py"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::vector<std::string> env_s = env;
        for (char** e = environ; *e; ++e) env_s.push_back(*e);
        std::vector<char*> envp;
        for (auto& e : env_s) envp.push_back(e.data());
        envp.push_back(nullptr);
        const std::string log_path = log.string();
        pid_ = fork();
        if (pid_ == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            const int err = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (err >= 0) dup2(err, 2);
            execve(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        to_ = in[1];
        from_ = out[0];
    }
    ~Adapter() {
        close(to_);
        close(from_);
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    pid_t pid() const { return pid_; }
    Adapter(const Adapter&) = delete;
    Adapter& operator=(const Adapter&) = delete;

    nlohmann::json line() {
        std::string text;
        char c = 0;
        pollfd p{from_, POLLIN, 0};
        const auto deadline = Clock::now() + op_timeout_;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (poll(&p, 1, static_cast<int>(std::max(left.count(), 0L))) != 1 || read(from_, &c, 1) != 1) break;
            if (c == '\n') break;
            text += c;
        }
        return nlohmann::json::parse(text, nullptr, false);
    }
    nlohmann::json call(const nlohmann::json& request) {
        const std::string text = request.dump() + "\n";
        if (write(to_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) return {};
        return line();
    }

private:
    std::chrono::milliseconds op_timeout_;
    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
};

std::vector<std::string> adapter_env(LockService& zk, int client, int ttl_ms = 2000, int op_timeout_ms = 10000) {
    std::string nodes;
    for (LockServer* s : zk.servers()) nodes += (nodes.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(s->port()));
    return {"LOCKBENCH_NODES=" + nodes, "LOCKBENCH_KEY=lock", "LOCKBENCH_CLIENT=" + std::to_string(client),
            "LOCKBENCH_TTL_MS=" + std::to_string(ttl_ms), "LOCKBENCH_PARAMS={}", "LOCKBENCH_COMMAND_TIMEOUT_MS=1000",
            "LOCKBENCH_OP_TIMEOUT_MS=" + std::to_string(op_timeout_ms), "LOCKBENCH_CONNECT_TIMEOUT_MS=1000"};
}

const nlohmann::json acquire_request = {{"op", "acquire"}, {"key", "lock"}, {"ttl_ms", 2000}, {"wait_ms", 0}};
const nlohmann::json release_request = {{"op", "release"}, {"key", "lock"}};

TEST_F(ZooKeeperTest, KazooLockExcludesAndFencesInOrder) {
    auto zk = start(1);
    Adapter first(adapter_env(*zk, 0), run_dir / "a0.err"), second(adapter_env(*zk, 1), run_dir / "a1.err");
    for (Adapter* a : {&first, &second}) {
        const auto ready = a->line();
        EXPECT_EQ(ready.value("ready", false), true) << ready;
        EXPECT_EQ(ready.value("library", ""), "kazoo 2.8.0");
    }
    const auto held = first.call(acquire_request);
    ASSERT_EQ(held.value("ok", false), true) << held;
    ASSERT_TRUE(held.at("fence").is_number_integer()) << held;
    EXPECT_EQ(held.at("nodes"), nlohmann::json::array({0}));
    const auto refused = second.call(acquire_request);
    EXPECT_EQ(refused.value("ok", true), false) << refused;
    EXPECT_EQ(refused.value("error", ""), "held");
    const auto released = first.call(release_request);
    EXPECT_EQ(released.value("ok", false), true) << released;
    EXPECT_EQ(released.at("removed_on"), nlohmann::json::array({0}));
    const auto next = second.call(acquire_request);
    ASSERT_EQ(next.value("ok", false), true) << next;
    EXPECT_GT(next.at("fence").get<long long>(), held.at("fence").get<long long>());
    EXPECT_NE(next.value("token", ""), held.value("token", ""));
    EXPECT_EQ(first.call({{"op", "extend"}, {"ttl_ms", 2000}}).value("ok", true), false);
}

// The holder's process stopped past its session (a GC pause): ZooKeeper deletes its znode,
// another client acquires; woken, the old holder's release says the lock was lost (and
// removes nothing), and its next acquire works on a new session.
TEST_F(ZooKeeperTest, KazooLockAfterItsSessionExpiredReportsTheLossAndStartsANewSession) {
    auto zk = start(1);
    Adapter paused(adapter_env(*zk, 0, 500), run_dir / "a0.err"), other(adapter_env(*zk, 1, 500), run_dir / "a1.err");
    ASSERT_EQ(paused.line().value("ready", false), true);
    ASSERT_EQ(other.line().value("ready", false), true);
    const auto held = paused.call(acquire_request);
    ASSERT_EQ(held.value("ok", false), true) << held;
    kill(paused.pid(), SIGSTOP);
    nlohmann::json taken;
    EXPECT_TRUE(eventually([&] { return (taken = other.call(acquire_request)).value("ok", false); })) << taken;
    kill(paused.pid(), SIGCONT);
    const auto lost = paused.call(release_request);
    EXPECT_EQ(lost.value("ok", true), false) << lost;
    EXPECT_FALSE(lost.contains("removed_on"));
    ASSERT_EQ(other.call(release_request).value("ok", false), true);
    nlohmann::json again;
    EXPECT_TRUE(eventually([&] { return (again = paused.call(acquire_request)).value("ok", false); })) << again;
    EXPECT_GT(again.value("fence", 0LL), taken.value("fence", 0LL));
}

// The leader crashes while a client holds the lock: every answer still comes (within the op
// timeout, or the line is not JSON), and once a new leader is elected the lock is taken again
// with a higher fence (a czxid of the new epoch).
TEST_F(ZooKeeperTest, KazooLockRidesOutALeaderCrash) {
    auto zk = start(3);
    Adapter holder(adapter_env(*zk, 0), run_dir / "a0.err"), next(adapter_env(*zk, 1), run_dir / "a1.err");
    ASSERT_EQ(holder.line().value("ready", false), true);
    ASSERT_EQ(next.line().value("ready", false), true);
    const auto held = holder.call(acquire_request);
    ASSERT_EQ(held.value("ok", false), true) << held;
    ASSERT_TRUE(zk->leader());
    zk->servers()[static_cast<size_t>(*zk->leader())]->kill();
    const auto released = holder.call(release_request);
    ASSERT_TRUE(released.is_object() && released.contains("ok")) << released;
    nlohmann::json taken;
    EXPECT_TRUE(eventually([&] {
        taken = next.call(acquire_request);
        return taken.is_object() && taken.value("ok", false);
    })) << taken;
    EXPECT_GT(taken.value("fence", 0LL) >> 32, held.value("fence", 0LL) >> 32) << held << taken;
}

// The server stops answering (paused) while the client holds the lock: the adapter still
// answers every request within lockbench's op timeout, and once the server is back the lock
// can be taken again (the release given up on finishes late, or its znode is swept).
TEST_F(ZooKeeperTest, KazooLockAnswersWithinTheOpTimeoutWhenZooKeeperDoesNot) {
    auto zk = start(1);
    Adapter adapter(adapter_env(*zk, 0, 5000, 1000), run_dir / "a0.err", 1000ms);
    ASSERT_EQ(adapter.line().value("ready", false), true);
    ASSERT_EQ(adapter.call(acquire_request).value("ok", false), true);
    zk->servers()[0]->pause();
    const auto release = adapter.call(release_request);
    ASSERT_TRUE(release.is_object()) << "no answer within the op timeout";
    EXPECT_EQ(release.value("ok", true), false) << release;
    const auto acquire = adapter.call(acquire_request);
    ASSERT_TRUE(acquire.is_object()) << "no answer within the op timeout";
    EXPECT_EQ(acquire.value("ok", true), false) << acquire;
    zk->servers()[0]->resume();
    nlohmann::json again;
    EXPECT_TRUE(eventually([&] { return (again = adapter.call(acquire_request)).value("ok", false); })) << again;
}

}  // namespace
}  // namespace lockbench
