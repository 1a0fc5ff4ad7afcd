// The protected store's checks (sim/engine/store.h) on a live redis-server: what each of
// none, fence and token refuses, what the log records, and that every record carries the
// lease's fence whatever the check. The interleavings are written out call by call.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/engine/store.h"
#include "sim/live/live_env.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

class StoreChecks : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::filesystem::path(make_run_temp_dir());
        node_ = new RedisNode(RedisNodeConfig{"store"}, *dir_);
    }
    static void TearDownTestSuite() {
        delete node_;
        std::filesystem::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override { env_.command(NodeId{0}, {"FLUSHALL"}, std::chrono::seconds(2), std::nullopt); }

    static LiveEnv make_env() {
        LiveEnvConfig c;
        c.nodes.push_back({"127.0.0.1", node_->port()});
        c.seed = 7;
        return LiveEnv(std::move(c));
    }
    Store store(ResourceCheck check) { return Store(env_, std::chrono::seconds(1), check); }

    // Enters and returns what it read.
    long long enter(Store& s, const SectionId& id) {
        const Reply r = s.enter(id);
        EXPECT_TRUE(r.ok()) << r.error;
        return r.value.integer;
    }
    bool write(Store& s, const SectionId& id, long long read) {
        const Reply r = s.write_and_exit(id, read);
        EXPECT_TRUE(r.ok()) << r.error;
        return r.value.is_int(1);
    }
    std::vector<nlohmann::json> log() {
        const Reply r = env_.command(NodeId{0}, {"LRANGE", StoreKeys{}.log, "0", "-1"}, std::chrono::seconds(1), std::nullopt);
        std::vector<nlohmann::json> out;
        for (const Value& e : r.value.elements) out.push_back(nlohmann::json::parse(e.str));
        return out;
    }

    static std::filesystem::path* dir_;
    static RedisNode* node_;
    LiveEnv env_ = make_env();
    // Two leases of one fenced lock: A is the stale one (fence 1), B the newer (fence 2).
    const SectionId a_{0, "c0.1", 1, "token-a"};
    const SectionId b_{1, "c1.1", 2, "token-b"};
};

std::filesystem::path* StoreChecks::dir_ = nullptr;
RedisNode* StoreChecks::node_ = nullptr;

// A paused after entering, B entered since: check-and-set refuses A (B registered last).
TEST_F(StoreChecks, TokenRefusesAWriteWhoseTokenIsNotTheLastRegistered) {
    Store s = store(ResourceCheck::token);
    const long long read_a = enter(s, a_);
    const long long read_b = enter(s, b_);
    EXPECT_FALSE(write(s, a_, read_a));
    EXPECT_TRUE(write(s, b_, read_b));
    const auto l = log();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[2].at("kind"), "reject");
    EXPECT_EQ(l[2].at("registered"), "c1.1");
    EXPECT_FALSE(l[2].contains("max_fence")) << "token does not check the fence";
    EXPECT_EQ(l[4].at("kind"), "write");
}

// A paused before entering enters after B: it registers its stale token again, so its
// write is accepted and B's, the legitimate one, refused; the log still records the fences.
TEST_F(StoreChecks, TokenAcceptsAStaleHolderThatRegisteredLast) {
    Store s = store(ResourceCheck::token);
    const long long read_b = enter(s, b_);
    const long long read_a = enter(s, a_);
    EXPECT_FALSE(write(s, b_, read_b));
    EXPECT_TRUE(write(s, a_, read_a));
    const auto l = log();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[0].at("fence"), 2);
    EXPECT_EQ(l[1].at("fence"), 1);
    EXPECT_EQ(l[2].at("kind"), "reject");
    EXPECT_EQ(l[2].at("registered"), "c0.1");
    EXPECT_EQ(l[4].at("kind"), "write");
    EXPECT_EQ(l[4].at("fence"), 1);
}

// The same interleaving under the fence: A's lower fence is refused, B's write accepted.
TEST_F(StoreChecks, FenceRefusesTheLowerFenceWhoeverEnteredLast) {
    Store s = store(ResourceCheck::fence);
    const long long read_b = enter(s, b_);
    const long long read_a = enter(s, a_);
    EXPECT_TRUE(write(s, b_, read_b));
    EXPECT_FALSE(write(s, a_, read_a));
    const auto l = log();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[4].at("kind"), "reject");
    EXPECT_EQ(l[4].at("max_fence"), 2);
    EXPECT_FALSE(l[4].contains("registered"));
}

// No check: both writes land, each with its fence in the log.
TEST_F(StoreChecks, NoneAcceptsEveryWriteAndStillLogsTheFences) {
    Store s = store(ResourceCheck::none);
    const long long read_b = enter(s, b_);
    const long long read_a = enter(s, a_);
    EXPECT_TRUE(write(s, b_, read_b));
    EXPECT_TRUE(write(s, a_, read_a));
    const auto l = log();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[4].at("kind"), "write");
    EXPECT_EQ(l[4].at("fence"), 1);
}

TEST(ResourceCheckNames, RoundTripAndRejectOthers) {
    for (ResourceCheck c : {ResourceCheck::none, ResourceCheck::fence, ResourceCheck::token})
        EXPECT_EQ(parse_resource_check(resource_check_name(c)), c);
    EXPECT_FALSE(parse_resource_check("cas").has_value());
}

}  // namespace
}  // namespace lockbench
