// The scripts the model runs natively against the same scripts run in its Lua:
//   store ... (sim/virtual/model_store_scripts.cpp) over random sequences of enters, writes and
//             abandons (every check, fenced or not, tokens that match or not, leases that need
//             escaping), with the odd key the store never leaves (a counter that is not a plain
//             number, a key with an expiry, a log that is not a list)
//   locks ... (model_lock_scripts.cpp) compare-and-delete and the fenced acquire, among SETs,
//             DELs, expiries, a key of the wrong type and TTLs Redis refuses
// every reply, error, log line and key is the same, and the native path does run.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lockimpl/lock.h"
#include "sim/engine/store.h"
#include "sim/virtual/model_node.h"

namespace lockbench::sim {
namespace {

const StoreKeys kKeys;

Command enter(int client, const std::string& lease, const std::string& fence, const char* check, const std::string& token) {
    return {"EVAL", store_script(StoreScript::enter), "7", kKeys.counter, kKeys.log, kKeys.fence_max, kKeys.fence_lease,
            kKeys.token, kKeys.token_lease, kKeys.holder, std::to_string(client), lease, fence, check, token};
}

Command write(int client, const std::string& lease, const std::string& fence, const std::string& read, const char* check,
              const std::string& token) {
    return {"EVAL", store_script(StoreScript::write_and_exit), "6", kKeys.counter, kKeys.log, kKeys.fence_max,
            kKeys.fence_lease, kKeys.token, kKeys.token_lease, std::to_string(client), lease, fence, read, check, token};
}

Command abandon(int client, const std::string& lease) {
    return {"EVAL", store_script(StoreScript::abandon), "1", kKeys.log, std::to_string(client), lease};
}

// Something the store never does to its keys, now and then.
Command odd_key(std::mt19937_64& rng) {
    switch (rng() % 7) {
        case 0: return {"SET", kKeys.counter, "007"};
        case 1: return {"SET", kKeys.counter, "x"};
        case 2: return {"SET", kKeys.fence_max, std::to_string(rng() % 30), "PX", "100000"};
        case 3: return {"SET", kKeys.log, "not a list"};
        default: return {"DEL", kKeys.log, kKeys.counter, kKeys.fence_max};  // and back to the store's keys
    }
}

std::string describe(const Value& v, const std::string& error) {
    std::string s = error + "|" + std::to_string(static_cast<int>(v.type)) + "|" + std::to_string(v.integer) + "|" + v.str;
    for (const Value& e : v.elements) s += "[" + describe(e, "") + "]";
    return s;
}

// Every store key and the log, as both nodes answer them.
std::string state(ModelNode& node, long long now_ms) {
    std::string s;
    for (const std::string& key : {kKeys.counter, kKeys.fence_max, kKeys.fence_lease, kKeys.holder, kKeys.token, kKeys.token_lease}) {
        std::string error;
        const Value v = node.execute({"GET", key}, now_ms, &error);
        s += key + "=" + describe(v, error) + "\n";
    }
    std::string error;
    s += describe(node.execute({"LRANGE", kKeys.log, "0", "-1"}, now_ms, &error), error);
    return s;
}

TEST(ModelStoreScripts, NativeAndLuaAgreeOnEveryReplyLogLineAndKey) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 rng(seed);
        ModelNode native, lua;
        lua.set_native_scripts(false);
        long long now_ms = 1'800'000'000'000LL + static_cast<long long>(rng() % 1000);
        const char* checks[] = {"fence", "none", "token"};
        const std::string leases[] = {"c0.1", "c1.2", "c\"2\\.3", "c3.\t4"};
        for (int step = 0; step < 300; ++step) {
            const int client = static_cast<int>(rng() % 4);
            const std::string lease = leases[rng() % 4];
            const std::string fence = rng() % 4 == 0 ? "" : std::to_string(rng() % 20);
            const char* check = checks[rng() % 3];
            const std::string token = rng() % 5 == 0 ? "" : "t" + std::to_string(rng() % 3);
            Command cmd;
            switch (rng() % 40) {
                case 0: cmd = odd_key(rng); break;
                case 1: case 2: case 3: case 4: case 5: case 6: cmd = abandon(client, lease); break;
                case 7: case 8: case 9: case 10: case 11: case 12: case 13: case 14: case 15: case 16:
                    cmd = enter(client, lease, fence, check, token);
                    break;
                default: cmd = write(client, lease, fence, std::to_string(rng() % 50), check, token); break;
            }
            now_ms += static_cast<long long>(rng() % 3);
            std::string native_error, lua_error;
            const Value a = native.execute(cmd, now_ms, &native_error);
            const Value b = lua.execute(cmd, now_ms, &lua_error);
            ASSERT_EQ(describe(a, native_error), describe(b, lua_error)) << "seed " << seed << " step " << step;
            ASSERT_EQ(state(native, now_ms), state(lua, now_ms)) << "seed " << seed << " step " << step;
        }
        EXPECT_GT(native.native_runs(), 100u) << "seed " << seed << ": the native path hardly ran";
        EXPECT_EQ(lua.native_runs(), 0u);
    }
}

Command lock_step(std::mt19937_64& rng) {
    const std::string key = rng() % 8 == 0 ? "other" : "lock", token = "t" + std::to_string(rng() % 3);
    const std::string ttls[] = {"100", "5", "0", "-3", "x"};
    switch (rng() % 8) {
        case 0: return {"SET", key, token, "PX", std::to_string(1 + rng() % 20)};
        case 1: return {"DEL", key};
        case 2: return {"HINCRBY", key, "f", "1"};  // the wrong type for both scripts
        case 3: case 4: return {"EVAL", kCompareAndDelete, "1", key, token};
        default: return {"EVAL", kAcquireFenced, "2", key, key + ":fence", token, ttls[rng() % 5]};
    }
}

std::string lock_state(ModelNode& node, long long now_ms) {
    std::string s;
    for (const Command& c : {Command{"GET", "lock"}, Command{"PTTL", "lock"}, Command{"GET", "lock:fence"},
                             Command{"GET", "other"}, Command{"GET", "other:fence"}}) {
        std::string error;
        s += describe(node.execute(c, now_ms, &error), error) + "\n";
    }
    return s;
}

TEST(ModelLockScripts, NativeAndLuaAgreeOnEveryReplyAndKey) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 rng(seed);
        ModelNode native, lua;
        lua.set_native_scripts(false);
        long long now_ms = 1'800'000'000'000LL;
        for (int step = 0; step < 300; ++step) {
            const Command cmd = lock_step(rng);
            now_ms += static_cast<long long>(rng() % 4);
            std::string native_error, lua_error;
            const Value a = native.execute(cmd, now_ms, &native_error);
            const Value b = lua.execute(cmd, now_ms, &lua_error);
            ASSERT_EQ(describe(a, native_error), describe(b, lua_error)) << "seed " << seed << " step " << step;
            ASSERT_EQ(lock_state(native, now_ms), lock_state(lua, now_ms)) << "seed " << seed << " step " << step;
        }
        EXPECT_GT(native.native_runs(), 50u) << "seed " << seed;
    }
}

}  // namespace
}  // namespace lockbench::sim
