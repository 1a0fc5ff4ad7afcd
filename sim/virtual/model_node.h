// A modelled Redis node: the commands lockbench's algorithms and its store send, with the
// replies a real redis-server gives (tests/model_diff_test.cpp holds the model to that on
// generated command sequences against a live server whose clock is frozen and stepped in
// lockstep).
//
//   execute(command, node clock) ──► keyspace (strings, hashes, lists; expiry in ms)
//                 │ EVAL
//                 └──► Lua 5.1, as Redis embeds it: redis.call back into execute, Redis's
//                      conversion rules both ways, cjson.encode for the store's log
//
// Keys expire by the node's own wall clock, lazily on access, as Redis checks them (a key
// whose expiry equals the current millisecond is still there). Persistence: `none` loses
// everything in a crash; `always` (AOF, fsync always) keeps every acknowledged write.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lockimpl/env.h"

struct lua_State;

namespace lockbench::sim {

struct LuaVm;  // a Lua state with the scripts compiled in it (model_node.cpp)

class ModelNode {
public:
    ModelNode();
    ~ModelNode();
    ModelNode(const ModelNode&) = delete;
    ModelNode& operator=(const ModelNode&) = delete;

    // One command at the node's wall-clock time `now_ms`. On a Redis error reply ("ERR ...",
    // "WRONGTYPE ...") `*error` gets its text and the Value is nil (Reply::redis_error).
    Value execute(const Command& cmd, long long now_ms, std::string* error);

    // The store's scripts (sim/engine/store.h) and two of the locks' (lockimpl/lock.h:
    // compare-and-delete, the fenced acquire) run in C++ rather than Lua, with the same
    // replies, keys and log lines (model_store_scripts.cpp, model_lock_scripts.cpp;
    // tests/model_store_scripts_test.cpp holds the two paths to that). On by default; off,
    // every script runs in Lua.
    void set_native_scripts(bool on) { native_scripts_ = on; }
    std::size_t native_runs() const { return native_runs_; }  // how many ran natively

    // A crash and restart: with persistence, the data survives; without, it is gone.
    void restart(bool keep_data);
    std::size_t keys() const { return data_.size(); }

    struct Entry {
        enum class Type { string, hash, list } type = Type::string;
        std::string str;
        std::map<std::string, std::string> hash;
        std::deque<std::string> list;
        std::optional<long long> expire_at_ms;  // absolute, as Redis replicates it (PXAT)
    };
    // Replication: the keys the commands since the last call changed, each with its new
    // value (none: deleted), in the order they changed; and applying them on a replica.
    using Change = std::pair<std::string, std::optional<Entry>>;
    void track_changes() { tracking_ = true; }  // a master with a replica
    std::vector<Change> take_changes();
    void apply(const std::vector<Change>& changes);

private:
    Entry* lookup(const std::string& key);
    void touch(const std::string& key) {
        if (tracking_) dirty_.push_back(key);
    }
    Value run(const Command& cmd);
    Entry* string_entry(const std::string& key);  // WRONGTYPE if it holds another type
    // One member a command (run() dispatches by name).
    Value cmd_ping(const Command& cmd);
    Value cmd_get(const Command& cmd);
    Value cmd_set(const Command& cmd);
    Value cmd_setnx(const Command& cmd);
    Value cmd_getset(const Command& cmd);
    Value cmd_del_or_exists(const Command& cmd);
    Value cmd_expire(const Command& cmd);
    Value cmd_ttl(const Command& cmd);
    Value cmd_incr(const Command& cmd);
    Value cmd_hash(const Command& cmd);
    Value cmd_list(const Command& cmd);
    Value cmd_time(const Command& cmd);
    Value cmd_flushall(const Command& cmd);
    Value eval(const Command& cmd);
    // The store's script `cmd` runs, natively, if it is one and its keys and arguments are
    // as the store leaves them (plain integers, no expiry); else nothing happens.
    std::optional<Value> native_store_script(const Command& cmd);
    std::optional<Value> native_lock_script(const Command& cmd);
    std::optional<Value> store_enter(const Command& cmd);
    std::optional<Value> store_write_and_exit(const Command& cmd);
    Value store_abandon(const Command& cmd);
    const Entry* plain(const std::string& key, Entry::Type type, bool* ok) const;
    void set_plain(const std::string& key, std::string value);
    long long rpush_log(const std::string& key, std::string line);
    friend bool redis_call(lua_State* L, ModelNode* node, char* err, std::size_t err_size);

    std::unordered_map<std::string, Entry> data_;
    std::vector<std::string> dirty_;
    bool tracking_ = false;
    long long now_ms_ = 0;
    std::unique_ptr<LuaVm> vm_;  // from the thread's pool, and back to it
    Command scratch_;            // redis.call's command, its strings' buffers kept between calls
    bool scratch_busy_ = false;
    bool native_scripts_ = true;
    std::size_t native_runs_ = 0;
};

// A Redis error reply, as execute() returns it.
struct RedisError {
    std::string message;  // "ERR ...", "WRONGTYPE ..."
};

}  // namespace lockbench::sim
