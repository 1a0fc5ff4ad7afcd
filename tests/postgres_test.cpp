// Live tests for sim/live/postgres.h (a real PostgreSQL 15 server, and PgBouncer in front of
// it) and the advisory-lock adapter (adapters/pg-advisory/adapter.py) end to end. Waits are
// bounded polls for an outcome; nothing asserts how long anything took.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process/process.h"
#include "sim/live/lock_service.h"
#include "sim/live/postgres.h"
#include "sim/live/redis_node.h"
#include "sim/live/server_home.h"
#include "sim/live/server_pool.h"
#include "adapter_process.h"
#include "proc_util.h"
#include "test_util.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using nlohmann::json;
using testing_util::AdapterProcess;
using testing_util::argument_of;
using testing_util::eventually;

// /proc/PID/stat's state letter ('T' stopped, 'Z' a zombie), or 0 if it is gone.
char state_of(pid_t pid) {
    const std::string stat = testing_util::proc_stat(pid).value_or("");
    const auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

uid_t uid_of(pid_t pid) {
    struct stat st {};
    return ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

// Every process whose parent is `pid` (a postmaster's backends).
std::vector<pid_t> children(pid_t pid) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(in)), {});
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        std::string state;
        pid_t parent = 0;
        if (rest >> state >> parent && parent == pid) out.push_back(std::stoi(name));
    }
    return out;
}

// adapters/pg-advisory/adapter.py on stdin/stdout pipes, given what the service says clients need.
class Adapter : public AdapterProcess {
public:
    Adapter(LockService& service, const std::string& params = "{}")
        : AdapterProcess({"/usr/bin/python3", (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "pg-advisory" / "adapter.py").string()},
                         env_for(service, params), 3s) {}
    json acquire() { return call({{"op", "acquire"}, {"key", "lock"}, {"ttl_ms", 1000}, {"wait_ms", 0}}); }
    json release() { return call({{"op", "release"}, {"key", "lock"}}); }

private:
    static std::vector<std::string> env_for(LockService& service, const std::string& params) {
        std::vector<std::string> env = {"LOCKBENCH_NODES=127.0.0.1:" + std::to_string(service.servers()[0]->port()),
                                        "LOCKBENCH_CLIENT=0", "LOCKBENCH_COMMAND_TIMEOUT_MS=200",
                                        "LOCKBENCH_OP_TIMEOUT_MS=2000", "LOCKBENCH_CONNECT_TIMEOUT_MS=1000",
                                        "LOCKBENCH_PARAMS=" + params};
        for (const auto& [name, value] : service.client_env()) env.push_back(name + "=" + value);
        return env;
    }
};

class PostgresTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("lockbench-pg-test-" + std::to_string(getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::unique_ptr<LockService> start(std::map<std::string, std::string> settings = {}, std::string pgbouncer = "") {
        ServiceConfig config{1, dir_};
        config.settings = std::move(settings);
        config.pgbouncer = std::move(pgbouncer);
        return start_service(Service::postgresql, config);
    }
    // Started to be kept across repetitions (sim/live/server_pool.h): its state as new recorded.
    std::unique_ptr<LockService> start_kept(std::string pgbouncer = "") {
        ServiceConfig config{1, dir_};
        config.pgbouncer = std::move(pgbouncer);
        config.kept = true;
        return start_service(Service::postgresql, config);
    }
    // psycopg2 on `script`, connected with the service's address and login (autocommit, `cur`
    // its cursor): its stdout once it has exited (within 60 s); spawn_python: the running
    // process, its stdout in <out>.out.
    std::string python(LockService& service, const std::string& script) {
        ChildProcess child = spawn_python(service, script);
        const auto status = child.wait_for(60s);
        EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_from(dir_ / "py.err");
        return read_from(dir_ / "py.out");
    }
    ChildProcess spawn_python(LockService& service, const std::string& script, const std::string& out = "py") {
        fs::remove(dir_ / (out + ".out"));  // a child's output is appended: this script's alone
        const auto env = service.client_env();
        return ChildProcess::spawn({{"/usr/bin/python3", "-c", "import psycopg2, sys\n"
                                     "db = psycopg2.connect(host='127.0.0.1', port=int(sys.argv[1]), user=sys.argv[2], "
                                     "password=sys.argv[3], dbname=sys.argv[4])\ndb.autocommit = True\n"
                                     "cur = db.cursor()\n" + script,
                                     std::to_string(service.servers()[0]->port()), env.at("LOCKBENCH_USER"),
                                     env.at("LOCKBENCH_PASSWORD"), env.at("LOCKBENCH_DATABASE")},
                                    (dir_ / (out + ".out")).string(), (dir_ / (out + ".err")).string(), {}});
    }
    // What a client sees of the server, asked on its own rather than through wipe()'s proof: the
    // other sessions, the advisory locks, and every relation outside PostgreSQL's own schemas.
    std::string as_seen(LockService& service) {
        return python(service, R"py(
cur.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
print("sessions", cur.fetchone()[0])
cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
print("advisory locks", cur.fetchone()[0])
cur.execute("SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2")
print("relations", cur.fetchall())
)py");
    }
    fs::path dir_;
};

TEST_F(PostgresTest, RunsAsItsOwnUserLocksAndLeavesNothingBehind) {
    pid_t postmaster = 0;
    std::vector<pid_t> backends;
    fs::path home;
    {
        auto service = start();
        LockServer* pg = service->servers().at(0);
        postmaster = pg->pid();
        home = fs::path(argument_of(postmaster, "-D")).parent_path();
        ASSERT_TRUE(fs::is_directory(home / "data")) << home;
        if (geteuid() == 0) {
            const passwd* user = getpwnam("postgres");
            ASSERT_NE(user, nullptr);
            EXPECT_EQ(uid_of(postmaster), user->pw_uid) << "PostgreSQL refuses root: it runs as postgres";
        }
        EXPECT_TRUE(port_in_use(pg->port()));
        EXPECT_FALSE(service->client_env().at("LOCKBENCH_PASSWORD").empty());
        Adapter a(*service), b(*service);
        ASSERT_EQ(a.read().value("ready", false), true);
        ASSERT_EQ(b.read().value("ready", false), true);
        const json first = a.acquire();
        EXPECT_EQ(first.value("ok", false), true) << first;
        EXPECT_EQ(b.acquire().value("error", ""), "held");
        EXPECT_EQ(a.release().value("ok", false), true);
        const json second = b.acquire();
        EXPECT_EQ(second.value("ok", false), true) << second;
        EXPECT_GT(second.value("fence", 0), first.value("fence", 0));
        backends = children(postmaster);
        EXPECT_GE(backends.size(), 2u) << "two clients' backends, at least";
    }
    EXPECT_TRUE(eventually([&] { return state_of(postmaster) == 0 || state_of(postmaster) == 'Z'; }));
    for (pid_t b : backends) EXPECT_TRUE(eventually([&] { return state_of(b) == 0 || state_of(b) == 'Z'; })) << b;
    EXPECT_FALSE(fs::exists(home)) << "its folder outlived it";
}

TEST_F(PostgresTest, WithoutThePasswordNobodyConnects) {
    auto service = start();
    std::map<std::string, std::string> env = service->client_env();
    std::vector<std::string> wrong = {"LOCKBENCH_NODES=127.0.0.1:" + std::to_string(service->servers()[0]->port()),
                                      "LOCKBENCH_CLIENT=0", "LOCKBENCH_OP_TIMEOUT_MS=2000", "LOCKBENCH_USER=lockbench",
                                      "LOCKBENCH_PASSWORD=not-" + env.at("LOCKBENCH_PASSWORD"), "LOCKBENCH_DATABASE=postgres"};
    AdapterProcess a({"/usr/bin/python3", (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "pg-advisory" / "adapter.py").string()},
                     wrong, 3s);
    const json line = a.read();
    EXPECT_EQ(line.value("ready", true), false) << line;
    EXPECT_NE(line.value("error", "").find("password authentication failed"), std::string::npos) << line;
}

TEST_F(PostgresTest, ACrashStrikesEveryBackendAndTheRestartedServerHoldsNoLock) {
    auto service = start();
    LockServer* pg = service->servers().at(0);
    Adapter a(*service), b(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    const pid_t old = pg->pid();
    const std::vector<pid_t> backends = children(old);
    ASSERT_FALSE(backends.empty());
    pg->kill();
    pg->restart(true);
    EXPECT_NE(pg->pid(), old);
    for (pid_t backend : backends) EXPECT_TRUE(state_of(backend) == 0 || state_of(backend) == 'Z') << backend;
    // The holder is not told; the other client reconnects and takes the lock.
    EXPECT_TRUE(eventually([&] { return b.acquire().value("ok", false); }));
}

TEST_F(PostgresTest, APauseStopsTheServerAndEveryBackend) {
    auto service = start();
    LockServer* pg = service->servers().at(0);
    Adapter a(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    const std::vector<pid_t> backends = children(pg->pid());
    ASSERT_FALSE(backends.empty());
    pg->pause();
    // A stop signal lands a moment after it is sent.
    EXPECT_TRUE(eventually([&] { return state_of(pg->pid()) == 'T'; }));
    for (pid_t backend : backends) EXPECT_TRUE(eventually([&] { return state_of(backend) == 'T'; })) << backend;
    const json stalled = a.acquire();
    EXPECT_EQ(stalled.value("ok", true), false) << "a paused server answers nothing: " << stalled;
    pg->resume();
    for (pid_t backend : backends) EXPECT_TRUE(eventually([&] { return state_of(backend) != 'T'; })) << backend;
    EXPECT_TRUE(eventually([&] { return a.acquire().value("ok", false); }));
}

TEST_F(PostgresTest, ACaseSettingEndsAnIdleHoldersSessionAndItsLock) {
    auto service = start({{"idle_session_timeout", "300ms"}});
    Adapter a(*service), b(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    EXPECT_EQ(b.acquire().value("error", ""), "held");
    // a stays idle: the server ends its session after 300 ms, and the lock with it.
    EXPECT_TRUE(eventually([&] { return b.acquire().value("ok", false); }));
}

TEST_F(PostgresTest, BehindPgBouncerTransactionPoolingASessionLockDoesNotExclude) {
    auto transaction = start({}, "transaction");
    Adapter a(*transaction), b(*transaction);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    // b's statement runs on the pool's one server session, the one a's lock is on (a session
    // lock is re-entrant): both hold it, every time.
    for (int i = 0; i < 5; ++i) EXPECT_EQ(b.acquire().value("ok", false), true) << "transaction pooling hands a's session to b";
}

TEST_F(PostgresTest, BehindPgBouncerSessionPoolingTheLockExcludes) {
    auto session = start({}, "session");
    Adapter a(*session), b(*session);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(b.acquire().value("error", ""), "held");
    EXPECT_EQ(a.release().value("ok", false), true);
    EXPECT_EQ(b.acquire().value("ok", false), true);
}

// ---- Kept across repetitions: wiped, and proved wiped ------------------------------------------

// A run leaves a session that still holds an advisory lock (a client stuck, or the server
// session PgBouncer keeps for one), the fence's sequence, a table and a schema of its own: the
// wipe ends the session, drops what the run created, and the server then answers as new.
TEST_F(PostgresTest, AKeptServerIsWipedBackToItsStateAsNew) {
    auto pg = start_kept();
    const std::string as_new = as_seen(*pg);
    EXPECT_EQ(as_new, "sessions 0\nadvisory locks 0\nrelations []\n");
    python(*pg, R"py(
cur.execute("CREATE SEQUENCE lockbench_fence")
cur.execute("CREATE TABLE left_by_the_run (n int)")
cur.execute("CREATE SCHEMA its_own")
cur.execute("CREATE TABLE its_own.t (n serial)")
cur.execute("CREATE TYPE mood AS ENUM ('calm', 'busy')")
cur.execute("CREATE DOMAIN positive AS int CHECK (VALUE > 0)")
cur.execute("CREATE TYPE span AS RANGE (subtype = int)")
cur.execute("CREATE TYPE pair AS (a int, b mood)")
cur.execute("CREATE FUNCTION twice(n int) RETURNS int LANGUAGE sql AS 'SELECT 2 * n'")
)py");
    ChildProcess holder = spawn_python(*pg, R"py(
import time
cur.execute("SELECT pg_advisory_lock(1)")
print("held", flush=True)
time.sleep(120)
)py", "holder");
    ASSERT_TRUE(eventually([&] { return read_from(dir_ / "holder.out") == "held\n"; }));
    const std::string left = as_seen(*pg);
    EXPECT_NE(left.find("sessions 1\nadvisory locks 1\n"), std::string::npos) << left;
    EXPECT_NE(left.find("'lockbench_fence'"), std::string::npos) << left;
    const auto refused = pg->wipe();
    EXPECT_FALSE(refused) << *refused;
    // This test's own last session may take a moment to go, as any session ended does.
    EXPECT_TRUE(eventually([&] { return as_seen(*pg) == as_new; })) << as_seen(*pg);
    const auto again = pg->wipe();  // nothing to remove: proved as new again
    EXPECT_FALSE(again) << *again;
}

// What a wipe does not undo (a role, a setting changed for good) leaves the server unproved:
// wipe() says what differs, and the pool then ends it rather than keep it.
TEST_F(PostgresTest, WhatTheWipeCannotUndoKeepsTheServerFromBeingKept) {
    auto pg = start_kept();
    python(*pg, R"py(cur.execute("CREATE ROLE alice"))py");
    auto refused = pg->wipe();
    ASSERT_TRUE(refused);
    EXPECT_TRUE(refused->starts_with("pg0 lists role alice ")) << *refused;  // its attributes' digest after
    python(*pg, R"py(cur.execute("DROP ROLE alice"))py");
    refused = pg->wipe();
    EXPECT_FALSE(refused) << *refused;
    // A role's attributes count, not its name alone.
    python(*pg, R"py(cur.execute("ALTER ROLE lockbench CONNECTION LIMIT 5"))py");
    refused = pg->wipe();
    ASSERT_TRUE(refused);
    EXPECT_TRUE(refused->starts_with("pg0 lists role lockbench ")) << *refused;
    EXPECT_NE(refused->find(" where new it listed role lockbench "), std::string::npos) << *refused;
    python(*pg, R"py(cur.execute("ALTER ROLE lockbench CONNECTION LIMIT -1"))py");
    refused = pg->wipe();
    EXPECT_FALSE(refused) << *refused;
    python(*pg, R"py(cur.execute("ALTER SYSTEM SET work_mem = '8MB'"))py");
    refused = pg->wipe();
    ASSERT_TRUE(refused);
    EXPECT_EQ(*refused, "pg0 lists setting to reload work_mem=8MB");
    // A cast created lasts past every drop the wipe makes: counted, it fails the proof too.
    auto cast = start_kept();
    python(*cast, R"py(cur.execute("CREATE CAST (text AS int4) WITH INOUT AS IMPLICIT"))py");
    EXPECT_EQ(cast->wipe(), "pg0 lists created in pg_cast 1 where new it listed created in pg_cast 0");
    // A client still connected to PgBouncer holds a socket of it, which no wipe of the server ends.
    auto pooled = start_kept("session");
    ChildProcess client = spawn_python(*pooled, R"py(
import time
print("connected", flush=True)
time.sleep(120)
)py", "client");
    ASSERT_TRUE(eventually([&] { return read_from(dir_ / "client.out") == "connected\n"; }));
    refused = pooled->wipe();
    ASSERT_TRUE(refused);
    EXPECT_TRUE(refused->starts_with("PgBouncer holds ")) << *refused;
    client.kill_and_reap();
    EXPECT_TRUE(eventually([&] { return !pooled->wipe(); }));  // its client gone: as new again
    // A server started to be used once has nothing to compare with: it is never kept.
    EXPECT_EQ(start()->wipe(), "not started to be kept");
}

// The matrix's pool, behind PgBouncer in transaction pooling: the next run of the same shape
// gets the same server (stopped while it waited), its fence counting from 1 again.
TEST_F(PostgresTest, ThePoolGivesAWipedServerToTheNextRun) {
    ServerPool pool(dir_);
    ServiceConfig config{1, dir_ / "run"};
    config.pgbouncer = "transaction";
    auto first = take_kept_service(Service::postgresql, config);
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->leader());
    EXPECT_THROW(first->servers().at(0)->pause(), std::logic_error);
    long long fence = 0;
    {
        Adapter a(*first);
        ASSERT_EQ(a.read().value("ready", false), true);
        fence = a.acquire().value("fence", 0LL);
        EXPECT_GT(a.acquire().value("fence", 0LL), fence);  // a session lock is re-entrant
    }
    const int port = first->servers().at(0)->port();
    const pid_t postmaster = first->servers().at(0)->pid();
    first.reset();
    ASSERT_TRUE(eventually([&] { return pool.idle() == 1; }));
    EXPECT_EQ(state_of(postmaster), 'T');
    auto second = take_kept_service(Service::postgresql, config);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->servers().at(0)->port(), port);
    EXPECT_NE(state_of(postmaster), 'T');
    {
        Adapter b(*second);
        ASSERT_EQ(b.read().value("ready", false), true);
        EXPECT_EQ(b.acquire().value("fence", 0LL), fence);
    }
    EXPECT_EQ(pool.started(), 1);
    EXPECT_EQ(pool.reused(), 1);
    EXPECT_EQ(pool.not_kept(), 0);
    second.reset();
    pool.end_all();
}

TEST_F(PostgresTest, BadConfigurationIsOneLine) {
    ServiceConfig three{3, dir_};
    try {
        start_service(Service::postgresql, three);
        FAIL() << "three servers accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("one server"), std::string::npos) << e.what();
    }
    try {
        start({}, "statement");
        FAIL() << "an unknown pool mode accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("transaction or session"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

}  // namespace
}  // namespace lockbench
