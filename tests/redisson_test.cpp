// Redisson's adapter (adapters/redisson/RedissonAdapter.java) on a live redis-server, driven
// through its stdin and stdout as lockbench drives it. What a release says it removed is what
// the foreign-release check believes, so it is held to the store:
//
//   own .......... a release of the fair lock this client holds says it removed the key
//   gone ......... RFairLock's unlock also succeeds when the lock's hash is gone (it expired):
//                  that release removed nothing and says so (removed_on [])
//   another's .... a release of a lock another holds fails and leaves the other's hash
//
// Waits are bounded polls for the adapter's next line; nothing asserts how long anything took.
#include <algorithm>
#include <filesystem>
#include <thread>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/live/redis_node.h"
#include "adapter_process.h"
#include "test_util.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
using namespace lockbench::testing_util;
namespace fs = std::filesystem;
using nlohmann::json;

class Adapter : public AdapterProcess {
public:
    // A cold JVM loading Redisson: its ready line may take a while on a loaded machine.
    Adapter(int port, const json& params)
        : AdapterProcess({"java", "-cp",
                          (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters/redisson/classes/adapter.jar").string() + ":" +
                              (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters/redisson/lib/*").string(),
                          "RedissonAdapter"},
                         {"LOCKBENCH_NODES=127.0.0.1:" + std::to_string(port), "LOCKBENCH_CLIENT=0",
                          "LOCKBENCH_KEY=lb", "LOCKBENCH_TTL_MS=1000", "LOCKBENCH_COMMAND_TIMEOUT_MS=1000",
                          "LOCKBENCH_OP_TIMEOUT_MS=10000", "LOCKBENCH_CONNECT_TIMEOUT_MS=10000",
                          "LOCKBENCH_PARAMS=" + params.dump()},
                         60s) {}
    json acquire() { return call({{"op", "acquire"}, {"key", "k"}, {"ttl_ms", 1000}, {"wait_ms", 0}}); }
    json release() { return call({{"op", "release"}, {"key", "k"}}); }
};

class RedissonAdapter : public LiveRedisSuite<RedissonAdapter> {};

TEST_F(RedissonAdapter, AFairReleaseSaysItRemovedTheKeyOnlyWhenTheKeyWasItsOwn) {
    Adapter a(node_->port(), {{"fair", true}});
    const json ready = a.read();
    ASSERT_EQ(ready.value("ready", false), true) << ready;

    // Its own: removed, and said so.
    const json first = a.acquire();
    ASSERT_EQ(first.value("ok", false), true) << first;
    EXPECT_EQ(command(redis_, "EXISTS k")->integer, 1);
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", {0}}}));
    EXPECT_EQ(command(redis_, "EXISTS k")->integer, 0);

    // Gone before the release (as when it expired): the library answers success, and the
    // adapter says it removed nothing.
    ASSERT_EQ(a.acquire().value("ok", false), true);
    command(redis_, "DEL k");
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", json::array()}}));

    // Another's: refused, and the other's hash is left.
    ASSERT_EQ(a.acquire().value("ok", false), true);
    command(redis_, "DEL k");
    command(redis_, "HSET k someone-else:1 1");
    const json refused = a.release();
    EXPECT_EQ(refused.value("ok", true), false) << refused;
    EXPECT_FALSE(refused.contains("removed_on")) << refused;
    EXPECT_EQ(command(redis_, "HEXISTS k someone-else:1")->integer, 1);
}

TEST_F(RedissonAdapter, APlainReleaseOfAKeyThatIsGoneFails) {
    Adapter a(node_->port(), json::object());
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    command(redis_, "DEL k");
    const json gone = a.release();
    EXPECT_EQ(gone.value("ok", true), false) << gone;
    EXPECT_FALSE(gone.contains("removed_on")) << gone;
}

// Adapters kept across repetitions (docs/adapters.md): the Java kit's resets. At a run's end
// the adapter drops its library's connections (the server sees none left); told the next
// run's settings, it runs its main again with them (here the fair lock's) and says ready as
// the reset's answer.
TEST_F(RedissonAdapter, AResetDropsTheRunsConnectionsAndServesTheNextRunsSettings) {
    Adapter a(node_->port(), json::object());
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    const auto clients = [&] {
        const std::string list = command(redis_, "CLIENT LIST")->str;
        return std::count(list.begin(), list.end(), '\n');
    };
    ASSERT_GT(clients(), 1);  // ours and the library's

    EXPECT_EQ(a.call({{"op", "reset"}}), json({{"ok", true}}));
    for (int i = 0; i < 200 && clients() > 1; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(clients(), 1) << "the library's connections outlived the run's end";

    const json env = {{"LOCKBENCH_NODES", "127.0.0.1:" + std::to_string(node_->port())}, {"LOCKBENCH_CLIENT", "1"},
                      {"LOCKBENCH_KEY", "lb"}, {"LOCKBENCH_TTL_MS", "1000"}, {"LOCKBENCH_COMMAND_TIMEOUT_MS", "1000"},
                      {"LOCKBENCH_OP_TIMEOUT_MS", "10000"}, {"LOCKBENCH_CONNECT_TIMEOUT_MS", "10000"},
                      {"LOCKBENCH_PARAMS", json({{"fair", true}}).dump()}};
    const json again = a.call({{"op", "reset"}, {"env", env}});
    ASSERT_EQ(again.value("ok", false), true) << again;
    EXPECT_TRUE(again.value("library", std::string()).starts_with("redisson ")) << again;
    EXPECT_NE(again.value("algorithm", std::string()).find("RFairLock"), std::string::npos) << again;
    // The run before's lock is still in this server (a repetition has servers of its own):
    // cleared, the fair lock of the new settings takes the key.
    command(redis_, "DEL k");
    ASSERT_EQ(a.acquire().value("ok", false), true);
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", {0}}}));
}

}  // namespace
}  // namespace lockbench
