// Live tests for the mariadb service (sim/live/mariadb.cpp: a real MariaDB server) and the
// named-lock adapter (adapters/mariadb-get-lock/adapter.py) end to end. Waits are bounded
// polls for an outcome; nothing asserts how long anything took.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "faults/clock_control.h"
#include "process/process.h"
#include "process/stopped.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"
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

uid_t uid_of(pid_t pid) {
    struct stat st {};
    return ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

const fs::path kAdapter = fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "mariadb-get-lock" / "adapter.py";

std::vector<std::string> env_for(LockService& service, std::map<std::string, std::string> overrides = {}) {
    std::map<std::string, std::string> env = service.client_env();
    for (auto& [name, value] : overrides) env[name] = value;
    std::vector<std::string> out = {"LOCKBENCH_NODES=127.0.0.1:" + std::to_string(service.servers()[0]->port()), "LOCKBENCH_CLIENT=0",
                                    "LOCKBENCH_OP_TIMEOUT_MS=2000", "LOCKBENCH_CONNECT_TIMEOUT_MS=1000", "LOCKBENCH_PARAMS={}"};
    for (const auto& [name, value] : env) out.push_back(name + "=" + value);
    return out;
}

class Adapter : public AdapterProcess {
public:
    explicit Adapter(LockService& service) : AdapterProcess({"/usr/bin/python3", kAdapter.string()}, env_for(service), 3s) {}
    json acquire() { return call({{"op", "acquire"}, {"key", "lock"}, {"ttl_ms", 1000}, {"wait_ms", 0}}); }
    json release() { return call({{"op", "release"}, {"key", "lock"}}); }
};

class MariaDBTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("lockbench-mariadb-test-" + std::to_string(getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::unique_ptr<LockService> start(std::map<std::string, std::string> settings = {}, std::vector<std::string> env = {}) {
        ServiceConfig config{1, dir_};
        config.settings = std::move(settings);
        if (!env.empty()) config.env = {std::move(env)};
        return start_service(Service::mariadb, config);
    }
    fs::path dir_;
};

TEST_F(MariaDBTest, RunsAsItsOwnUserLocksAndLeavesNothingBehind) {
    pid_t server = 0;
    fs::path home;
    {
        auto service = start();
        LockServer* db = service->servers().at(0);
        server = db->pid();
        home = fs::path(argument_of(server, "--datadir=")).parent_path();
        ASSERT_TRUE(fs::is_directory(home / "data")) << home;
        if (geteuid() == 0) {
            const passwd* user = getpwnam("mysql");
            ASSERT_NE(user, nullptr);
            EXPECT_EQ(uid_of(server), user->pw_uid) << "mariadbd refuses root: it runs as mysql";
        }
        EXPECT_TRUE(port_in_use(db->port()));
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
        EXPECT_EQ(a.release().value("ok", true), false) << "a released a lock b holds";
    }
    EXPECT_TRUE(eventually([&] { const char s = process_state(server); return s == '?' || s == 'Z'; }));
    EXPECT_FALSE(fs::exists(home)) << "its folder outlived it";
}

TEST_F(MariaDBTest, WithoutThePasswordNobodyConnects) {
    auto service = start();
    AdapterProcess a({"/usr/bin/python3", kAdapter.string()},
                     env_for(*service, {{"LOCKBENCH_PASSWORD", "not-" + service->client_env().at("LOCKBENCH_PASSWORD")}}), 3s);
    const json line = a.read();
    EXPECT_EQ(line.value("ready", true), false) << line;
    EXPECT_NE(line.value("error", "").find("Access denied"), std::string::npos) << line;
}

// The named lock lived in the server's memory: the restarted server holds none, the holder
// learns it only at its release, and the fencing counter, on disk, goes on past its token.
TEST_F(MariaDBTest, ARestartedServerHoldsNoLockAndItsFenceGoesOn) {
    auto service = start();
    LockServer* db = service->servers().at(0);
    Adapter a(*service), b(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    const json held = a.acquire();
    ASSERT_EQ(held.value("ok", false), true) << held;
    const pid_t old = db->pid();
    db->kill();
    db->restart(true);
    EXPECT_NE(db->pid(), old);
    json taken;
    EXPECT_TRUE(eventually([&] { return (taken = b.acquire()).value("ok", false); })) << taken;
    EXPECT_GT(taken.value("fence", 0), held.value("fence", 0));
    EXPECT_EQ(a.release().value("ok", true), false) << "the holder's connection died with the server";
}

TEST_F(MariaDBTest, APauseStopsTheServer) {
    auto service = start();
    LockServer* db = service->servers().at(0);
    Adapter a(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_TRUE(db->pause());
    EXPECT_EQ(process_state(db->pid()), 'T');
    const json stalled = a.acquire();
    EXPECT_EQ(stalled.value("ok", true), false) << "a paused server answers nothing: " << stalled;
    db->resume();
    EXPECT_TRUE(eventually([&] { return a.acquire().value("ok", false); }));
}

TEST_F(MariaDBTest, WaitTimeoutDropsAnIdleHolderAndItsLock) {
    auto service = start({{"wait_timeout", "1"}});
    Adapter a(*service), b(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    EXPECT_EQ(b.acquire().value("error", ""), "held");
    // a stays idle: the server drops its connection after a second, and the lock with it.
    EXPECT_TRUE(eventually([&] { return b.acquire().value("ok", false); }));
    EXPECT_EQ(a.release().value("ok", true), false);
}

// The shim holds the server's flushes (InnoDB's log at each commit): the fencing counter's
// commit waits, and the acquire is answered with an error at the adapter's deadline; once
// the disk is back, the next acquire (a new connection: the old one's lock went with it) goes
// through.
TEST_F(MariaDBTest, AStalledDiskHoldsTheFencesCommit) {
    ClockControl disk(dir_, "db0");
    auto service = start({}, disk.env());
    Adapter a(*service);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    ASSERT_EQ(a.release().value("ok", false), true);
    disk.stall_disk(true);
    const json stalled = a.acquire();
    EXPECT_EQ(stalled.value("ok", true), false) << stalled;
    EXPECT_NE(stalled.value("error", "").find("timed out"), std::string::npos) << stalled;
    disk.stall_disk(false);
    EXPECT_TRUE(eventually([&] { return a.acquire().value("ok", false); }));
}

TEST_F(MariaDBTest, BadConfigurationIsOneLine) {
    try {
        start_service(Service::mariadb, ServiceConfig{3, dir_});
        FAIL() << "three servers accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("one server"), std::string::npos) << e.what();
    }
    try {
        start({{"no_such_setting", "1"}});
        FAIL() << "an unknown setting accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("no_such_setting"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

}  // namespace
}  // namespace lockbench
