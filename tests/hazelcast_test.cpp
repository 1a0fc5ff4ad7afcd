// Live tests for the hazelcast service (sim/live/hazelcast.cpp: three real Hazelcast members,
// adapters/hazelcast/member) and its FencedLock adapter (adapters/hazelcast/HazelcastAdapter.java)
// end to end. Waits are bounded polls for an outcome; nothing asserts how long anything took.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/live/lock_service.h"
#include "adapter_process.h"
#include "test_util.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using nlohmann::json;
using testing_util::AdapterProcess;
using testing_util::eventually;

// As testing_util::eventually, with a bound for a JVM's election on a busy machine: the bound
// only keeps a broken build from hanging the suite.
bool within_a_minute(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(50ms);
    }
    return true;
}

std::string text_of(const fs::path& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const fs::path kDir = fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "hazelcast";

std::vector<std::string> env_for(LockService& service, long long ttl_ms) {
    std::string nodes;
    for (LockServer* s : service.servers()) nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    return {"LOCKBENCH_NODES=" + nodes, "LOCKBENCH_CLIENT=0", "LOCKBENCH_KEY=lock", "LOCKBENCH_TTL_MS=" + std::to_string(ttl_ms),
            "LOCKBENCH_COMMAND_TIMEOUT_MS=1000", "LOCKBENCH_OP_TIMEOUT_MS=10000", "LOCKBENCH_CONNECT_TIMEOUT_MS=2000",
            "LOCKBENCH_PARAMS={}"};
}

class Adapter : public AdapterProcess {
public:
    Adapter(LockService& service, long long ttl_ms)
        : AdapterProcess({"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                          (kDir / "classes" / "adapter.jar").string() + ":" + (kDir / "lib").string() + "/*", "HazelcastAdapter"},
                         env_for(service, ttl_ms), 60s) {}
    json acquire(long long wait_ms = 0) { return call({{"op", "acquire"}, {"key", "lock"}, {"ttl_ms", 2000}, {"wait_ms", wait_ms}}); }
    json release() { return call({{"op", "release"}, {"key", "lock"}}); }
};

class HazelcastTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("lockbench-hazelcast-test-" + std::to_string(getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::unique_ptr<LockService> start(long long lease_ms, int size = 3, fs::path program = kDir / "member") {
        ServiceConfig config;
        config.size = size;
        config.dir = dir_;
        config.program = std::move(program);
        config.lease_ms = lease_ms;
        return start_service(Service::hazelcast, config);
    }
    fs::path dir_;
};

// The members' session TTL is the run's lease: a holder stopped past it loses the lock to the
// next client, with a greater fence, and hears of it at its release.
TEST_F(HazelcastTest, AHolderStoppedPastTheLeaseLosesTheLockToAGreaterFence) {
    auto service = start(2000);
    Adapter holder(*service, 2000), next(*service, 2000);
    ASSERT_EQ(holder.read().value("ready", false), true);
    ASSERT_EQ(next.read().value("ready", false), true);
    const json first = holder.acquire();
    ASSERT_EQ(first.value("ok", false), true) << first.dump();
    EXPECT_EQ(next.acquire().value("error", ""), "held");
    ASSERT_EQ(::kill(holder.pid(), SIGSTOP), 0);
    const json second = next.acquire(8000);  // waits in the lock's queue until the session ends
    ::kill(holder.pid(), SIGCONT);
    ASSERT_EQ(second.value("ok", false), true) << second.dump();
    EXPECT_GT(second.at("fence").get<long long>(), first.at("fence").get<long long>());
    const json late = holder.release();
    EXPECT_EQ(late.value("ok", true), false) << late.dump();
    EXPECT_NE(late.value("error", "").find("LockOwnershipLost"), std::string::npos) << late.dump();
    EXPECT_EQ(next.release().value("ok", false), true);
}

// Who leads the locks' CP group is what a member last said of itself; killed, another takes
// over, and a majority still grants the lock. Restarted, the member runs again.
TEST_F(HazelcastTest, TheLeaderKilledAnotherLeadsAndTheLockIsStillGranted) {
    auto service = start(3000);
    Adapter client(*service, 3000);
    ASSERT_EQ(client.read().value("ready", false), true);  // its warm-up made the group "default"
    std::optional<int> leader;
    ASSERT_TRUE(within_a_minute([&] { return (leader = service->leader()).has_value(); }));
    LockServer* old = service->servers()[static_cast<size_t>(*leader)];
    old->kill();
    ASSERT_TRUE(within_a_minute([&] {
        const auto now = service->leader();
        return now && *now != *leader;
    }));
    const json granted = client.acquire(10000);
    EXPECT_EQ(granted.value("ok", false), true) << granted.dump();
    // Back, it joins the cluster again: a new member, beside the two that went on.
    const std::size_t before = text_of(old->log_path()).size();
    old->restart(true);
    EXPECT_TRUE(within_a_minute([&] { return text_of(old->log_path()).find("Members {size:3", before) != std::string::npos; }))
        << text_of(old->log_path()).substr(before);
}

TEST_F(HazelcastTest, FewerThanThreeMembersNoProgramOrALeaseNotInSecondsIsOneLine) {
    const auto refused = [&](long long lease_ms, int size, const fs::path& program, const std::string& piece) {
        try {
            start(lease_ms, size, program);
            ADD_FAILURE() << "started: " << piece;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    };
    refused(2000, 1, kDir / "member", "at least three members");
    refused(2000, 3, dir_ / "no-such-member", "no-such-member is not an executable file");
    refused(2500, 3, kDir / "member", "whole seconds, at least 2");
    refused(1000, 3, kDir / "member", "the run's ttl_ms is 1000");
}

}  // namespace
}  // namespace lockbench
