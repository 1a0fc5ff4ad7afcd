// The algorithms' own properties, against live redis-server processes.
//
// "The lock expired" is produced by deleting or rewriting the key directly, not by waiting
// for a TTL, so these tests do not depend on timing. The one exception, the watchdog, waits
// for an outcome (the PTTL going back up) with a bounded poll, and asserts no durations.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <set>
#include <thread>

#include "lockimpl/registry.h"
#include "sim/live/background_control.h"
#include "sim/live/live_env.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

constexpr const char* kKey = "test:lock";

class LockAlgorithms : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::filesystem::path(make_run_temp_dir());
        nodes_ = new std::vector<RedisNode>();
        for (int i = 0; i < 5; ++i) nodes_->emplace_back(RedisNodeConfig{"lock" + std::to_string(i)}, *dir_);
    }
    static void TearDownTestSuite() {
        delete nodes_;
        std::filesystem::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override {
        for (auto& n : *nodes_) n.resume();
        LiveEnv all = env(5, 99);
        all.fan_out({"FLUSHALL"}, std::chrono::seconds(2), std::nullopt);
    }

    static LiveEnv env(int nodes, std::uint64_t seed) {
        LiveEnvConfig c;
        for (int i = 0; i < nodes; ++i) c.nodes.push_back({"127.0.0.1", (*nodes_)[static_cast<size_t>(i)].port()});
        c.seed = seed;
        return LiveEnv(std::move(c));
    }

    static std::unique_ptr<Lock> make(const std::string& algorithm, const nlohmann::json& params, int client = 0) {
        const AlgorithmInfo* a = find_algorithm(algorithm);
        Params p;
        std::string error;
        EXPECT_TRUE(resolve_params(a->params, params.is_null() ? nlohmann::json::object() : params, p, error)) << error;
        return a->make(p, {kKey, client, std::chrono::milliseconds(200)});
    }

    static Reply raw(Env& e, int node, Command cmd) {
        return e.command(NodeId{node}, cmd, std::chrono::seconds(1), std::nullopt);
    }

    static std::filesystem::path* dir_;
    static std::vector<RedisNode>* nodes_;
};

std::filesystem::path* LockAlgorithms::dir_ = nullptr;
std::vector<RedisNode>* LockAlgorithms::nodes_ = nullptr;

// ---- token-lua ---------------------------------------------------------------------------

TEST_F(LockAlgorithms, TokenReleaseNeverDeletesAnotherClientsLock) {
    LiveEnv a_env = env(1, 1), b_env = env(1, 2);
    auto a = make("token-lua", {}), b = make("token-lua", {}, 1);
    const AcquireResult held_a = a->try_acquire(a_env);
    ASSERT_EQ(held_a.outcome, Outcome::ok);
    EXPECT_EQ(b->try_acquire(b_env).outcome, Outcome::fail) << "a second holder while the first holds";
    raw(a_env, 0, {"DEL", kKey});  // A's lock expires
    const AcquireResult held_b = b->try_acquire(b_env);
    ASSERT_EQ(held_b.outcome, Outcome::ok);

    const ReleaseResult late = a->release(a_env, *held_a.lease);
    EXPECT_TRUE(late.removed_on.empty());
    EXPECT_EQ(raw(a_env, 0, {"GET", kKey}).value.str, held_b.lease->token);
    EXPECT_EQ(b->release(b_env, *held_b.lease).removed_on.size(), 1u);
    EXPECT_TRUE(raw(a_env, 0, {"GET", kKey}).value.is_nil());
}

// What the worker asks after the store refused a write: the lock server's own word on whether
// the lease still holds the lock (its token at the key), which a later holder's takes away.
TEST_F(LockAlgorithms, TheLockServerSaysWhetherALeaseStillHoldsTheLock) {
    LiveEnv a_env = env(1, 11), b_env = env(1, 12);
    auto a = make("token-lua", {{"fence", true}}), b = make("token-lua", {{"fence", true}}, 1);
    const AcquireResult held_a = a->try_acquire(a_env);
    ASSERT_EQ(held_a.outcome, Outcome::ok);
    EXPECT_EQ(a->holds(a_env, *held_a.lease), std::optional<bool>(true));
    raw(a_env, 0, {"DEL", kKey});  // A's lock expires
    EXPECT_EQ(a->holds(a_env, *held_a.lease), std::optional<bool>(false));
    const AcquireResult held_b = b->try_acquire(b_env);
    ASSERT_EQ(held_b.outcome, Outcome::ok);
    EXPECT_EQ(a->holds(a_env, *held_a.lease), std::optional<bool>(false)) << "B's token is at the key now";
    EXPECT_EQ(b->holds(b_env, *held_b.lease), std::optional<bool>(true));

    // Reentrant: its token is a field of the lock's hash.
    SetUp();
    auto r = make("reentrant", {{"lease_ms", 5000}, {"watchdog", false}});
    const AcquireResult held_r = r->try_acquire(a_env);
    ASSERT_EQ(held_r.outcome, Outcome::ok);
    EXPECT_EQ(r->holds(a_env, *held_r.lease), std::optional<bool>(true));
    raw(a_env, 0, {"DEL", kKey});
    EXPECT_EQ(r->holds(a_env, *held_r.lease), std::optional<bool>(false));
}

TEST_F(LockAlgorithms, RedlockHoldsOnAMajorityAndCannotSayWithoutOne) {
    LiveEnv e = env(5, 13);
    auto lock = make("redlock", {{"ttl_ms", 5000}, {"node_timeout_ms", 30}});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(lock->holds(e, *r.lease), std::optional<bool>(true));
    raw(e, 0, {"SET", kKey, "someone-else"});
    raw(e, 1, {"DEL", kKey});
    EXPECT_EQ(lock->holds(e, *r.lease), std::optional<bool>(true)) << "still on 3 of 5";
    (*nodes_)[3].pause();
    (*nodes_)[4].pause();
    const std::optional<bool> unanswered = lock->holds(e, *r.lease);
    (*nodes_)[3].resume();
    (*nodes_)[4].resume();
    EXPECT_EQ(unanswered, std::nullopt) << "1 of 5 holds, 2 did not answer: a majority neither held nor ruled out";
    raw(e, 2, {"DEL", kKey});
    EXPECT_EQ(lock->holds(e, *r.lease), std::optional<bool>(false)) << "2 of 5";
}

// At the point between SETNX and EXPIRE (where a crash would leave it), the setnx lock's key
// has no expiry; token-lua never passes such a point, and its key always has one.
long long pttl_between_setnx_and_expire(const std::string& algorithm, int node_port) {
    std::optional<long long> seen;
    LiveEnv probe({{{"127.0.0.1", node_port}}});
    LiveEnvConfig c{{{"127.0.0.1", node_port}}};
    c.on_point = [&](Point p) {
        if (p == Point::between_setnx_and_expire)
            seen = probe.command(NodeId{0}, {"PTTL", kKey}, std::chrono::seconds(1), std::nullopt).value.integer;
    };
    LiveEnv e(std::move(c));
    const Params none = [&] {
        Params p;
        std::string error;
        resolve_params(find_algorithm(algorithm)->params, nlohmann::json::object(), p, error);
        return p;
    }();
    const auto lock = find_algorithm(algorithm)->make(none, {kKey, 0, std::chrono::milliseconds(200)});
    EXPECT_EQ(lock->try_acquire(e).outcome, Outcome::ok);
    return seen.value_or(0);
}

TEST_F(LockAlgorithms, SetnxLeavesAWindowWithoutExpiryAndTokenLuaDoesNot) {
    const int port = (*nodes_)[0].port();
    EXPECT_EQ(pttl_between_setnx_and_expire("setnx", port), -1) << "SETNX then PEXPIRE: not atomic";
    SetUp();
    EXPECT_EQ(pttl_between_setnx_and_expire("token-lua", port), 0) << "token-lua passed that point";
    LiveEnv e = env(1, 3);
    const long long pttl = raw(e, 0, {"PTTL", kKey}).value.integer;
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, 500);
}

// The points an algorithm's acquire says it passes (AlgorithmInfo::acquire_points, which
// decides where a case's faults can land) are those it reaches: on a free key, and on a key
// whose stored value is an expiry long past (what the value-as-expiry locks take over).
std::set<Point> points_met(const std::string& algorithm, const nlohmann::json& params, int nodes,
                           const std::vector<RedisNode>& servers) {
    std::set<Point> met;
    LiveEnvConfig c;
    for (int i = 0; i < nodes; ++i) c.nodes.push_back({"127.0.0.1", servers[static_cast<size_t>(i)].port()});
    c.on_point = [&](Point p) { met.insert(p); };
    LiveEnv e(std::move(c));
    const AlgorithmInfo* a = find_algorithm(algorithm);
    Params p;
    std::string error;
    EXPECT_TRUE(resolve_params(a->params, params, p, error)) << error;
    e.fan_out({"FLUSHALL"}, std::chrono::seconds(2), std::nullopt);
    a->make(p, {kKey, 0, std::chrono::milliseconds(200)})->try_acquire(e);
    e.fan_out({"FLUSHALL"}, std::chrono::seconds(2), std::nullopt);
    e.fan_out({"SET", kKey, "1"}, std::chrono::seconds(2), std::nullopt);
    a->make(p, {kKey, 1, std::chrono::milliseconds(200)})->try_acquire(e);
    return met;
}

TEST_F(LockAlgorithms, EachAcquirePassesThePointsItsAlgorithmDeclares) {
    const std::vector<nlohmann::json> setnx_kinds = {
        {{"expiry", "expire"}}, {{"expiry", "none"}}, {{"expiry", "in-value"}}};
    for (const AlgorithmInfo& a : algorithms()) {
        const std::vector<nlohmann::json> kinds =
            a.name == "setnx" ? setnx_kinds : std::vector<nlohmann::json>{nlohmann::json::object()};
        for (const nlohmann::json& params : kinds) {
            std::set<Point> declared;
            if (a.acquire_points)
                for (Point p : a.acquire_points(params)) declared.insert(p);
            EXPECT_EQ(points_met(a.name, params, a.default_nodes, *nodes_), declared) << a.name << " " << params.dump();
        }
    }
}

TEST_F(LockAlgorithms, FencingTokensIncreaseWithEveryAcquire) {
    LiveEnv e = env(1, 4);
    auto lock = make("token-lua", {{"fence", true}});
    long long last = 0;
    for (int i = 0; i < 5; ++i) {
        const AcquireResult r = lock->try_acquire(e);
        ASSERT_EQ(r.outcome, Outcome::ok);
        ASSERT_TRUE(r.lease->fencing_token);
        EXPECT_GT(*r.lease->fencing_token, last);
        last = *r.lease->fencing_token;
        EXPECT_EQ(lock->try_acquire(e).outcome, Outcome::fail) << "no fence is drawn for a failed acquire";
        lock->release(e, *r.lease);
    }
    EXPECT_EQ(last, 5);
}

TEST_F(LockAlgorithms, WaitWithoutReplicasFailsAndLeavesNoLock) {
    LiveEnv e = env(1, 5);
    auto lock = make("token-lua", {{"wait_replicas", 1}, {"wait_timeout_ms", 10}});
    const AcquireResult r = lock->try_acquire(e);
    EXPECT_EQ(r.outcome, Outcome::fail);
    EXPECT_NE(r.detail.find("0 of 1 replicas"), std::string::npos) << r.detail;
    EXPECT_TRUE(raw(e, 0, {"GET", kKey}).value.is_nil());
}

// ---- setnx: the pitfalls are behaviour, so they are asserted ------------------------------

TEST_F(LockAlgorithms, SetnxPlainDelDeletesTheNextHoldersLock) {
    LiveEnv e = env(1, 6);
    auto a = make("setnx", {}), b = make("setnx", {}, 1);
    const AcquireResult held_a = a->try_acquire(e);
    ASSERT_EQ(held_a.outcome, Outcome::ok);
    raw(e, 0, {"DEL", kKey});
    ASSERT_EQ(b->try_acquire(e).outcome, Outcome::ok);
    EXPECT_EQ(a->release(e, *held_a.lease).removed_on.size(), 1u) << "plain DEL removes B's lock";
    EXPECT_TRUE(raw(e, 0, {"GET", kKey}).value.is_nil());
}

TEST_F(LockAlgorithms, SetnxGetDelProtectsOnlyWithARandomValue) {
    for (const char* value : {"random", "fixed"}) {
        SetUp();
        LiveEnv e = env(1, 7);
        auto a = make("setnx", {{"value", value}, {"release", "get-del"}});
        auto b = make("setnx", {{"value", value}, {"release", "get-del"}}, 1);
        const AcquireResult held_a = a->try_acquire(e);
        ASSERT_EQ(held_a.outcome, Outcome::ok);
        raw(e, 0, {"DEL", kKey});
        ASSERT_EQ(b->try_acquire(e).outcome, Outcome::ok);
        const size_t removed = a->release(e, *held_a.lease).removed_on.size();
        EXPECT_EQ(removed, std::string(value) == "fixed" ? 1u : 0u) << "value=" << value;
    }
}

TEST_F(LockAlgorithms, SetnxExpiryVariants) {
    LiveEnv e = env(1, 8);
    ASSERT_EQ(make("setnx", {{"ttl_ms", 5000}})->try_acquire(e).outcome, Outcome::ok);
    EXPECT_GT(raw(e, 0, {"PTTL", kKey}).value.integer, 0);
    raw(e, 0, {"DEL", kKey});
    ASSERT_EQ(make("setnx", {{"expiry", "none"}})->try_acquire(e).outcome, Outcome::ok);
    EXPECT_EQ(raw(e, 0, {"PTTL", kKey}).value.integer, -1) << "a lock that never expires";
}

TEST_F(LockAlgorithms, SetnxExpiryInValueTakesOverAPassedExpiry) {
    LiveEnv e = env(1, 9);
    auto lock = make("setnx", {{"expiry", "in-value"}});
    raw(e, 0, {"SET", kKey, std::to_string(e.wall_ms() + 60000)});
    EXPECT_EQ(lock->try_acquire(e).outcome, Outcome::fail) << "the holder's expiry lies ahead";
    raw(e, 0, {"SET", kKey, std::to_string(e.wall_ms() - 1000)});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.detail;
    EXPECT_EQ(raw(e, 0, {"GET", kKey}).value.str, r.lease->token);
}

// ---- getset --------------------------------------------------------------------------------

TEST_F(LockAlgorithms, GetsetStealsOnlyAnExpiredLock) {
    LiveEnv e = env(1, 10);
    auto lock = make("getset", {});
    raw(e, 0, {"SET", kKey, std::to_string(e.wall_ms() + 60000)});
    EXPECT_EQ(lock->try_acquire(e).outcome, Outcome::fail);
    raw(e, 0, {"SET", kKey, std::to_string(e.wall_ms() - 1000)});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.detail;
    EXPECT_EQ(raw(e, 0, {"GET", kKey}).value.str, r.lease->token);
}

TEST_F(LockAlgorithms, GetsetReleaseSkipsOnceItsOwnExpiryPassed) {
    LiveEnv e = env(1, 11);
    auto lock = make("getset", {});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok);
    Lease expired = *r.lease;
    expired.token = std::to_string(e.wall_ms() - 1);
    EXPECT_TRUE(lock->release(e, expired).removed_on.empty());
    EXPECT_FALSE(raw(e, 0, {"GET", kKey}).value.is_nil());
    EXPECT_EQ(lock->release(e, *r.lease).removed_on.size(), 1u);
}

// ---- redlock -------------------------------------------------------------------------------

// Every mask of failed nodes: a node fails the SET because another client's key is there.
TEST_F(LockAlgorithms, RedlockNeedsAMajorityForEveryMaskOfFailedNodes) {
    for (unsigned failed = 0; failed < 32; ++failed) {
        SetUp();
        LiveEnv e = env(5, 100 + failed);
        for (int n = 0; n < 5; ++n)
            if (failed & (1u << n)) raw(e, n, {"SET", kKey, "someone-else"});
        auto lock = make("redlock", {{"ttl_ms", 5000}});
        const AcquireResult r = lock->try_acquire(e);
        const int free_nodes = 5 - std::popcount(failed);
        ASSERT_EQ(r.outcome == Outcome::ok, free_nodes >= 3) << "mask " << failed << ": " << r.detail;
        for (int n = 0; n < 5; ++n) {
            const Reply v = raw(e, n, {"GET", kKey});
            if (failed & (1u << n)) {
                EXPECT_EQ(v.value.str, "someone-else") << "mask " << failed << " node " << n;
            } else if (r.outcome == Outcome::ok) {
                EXPECT_EQ(v.value.str, r.lease->token);
            } else {
                EXPECT_TRUE(v.value.is_nil()) << "[S5] left a key on node " << n << ", mask " << failed;
            }
        }
        if (r.outcome == Outcome::ok) {
            EXPECT_EQ(lock->release(e, *r.lease).removed_on.size(), static_cast<size_t>(free_nodes));
        }
    }
}

TEST_F(LockAlgorithms, RedlockTreatsUnresponsiveNodesAsFailed) {
    for (int paused : {2, 3}) {
        SetUp();
        for (int n = 0; n < paused; ++n) (*nodes_)[static_cast<size_t>(n)].pause();
        LiveEnv e = env(5, 200 + static_cast<std::uint64_t>(paused));
        auto lock = make("redlock", {{"ttl_ms", 5000}, {"node_timeout_ms", 30}});
        const AcquireResult r = lock->try_acquire(e);
        for (int n = 0; n < paused; ++n) (*nodes_)[static_cast<size_t>(n)].resume();
        EXPECT_EQ(r.outcome == Outcome::ok, paused == 2) << paused << " paused: " << r.detail;
    }
}

TEST_F(LockAlgorithms, RedlockRefusesAMajorityWhoseValidityIsUsedUp) {
    LiveEnv e = env(5, 300);
    // ttl 1 ms minus the 2 ms drift allowance leaves no validity, whatever the round trip.
    const AcquireResult checked = make("redlock", {{"ttl_ms", 1}})->try_acquire(e);
    EXPECT_EQ(checked.outcome, Outcome::fail);
    EXPECT_NE(checked.detail.find("validity used up"), std::string::npos) << checked.detail;
    SetUp();
    EXPECT_EQ(make("redlock", {{"ttl_ms", 1}, {"check_validity", false}})->try_acquire(e).outcome, Outcome::ok);
}

// ---- reentrant -----------------------------------------------------------------------------

TEST_F(LockAlgorithms, ReentrantNestsAndReleasesAtZero) {
    LiveEnv e = env(1, 400), other_env = env(1, 401);
    auto lock = make("reentrant", {{"lease_ms", 5000}, {"watchdog", false}});
    auto other = make("reentrant", {{"lease_ms", 5000}}, 1);
    const AcquireResult first = lock->try_acquire(e);
    const AcquireResult second = lock->try_acquire(e);
    ASSERT_EQ(first.outcome, Outcome::ok);
    ASSERT_EQ(second.outcome, Outcome::ok);
    EXPECT_EQ(second.lease->depth, 2);
    EXPECT_EQ(raw(e, 0, {"HGET", kKey, first.lease->token}).value.str, "2");

    const AcquireResult blocked = other->try_acquire(other_env);
    EXPECT_EQ(blocked.outcome, Outcome::fail);
    ASSERT_TRUE(blocked.retry_within) << "a waiter learns the PTTL";
    EXPECT_GT(blocked.retry_within->count(), 0);

    EXPECT_TRUE(lock->release(e, *second.lease).removed_on.empty());
    EXPECT_EQ(raw(e, 0, {"HGET", kKey, first.lease->token}).value.str, "1");
    EXPECT_EQ(lock->release(e, *first.lease).removed_on.size(), 1u);
    EXPECT_EQ(raw(e, 0, {"EXISTS", kKey}).value.integer, 0);
}

TEST_F(LockAlgorithms, ReentrantReleaseNeverTouchesAnotherHoldersHash) {
    LiveEnv e = env(1, 402), other_env = env(1, 403);
    auto lock = make("reentrant", {{"lease_ms", 5000}, {"watchdog", false}});
    auto other = make("reentrant", {{"lease_ms", 5000}, {"watchdog", false}}, 1);
    const AcquireResult mine = lock->try_acquire(e);
    ASSERT_EQ(mine.outcome, Outcome::ok);
    raw(e, 0, {"DEL", kKey});
    const AcquireResult theirs = other->try_acquire(other_env);
    ASSERT_EQ(theirs.outcome, Outcome::ok);
    const ReleaseResult late = lock->release(e, *mine.lease);
    EXPECT_TRUE(late.removed_on.empty());
    EXPECT_EQ(raw(e, 0, {"HGET", kKey, theirs.lease->token}).value.str, "1");
}

// Polls the key's PTTL for up to 5 s; returns true once it rises (a renewal) or, with
// `until_gone`, once the key has expired.
bool observe(Env& e, bool until_gone) {
    long long last = e.command(NodeId{0}, {"PTTL", kKey}, std::chrono::seconds(1), std::nullopt).value.integer;
    for (int i = 0; i < 500; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const long long now = e.command(NodeId{0}, {"PTTL", kKey}, std::chrono::seconds(1), std::nullopt).value.integer;
        if (until_gone ? now == -2 : now > last) return true;
        last = now;
    }
    return false;
}

TEST_F(LockAlgorithms, ReentrantWatchdogRenewsTheLeaseWhileHeld) {
    LiveEnv e = env(1, 404), probe = env(1, 405);
    auto lock = make("reentrant", {{"lease_ms", 300}});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok);
    EXPECT_TRUE(observe(probe, false)) << "the PTTL never went back up";
    EXPECT_TRUE(observe(probe, false)) << "renewed only once";
    lock->release(e, *r.lease);
    EXPECT_EQ(raw(probe, 0, {"EXISTS", kKey}).value.integer, 0);
}

TEST_F(LockAlgorithms, ReentrantWithoutWatchdogExpires) {
    LiveEnv e = env(1, 406), probe = env(1, 407);
    auto lock = make("reentrant", {{"lease_ms", 300}, {"watchdog", false}});
    ASSERT_EQ(lock->try_acquire(e).outcome, Outcome::ok);
    EXPECT_TRUE(observe(probe, true)) << "the lease should run out";
}

// ---- a background pause (issue 16): the nemesis's signals hold the watchdog alone ----------

// The nemesis's end of a client's background channel: a listening socket, the one connection.
class BackgroundChannel {
public:
    explicit BackgroundChannel(const std::filesystem::path& path) : path_(path) {
        listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        EXPECT_EQ(::bind(listen_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
        EXPECT_EQ(::listen(listen_, 1), 0);
    }
    ~BackgroundChannel() {
        if (fd_ >= 0) ::close(fd_);
        ::close(listen_);
        std::filesystem::remove(path_);
    }
    // Signals this process and returns the line the client answered with.
    std::string signal(int sig) {
        ::kill(::getpid(), sig);
        return line();
    }
    std::string line() {
        if (fd_ < 0) fd_ = ::accept(listen_, nullptr, nullptr);
        std::string out;
        char c = 0;
        while (::read(fd_, &c, 1) == 1 && c != '\n') out += c;
        return out;
    }

private:
    std::filesystem::path path_;
    int listen_ = -1, fd_ = -1;
};

// BackgroundControl blocks SIGUSR1/2 in the thread that makes it (in a client, every
// thread's mask): the tests restore this process's mask after it, for the tests that follow.
class SignalMaskGuard {
public:
    SignalMaskGuard() { pthread_sigmask(SIG_SETMASK, nullptr, &saved_); }
    ~SignalMaskGuard() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

private:
    sigset_t saved_;
};

bool usr1_blocked() {
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    return sigismember(&now, SIGUSR1) == 1;
}

TEST_F(LockAlgorithms, ABackgroundPauseHoldsTheWatchdogAndTheLeaseRunsOut) {
    SignalMaskGuard mask;
    BackgroundChannel nemesis(*dir_ / "bg-held.sock");
    auto gate = std::make_shared<BackgroundGate>();
    BackgroundControl control((*dir_ / "bg-held.sock").string(), 3, gate);
    EXPECT_EQ(nemesis.line(), "background 3");
    LiveEnvConfig c;
    c.nodes.push_back({"127.0.0.1", (*nodes_)[0].port()});
    c.background_gate = gate;
    LiveEnv e(std::move(c));
    LiveEnv probe = env(1, 409);
    auto lock = make("reentrant", {{"lease_ms", 300}});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(nemesis.signal(SIGUSR1), "held");
    EXPECT_TRUE(observe(probe, true)) << "the held watchdog renewed: the lease should run out";
    ASSERT_EQ(nemesis.signal(SIGUSR2), "released");
    lock->release(e, *r.lease);  // the watchdog, let go, finds the lease gone and stops
}

TEST_F(LockAlgorithms, AWatchdogLetGoRenewsLateNotNever) {
    SignalMaskGuard mask;
    BackgroundChannel nemesis(*dir_ / "bg-late.sock");
    auto gate = std::make_shared<BackgroundGate>();
    BackgroundControl control((*dir_ / "bg-late.sock").string(), 0, gate);
    EXPECT_EQ(nemesis.line(), "background 0");
    LiveEnvConfig c;
    c.nodes.push_back({"127.0.0.1", (*nodes_)[0].port()});
    c.background_gate = gate;
    LiveEnv e(std::move(c));
    LiveEnv probe = env(1, 411);
    auto lock = make("reentrant", {{"lease_ms", 3000}});
    const AcquireResult r = lock->try_acquire(e);
    ASSERT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(nemesis.signal(SIGUSR1), "held");
    // Held past its period (1 s), the lease runs below 1.5 s: not renewed meanwhile.
    long long pttl = 3000;
    for (int i = 0; i < 500 && pttl > 1500; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        pttl = raw(probe, 0, {"PTTL", kKey}).value.integer;
    }
    EXPECT_LE(pttl, 1500) << "the held watchdog renewed";
    EXPECT_GT(pttl, 0) << "the lease ran out before the test let the watchdog go";
    ASSERT_EQ(nemesis.signal(SIGUSR2), "released");
    EXPECT_TRUE(observe(probe, false)) << "the watchdog, let go, never renewed";
    lock->release(e, *r.lease);
}

TEST_F(LockAlgorithms, TheBackgroundPauseTestsLeaveNoSignalBlocked) {
    EXPECT_FALSE(usr1_blocked()) << "a test before this one left SIGUSR1 blocked";
}

// Stopping a held task ends its wait: a command it was about to send answers unknown at once,
// so a background-only pause cannot delay the holder's release. (The safety net only keeps a
// regression from hanging the test: it lets the task go far later than any stop should take.)
TEST_F(LockAlgorithms, StoppingAHeldBackgroundTaskDoesNotWaitForTheRelease) {
    auto gate = std::make_shared<BackgroundGate>();
    LiveEnvConfig c;
    c.nodes.push_back({"127.0.0.1", (*nodes_)[0].port()});
    c.background_gate = gate;
    LiveEnv e(std::move(c));
    gate->hold();
    Reply reply;
    auto task = e.background([&reply](Env& bg, StopSignal&) {
        reply = bg.command(NodeId{0}, {"PING"}, std::chrono::seconds(1), std::nullopt);
    });
    std::atomic<bool> stopped{false};
    std::thread safety_net([&] {
        for (int i = 0; i < 1000 && !stopped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        gate->release();
    });
    task.reset();
    stopped = true;
    safety_net.join();
    EXPECT_EQ(reply.status, Reply::Status::unknown) << "the PING waited for the release and was sent";
    EXPECT_EQ(reply.error, "background task stopped");
}

}  // namespace
}  // namespace lockbench
