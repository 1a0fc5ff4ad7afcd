// Lock::extend for every algorithm, against live redis-server processes.
//
// As in lock_algorithms_test.cpp, "the lock expired" or "someone else holds it" is produced
// by deleting or rewriting the key directly, and TTLs are long (minutes), so no assertion
// depends on timing: an extend that worked shows as a PTTL above what the acquire set.
#include <gtest/gtest.h>

#include "lockimpl/registry.h"
#include "sim/live/live_env.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

constexpr const char* kKey = "test:lock";
constexpr long long kMinute = 60'000;

class LockExtend : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::filesystem::path(make_run_temp_dir());
        nodes_ = new std::vector<RedisNode>();
        for (int i = 0; i < 3; ++i) nodes_->emplace_back(RedisNodeConfig{"lock" + std::to_string(i)}, *dir_);
    }
    static void TearDownTestSuite() {
        delete nodes_;
        std::filesystem::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override { env(3, 99).fan_out({"FLUSHALL"}, std::chrono::seconds(2), std::nullopt); }

    static LiveEnv env(int nodes, std::uint64_t seed) {
        LiveEnvConfig c;
        for (int i = 0; i < nodes; ++i) c.nodes.push_back({"127.0.0.1", (*nodes_)[static_cast<size_t>(i)].port()});
        c.seed = seed;
        return LiveEnv(std::move(c));
    }

    static std::unique_ptr<Lock> make(const std::string& algorithm, const nlohmann::json& params) {
        const AlgorithmInfo* a = find_algorithm(algorithm);
        Params p;
        std::string error;
        EXPECT_TRUE(resolve_params(a->params, params, p, error)) << error;
        return a->make(p, {kKey, 0, std::chrono::milliseconds(200)});
    }

    static Reply raw(Env& e, int node, Command cmd) {
        return e.command(NodeId{node}, cmd, std::chrono::seconds(1), std::nullopt);
    }
    static long long pttl(Env& e, int node = 0) { return raw(e, node, {"PTTL", kKey}).value.integer; }

    static std::filesystem::path* dir_;
    static std::vector<RedisNode>* nodes_;
};

std::filesystem::path* LockExtend::dir_ = nullptr;
std::vector<RedisNode>* LockExtend::nodes_ = nullptr;

Duration minutes(long long n) { return std::chrono::milliseconds(n * kMinute); }

TEST_F(LockExtend, TokenLuaAddsOrReplacesOnlyWhileTheKeyIsOurs) {
    LiveEnv e = env(1, 1);
    auto lock = make("token-lua", {{"ttl_ms", kMinute}});
    const AcquireResult a = lock->try_acquire(e);
    ASSERT_EQ(a.outcome, Outcome::ok);
    const ExtendResult added = lock->extend(e, *a.lease, minutes(1), ExtendMode::add);
    EXPECT_EQ(added.outcome, Outcome::ok) << added.detail;
    EXPECT_TRUE(added.valid_until);
    EXPECT_GT(pttl(e), kMinute) << "add: the time left plus T";
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(3), ExtendMode::replace).outcome, Outcome::ok);
    EXPECT_GT(pttl(e), 2 * kMinute);
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::replace).outcome, Outcome::ok);
    EXPECT_LE(pttl(e), kMinute) << "replace: exactly T, even when shorter than what was left";
    raw(e, 0, {"SET", kKey, "someone-else", "PX", "600000"});
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(20), ExtendMode::replace).outcome, Outcome::fail);
    EXPECT_LE(pttl(e), 10 * kMinute) << "another client's key is never extended";
    raw(e, 0, {"SET", kKey, a.lease->token});  // ours, but without a TTL: redis-py returns 0
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::add).outcome, Outcome::fail);
    raw(e, 0, {"DEL", kKey});
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::add).outcome, Outcome::fail);
}

TEST_F(LockExtend, ReentrantReplacesItsOwnLeaseAndRefusesAdd) {
    LiveEnv e = env(1, 2);
    auto lock = make("reentrant", {{"lease_ms", kMinute}, {"watchdog", false}});
    const AcquireResult a = lock->try_acquire(e);
    ASSERT_EQ(a.outcome, Outcome::ok);
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(5), ExtendMode::replace).outcome, Outcome::ok);
    EXPECT_GT(pttl(e), 4 * kMinute);
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(5), ExtendMode::add).outcome, Outcome::fail);
    raw(e, 0, {"DEL", kKey});
    raw(e, 0, {"HSET", kKey, "other:1", "1"});
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(5), ExtendMode::replace).outcome, Outcome::fail);
    EXPECT_EQ(pttl(e), -1) << "another holder's hash is not touched";
}

TEST_F(LockExtend, RedlockExtendsOnAMajorityOnly) {
    for (int taken = 0; taken <= 3; ++taken) {
        SetUp();
        LiveEnv e = env(3, 10 + static_cast<std::uint64_t>(taken));
        auto lock = make("redlock", {{"ttl_ms", kMinute}});
        const AcquireResult a = lock->try_acquire(e);
        ASSERT_EQ(a.outcome, Outcome::ok) << a.detail;
        for (int n = 0; n < taken; ++n) raw(e, n, {"SET", kKey, "someone-else"});
        const ExtendResult r = lock->extend(e, *a.lease, minutes(5), ExtendMode::replace);
        EXPECT_EQ(r.outcome == Outcome::ok, taken <= 1) << taken << " nodes taken: " << r.detail;
        EXPECT_EQ(r.valid_until.has_value(), taken <= 1);
        for (int n = taken; n < 3; ++n) EXPECT_GT(pttl(e, n), 4 * kMinute) << "node " << n;
    }
}

// T shorter than the drift allowance (1% of a minute): every node extends, yet the validity is
// used up on arrival, so the extend fails outright, as an acquire would ([S3]); "maybe" (info)
// would leave the lease unmarked as lost.
TEST_F(LockExtend, RedlockExtendOnAMajorityWithItsValidityUsedUpFails) {
    LiveEnv e = env(3, 20);
    auto lock = make("redlock", {{"ttl_ms", kMinute}});
    const AcquireResult a = lock->try_acquire(e);
    ASSERT_EQ(a.outcome, Outcome::ok) << a.detail;
    const ExtendResult r = lock->extend(e, *a.lease, std::chrono::milliseconds(kMinute / 200), ExtendMode::replace);
    EXPECT_EQ(r.outcome, Outcome::fail) << r.detail;
    EXPECT_NE(r.detail.find("3 of 3 nodes, validity used up"), std::string::npos) << r.detail;
    EXPECT_FALSE(r.valid_until);
}

TEST_F(LockExtend, SetnxExtendsWhoeverHoldsTheKey) {
    LiveEnv e = env(1, 3);
    auto lock = make("setnx", {{"ttl_ms", kMinute}});
    const AcquireResult a = lock->try_acquire(e);
    ASSERT_EQ(a.outcome, Outcome::ok);
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::add).outcome, Outcome::ok);
    EXPECT_GT(pttl(e), kMinute);
    raw(e, 0, {"SET", kKey, "someone-else", "PX", "600000"});
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(20), ExtendMode::replace).outcome, Outcome::ok)
        << "the naive PEXPIRE checks nothing";
    EXPECT_GT(pttl(e), 19 * kMinute) << "and extended another client's lock";
    raw(e, 0, {"DEL", kKey});
    EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::replace).outcome, Outcome::fail);
}

TEST_F(LockExtend, ExpiryInValueLocksSwapInANewExpiryAndSeeWhoseTheOldWas) {
    for (const char* algorithm : {"getset", "setnx"}) {
        SetUp();
        LiveEnv e = env(1, 4);
        const nlohmann::json params = std::string(algorithm) == "setnx"
            ? nlohmann::json{{"ttl_ms", kMinute}, {"expiry", "in-value"}} : nlohmann::json{{"ttl_ms", kMinute}};
        auto lock = make(algorithm, params);
        const AcquireResult a = lock->try_acquire(e);
        ASSERT_EQ(a.outcome, Outcome::ok) << algorithm;
        const ExtendResult r = lock->extend(e, *a.lease, minutes(2), ExtendMode::add);
        ASSERT_EQ(r.outcome, Outcome::ok) << algorithm << ": " << r.detail;
        ASSERT_TRUE(r.token);
        EXPECT_EQ(leading_integer(*r.token), leading_integer(a.lease->token) + 2 * kMinute) << algorithm;
        EXPECT_EQ(raw(e, 0, {"GET", kKey}).value.str, *r.token);
        raw(e, 0, {"SET", kKey, "12345"});
        EXPECT_EQ(lock->extend(e, *a.lease, minutes(1), ExtendMode::replace).outcome, Outcome::fail) << algorithm;
    }
}

}  // namespace
}  // namespace lockbench
