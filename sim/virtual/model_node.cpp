#include "sim/virtual/model_node.h"

#include "sim/engine/recorder.h"

#include <lua.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

namespace lockbench::sim {
namespace {

Value integer(long long v) {
    Value x;
    x.type = Value::Type::integer;
    x.integer = v;
    return x;
}
Value bulk(std::string s) {
    Value x;
    x.type = Value::Type::string;
    x.str = std::move(s);
    return x;
}
Value status(std::string s) {
    Value x;
    x.type = Value::Type::status;
    x.str = std::move(s);
    return x;
}
Value nil() { return Value{}; }

[[noreturn]] void fail(std::string message) { throw RedisError{std::move(message)}; }

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

long long to_integer(const std::string& s, const char* what = "value is not an integer or out of range") {
    long long v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(std::string("ERR ") + what);
    return v;
}

void arity(const Command& cmd, std::size_t min, std::size_t max = SIZE_MAX) {
    if (cmd.args.size() < min || cmd.args.size() > max)
        fail("ERR wrong number of arguments for '" + lower(cmd.args[0]) + "' command");
}

const char* const kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";

// ---- Lua: Redis's conversion rules ----

ModelNode* node_of(lua_State* L) {
    lua_getfield(L, LUA_REGISTRYINDEX, "lockbench_node");
    auto* n = static_cast<ModelNode*>(lua_touserdata(L, -1));
    lua_pop(L, 1);
    return n;
}

// Redis reply → Lua value, as scripting.c does.
void push_reply(lua_State* L, const Value& v) {
    switch (v.type) {
        case Value::Type::nil: lua_pushboolean(L, 0); break;
        case Value::Type::integer: lua_pushnumber(L, static_cast<lua_Number>(v.integer)); break;
        case Value::Type::string: lua_pushlstring(L, v.str.data(), v.str.size()); break;
        case Value::Type::status:
            lua_newtable(L);
            lua_pushlstring(L, v.str.data(), v.str.size());
            lua_setfield(L, -2, "ok");
            break;
        case Value::Type::array:
            lua_newtable(L);
            for (std::size_t i = 0; i < v.elements.size(); ++i) {
                push_reply(L, v.elements[i]);
                lua_rawseti(L, -2, static_cast<int>(i + 1));
            }
            break;
    }
}

// Lua value at the top → Redis reply, as scripting.c does. An {err=...} table is an error.
Value pop_reply(lua_State* L) {
    Value out;
    switch (lua_type(L, -1)) {
        case LUA_TSTRING: {
            std::size_t n = 0;
            const char* s = lua_tolstring(L, -1, &n);
            out = bulk(std::string(s, n));
            break;
        }
        case LUA_TBOOLEAN: out = lua_toboolean(L, -1) ? integer(1) : nil(); break;
        case LUA_TNUMBER: out = integer(static_cast<long long>(lua_tonumber(L, -1))); break;
        case LUA_TTABLE: {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) {
                const std::string e = lua_tostring(L, -1);
                lua_pop(L, 2);
                fail(e);
            }
            lua_pop(L, 1);
            lua_getfield(L, -1, "ok");
            if (lua_isstring(L, -1)) {
                out = status(lua_tostring(L, -1));
                lua_pop(L, 1);
                break;
            }
            lua_pop(L, 1);
            out.type = Value::Type::array;
            for (int i = 1;; ++i) {
                lua_rawgeti(L, -1, i);
                if (lua_isnil(L, -1)) {
                    lua_pop(L, 1);
                    break;
                }
                out.elements.push_back(pop_reply(L));
            }
            break;
        }
        default: out = nil(); break;
    }
    lua_pop(L, 1);
    return out;
}

// A number as cjson prints it (%.14g): a whole number below 1e14 is its digits, which
// to_chars writes without printf's cost.
void append_number(std::string& out, double d) {
    char buf[32];
    if (d == std::floor(d) && std::fabs(d) < 1e14 && !(d == 0 && std::signbit(d))) {
        out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<long long>(d)).ptr);
        return;
    }
    std::snprintf(buf, sizeof buf, "%.14g", d);
    out += buf;
}

// cjson.encode for the flat tables the store's scripts log: numbers as cjson prints them
// (%.14g), keys sorted so that a log line is the same in every run.
// The C++ half: false if the table is not flat (then nothing is pushed).
// Written into one buffer (the store logs a line per record: no string per field).
bool encode_flat(lua_State* L) {
    struct Field {
        std::size_t key_at, key_len, value_at, value_len;
    };
    std::string text;  // every key, then its value, one after the other
    text.reserve(256);
    std::vector<Field> fields;
    fields.reserve(16);
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
        const std::size_t key_at = text.size();
        if (lua_type(L, -2) == LUA_TNUMBER) text += std::to_string(static_cast<long long>(lua_tonumber(L, -2)));
        else text += lua_tostring(L, -2);
        const std::size_t value_at = text.size();
        switch (lua_type(L, -1)) {
            case LUA_TNUMBER: append_number(text, lua_tonumber(L, -1)); break;
            case LUA_TBOOLEAN: text += lua_toboolean(L, -1) ? "true" : "false"; break;
            case LUA_TSTRING: append_json_escaped(text, lua_tostring(L, -1)); break;
            default: lua_pop(L, 2); return false;
        }
        fields.push_back({key_at, value_at - key_at, value_at, text.size() - value_at});
        lua_pop(L, 1);
    }
    const auto key = [&](const Field& f) { return std::string_view(text).substr(f.key_at, f.key_len); };
    const auto value = [&](const Field& f) { return std::string_view(text).substr(f.value_at, f.value_len); };
    std::ranges::sort(fields, [&](const Field& a, const Field& b) {
        return key(a) != key(b) ? key(a) < key(b) : value(a) < value(b);
    });
    std::string out = "{";
    out.reserve(text.size() + 8 * fields.size() + 2);
    for (const Field& f : fields) {
        if (out.size() > 1) out += ',';
        append_json_escaped(out, key(f));
        out += ':';
        out += value(f);
    }
    out += '}';
    lua_pushlstring(L, out.data(), out.size());
    return true;
}

int cjson_encode(lua_State* L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    if (encode_flat(L)) return 1;
    return luaL_error(L, "cjson.encode: the model encodes flat tables only");
}

}  // namespace

// The C++ half of redis.call: builds the command, runs it, pushes the reply. Returns false
// with the error in `err` instead of raising it: Lua 5.1 (built as C) raises errors with
// longjmp, which must not cross a C++ frame that owns anything.
bool redis_call(lua_State* L, ModelNode* node, char* err, std::size_t err_size) {
    const int n = lua_gettop(L);
    if (n == 0) {
        std::snprintf(err, err_size, "Please specify at least one argument for redis.call()");
        return false;
    }
    // The node's scratch command, unless a call is under way (a script's EVAL): its strings
    // keep their buffers from call to call.
    Command local;
    Command& cmd = node->scratch_busy_ ? local : node->scratch_;
    cmd.args.resize(static_cast<std::size_t>(n));
    for (int i = 1; i <= n; ++i) {
        if (!lua_isstring(L, i)) {
            std::snprintf(err, err_size, "Lua redis() command arguments must be strings or integers");
            return false;
        }
        std::size_t len = 0;
        const char* s = lua_tolstring(L, i, &len);
        cmd.args[static_cast<std::size_t>(i - 1)].assign(s, len);
    }
    struct Busy {
        bool& flag;
        bool was;
        ~Busy() { flag = was; }
    } busy{node->scratch_busy_, std::exchange(node->scratch_busy_, true)};
    try {
        const Value v = node->run(cmd);
        push_reply(L, v);
        return true;
    } catch (const RedisError& e) {
        std::snprintf(err, err_size, "%s", e.message.c_str());
        return false;
    }
}

// redis.call(...) from a script: the same execute, in the same instant. A command's error
// fails the script with that error ("WRONGTYPE ..."), as in Redis 7, raised as an
// {err = ...} table so that no Lua position is prefixed.
int model_redis_call(lua_State* L) {
    char err[512];  // no destructor: safe under longjmp
    if (redis_call(L, node_of(L), err, sizeof err)) return 1;
    lua_newtable(L);
    lua_pushstring(L, err);
    lua_setfield(L, -2, "err");
    return lua_error(L);
}

struct LuaVm {
    lua_State* L = nullptr;
    std::vector<std::pair<std::string, int>> scripts;  // script text → its compiled function
    LuaVm() : L(luaL_newstate()) {
        luaL_openlibs(L);
        lua_newtable(L);
        lua_pushcfunction(L, model_redis_call);
        lua_setfield(L, -2, "call");
        lua_setglobal(L, "redis");
        lua_newtable(L);
        lua_pushcfunction(L, cjson_encode);
        lua_setfield(L, -2, "encode");
        lua_setglobal(L, "cjson");
    }
    ~LuaVm() { lua_close(L); }
    LuaVm(const LuaVm&) = delete;
    LuaVm& operator=(const LuaVm&) = delete;
};

namespace {

// Lua states outlive the nodes that used them: opening one (luaL_openlibs) and compiling the
// scripts cost a good part of a short simulated run. One pool per thread, so that no state is
// ever used by two threads; a script leaves nothing behind but its compiled self (Redis's
// scripts set no globals; KEYS and ARGV are set anew by every EVAL).
constexpr std::size_t kPooledVms = 16;
thread_local std::vector<std::unique_ptr<LuaVm>> pooled_vms;

std::unique_ptr<LuaVm> take_vm() {
    if (pooled_vms.empty()) return std::make_unique<LuaVm>();
    std::unique_ptr<LuaVm> vm = std::move(pooled_vms.back());
    pooled_vms.pop_back();
    return vm;
}

}  // namespace

ModelNode::ModelNode() : vm_(take_vm()) {
    lua_pushlightuserdata(vm_->L, this);
    lua_setfield(vm_->L, LUA_REGISTRYINDEX, "lockbench_node");
}

ModelNode::~ModelNode() {
    lua_settop(vm_->L, 0);
    if (pooled_vms.size() < kPooledVms) pooled_vms.push_back(std::move(vm_));
}

void ModelNode::restart(bool keep_data) {
    if (!keep_data) data_.clear();
    dirty_.clear();
}

std::vector<ModelNode::Change> ModelNode::take_changes() {
    std::vector<Change> out;
    for (const std::string& k : dirty_) {
        const auto it = data_.find(k);
        out.emplace_back(k, it == data_.end() ? std::nullopt : std::optional<Entry>(it->second));
    }
    dirty_.clear();
    return out;
}

void ModelNode::apply(const std::vector<Change>& changes) {
    for (const auto& [k, e] : changes) {
        if (e) data_[k] = *e;
        else data_.erase(k);
    }
}

ModelNode::Entry* ModelNode::lookup(const std::string& key) {
    const auto it = data_.find(key);
    if (it == data_.end()) return nullptr;
    if (it->second.expire_at_ms && now_ms_ > *it->second.expire_at_ms) {  // Redis: now > when
        touch(key);  // the master propagates the expiry as a DEL
        data_.erase(it);
        return nullptr;
    }
    return &it->second;
}

Value ModelNode::execute(const Command& cmd, long long now_ms, std::string* error) {
    now_ms_ = now_ms;
    try {
        if (cmd.args.empty()) fail("ERR empty command");
        return run(cmd);
    } catch (const RedisError& e) {
        if (error) *error = e.message;
        return nil();
    }
}

// The commands the model knows, as Redis names them (lower case).
Value ModelNode::run(const Command& cmd) {
    using Handler = Value (ModelNode::*)(const Command&);
    static const std::unordered_map<std::string, Handler> commands = {
        {"ping", &ModelNode::cmd_ping},
        {"get", &ModelNode::cmd_get},
        {"set", &ModelNode::cmd_set},
        {"setnx", &ModelNode::cmd_setnx},
        {"getset", &ModelNode::cmd_getset},
        {"del", &ModelNode::cmd_del_or_exists},
        {"exists", &ModelNode::cmd_del_or_exists},
        {"expire", &ModelNode::cmd_expire},
        {"pexpire", &ModelNode::cmd_expire},
        {"pttl", &ModelNode::cmd_ttl},
        {"ttl", &ModelNode::cmd_ttl},
        {"incr", &ModelNode::cmd_incr},
        {"hincrby", &ModelNode::cmd_hash},
        {"hexists", &ModelNode::cmd_hash},
        {"hget", &ModelNode::cmd_hash},
        {"rpush", &ModelNode::cmd_list},
        {"llen", &ModelNode::cmd_list},
        {"lrange", &ModelNode::cmd_list},
        {"time", &ModelNode::cmd_time},
        {"flushall", &ModelNode::cmd_flushall},
        {"eval", &ModelNode::eval},
    };
    const auto it = commands.find(lower(cmd.args[0]));
    if (it == commands.end()) fail("ERR unknown command '" + cmd.args[0] + "'");
    return (this->*it->second)(cmd);
}

ModelNode::Entry* ModelNode::string_entry(const std::string& key) {
    Entry* e = lookup(key);
    if (e && e->type != Entry::Type::string) fail(kWrongType);
    return e;
}

Value ModelNode::cmd_ping(const Command&) { return status("PONG"); }

Value ModelNode::cmd_get(const Command& cmd) {
    const auto& a = cmd.args;
    arity(cmd, 2, 2);
    const Entry* e = string_entry(a[1]);
    return e ? bulk(e->str) : nil();
}

Value ModelNode::cmd_set(const Command& cmd) {
    const auto& a = cmd.args;
    arity(cmd, 3);
    bool nx = false, xx = false;
    std::optional<long long> ttl_ms;
    for (std::size_t i = 3; i < a.size(); ++i) {
        const std::string opt = lower(a[i]);
        if (opt == "nx" && !xx) nx = true;
        else if (opt == "xx" && !nx) xx = true;
        else if ((opt == "px" || opt == "ex") && !ttl_ms && i + 1 < a.size()) {
            const long long v = to_integer(a[++i]);
            if (v <= 0) fail("ERR invalid expire time in 'set' command");
            ttl_ms = opt == "px" ? v : v * 1000;
        } else fail("ERR syntax error");
    }
    const bool exists = lookup(a[1]) != nullptr;
    if ((nx && exists) || (xx && !exists)) return nil();
    Entry e;
    e.str = a[2];
    if (ttl_ms) e.expire_at_ms = now_ms_ + *ttl_ms;
    data_[a[1]] = std::move(e);
    touch(a[1]);
    return status("OK");
}

Value ModelNode::cmd_setnx(const Command& cmd) {
    const auto& a = cmd.args;
    arity(cmd, 3, 3);
    if (lookup(a[1])) return integer(0);
    data_[a[1]] = Entry{Entry::Type::string, a[2], {}, {}, std::nullopt};
    touch(a[1]);
    return integer(1);
}

Value ModelNode::cmd_getset(const Command& cmd) {
    const auto& a = cmd.args;
    arity(cmd, 3, 3);
    const Entry* e = string_entry(a[1]);
    Value old = e ? bulk(e->str) : nil();
    data_[a[1]] = Entry{Entry::Type::string, a[2], {}, {}, std::nullopt};
    touch(a[1]);
    return old;
}

Value ModelNode::cmd_del_or_exists(const Command& cmd) {
    const auto& a = cmd.args;
    const std::string name = lower(cmd.args[0]);
    arity(cmd, 2);
    long long n = 0;
    for (std::size_t i = 1; i < a.size(); ++i) {
        if (!lookup(a[i])) continue;
        ++n;
        if (name == "del") {
            data_.erase(a[i]);
            touch(a[i]);
        }
    }
    return integer(n);
}

Value ModelNode::cmd_expire(const Command& cmd) {
    const auto& a = cmd.args;
    const std::string name = lower(cmd.args[0]);
    arity(cmd, 3, 3);
    const long long v = to_integer(a[2]);
    Entry* e = lookup(a[1]);
    if (!e) return integer(0);
    const long long when = now_ms_ + (name == "expire" ? v * 1000 : v);
    if (when <= now_ms_) data_.erase(a[1]);  // already expired: deleted at once
    else e->expire_at_ms = when;
    touch(a[1]);
    return integer(1);
}

Value ModelNode::cmd_ttl(const Command& cmd) {
    const auto& a = cmd.args;
    const std::string name = lower(cmd.args[0]);
    arity(cmd, 2, 2);
    const Entry* e = lookup(a[1]);
    if (!e) return integer(-2);
    if (!e->expire_at_ms) return integer(-1);
    const long long left = std::max(0LL, *e->expire_at_ms - now_ms_);
    return integer(name == "pttl" ? left : (left + 500) / 1000);
}

Value ModelNode::cmd_incr(const Command& cmd) {
    const auto& a = cmd.args;
    arity(cmd, 2, 2);
    Entry* e = string_entry(a[1]);
    long long v = 0;
    if (__builtin_add_overflow(e ? to_integer(e->str) : 0LL, 1LL, &v)) fail("ERR increment or decrement would overflow");
    if (!e) e = &(data_[a[1]] = Entry{});
    e->str = std::to_string(v);
    touch(a[1]);
    return integer(v);
}

Value ModelNode::cmd_hash(const Command& cmd) {
    const auto& a = cmd.args;
    const std::string name = lower(cmd.args[0]);
    arity(cmd, name == "hincrby" ? 4 : 3, name == "hincrby" ? 4 : 3);
    Entry* e = lookup(a[1]);
    if (e && e->type != Entry::Type::hash) fail(kWrongType);
    if (name == "hexists") return integer(e && e->hash.contains(a[2]) ? 1 : 0);
    if (name == "hget") return e && e->hash.contains(a[2]) ? bulk(e->hash.at(a[2])) : nil();
    const long long by = to_integer(a[3]);
    long long v = 0;
    if (e && e->hash.contains(a[2])) v = to_integer(e->hash.at(a[2]), "hash value is not an integer");
    long long sum = 0;
    if (__builtin_add_overflow(v, by, &sum)) fail("ERR increment or decrement would overflow");
    if (!e) {
        e = &(data_[a[1]] = Entry{});
        e->type = Entry::Type::hash;
    }
    e->hash[a[2]] = std::to_string(sum);
    touch(a[1]);
    return integer(sum);
}

Value ModelNode::cmd_list(const Command& cmd) {
    const auto& a = cmd.args;
    const std::string name = lower(cmd.args[0]);
    arity(cmd, name == "llen" ? 2 : name == "lrange" ? 4 : 3, name == "llen" ? 2 : name == "lrange" ? 4 : SIZE_MAX);
    Entry* e = lookup(a[1]);
    if (e && e->type != Entry::Type::list) fail(kWrongType);
    if (name == "llen") return integer(e ? static_cast<long long>(e->list.size()) : 0);
    if (name == "lrange") {
        Value out;
        out.type = Value::Type::array;
        if (!e) return out;
        const long long n = static_cast<long long>(e->list.size());
        long long from = to_integer(a[2]), to = to_integer(a[3]);
        if (from < 0) from = std::max(0LL, n + from);
        if (to < 0) to = n + to;
        to = std::min(to, n - 1);
        for (long long i = from; i <= to; ++i) out.elements.push_back(bulk(e->list[static_cast<std::size_t>(i)]));
        return out;
    }
    if (!e) {
        e = &(data_[a[1]] = Entry{});
        e->type = Entry::Type::list;
    }
    for (std::size_t i = 2; i < a.size(); ++i) e->list.push_back(a[i]);
    touch(a[1]);
    return integer(static_cast<long long>(e->list.size()));
}

Value ModelNode::cmd_time(const Command&) {
    Value out;
    out.type = Value::Type::array;
    out.elements = {bulk(std::to_string(now_ms_ / 1000)), bulk(std::to_string((now_ms_ % 1000) * 1000))};
    return out;
}

Value ModelNode::cmd_flushall(const Command&) {
    for (const auto& [k, v] : data_) touch(k);
    data_.clear();
    return status("OK");
}

Value ModelNode::eval(const Command& cmd) {
    arity(cmd, 3);
    lua_State* L = vm_->L;
    const std::string& body = cmd.args[1];
    const long long numkeys = to_integer(cmd.args[2]);
    if (numkeys < 0 || static_cast<std::size_t>(numkeys) > cmd.args.size() - 3)
        fail("ERR Number of keys can't be greater than number of args");
    if (native_scripts_) {
        std::optional<Value> v = native_lock_script(cmd);
        if (!v) v = native_store_script(cmd);
        if (v) {
            ++native_runs_;
            return std::move(*v);
        }
    }
    // A few scripts a run: comparing the texts beats hashing them.
    auto it = std::ranges::find(vm_->scripts, body, &std::pair<std::string, int>::first);
    if (it == vm_->scripts.end()) {
        if (luaL_loadbuffer(L, body.data(), body.size(), "@user_script") != 0) {
            const std::string e = lua_tostring(L, -1);
            lua_pop(L, 1);
            fail("ERR Error compiling script (new function): " + e);
        }
        vm_->scripts.emplace_back(body, luaL_ref(L, LUA_REGISTRYINDEX));
        it = vm_->scripts.end() - 1;
    }
    const auto set_table = [&](const char* name, std::size_t from, std::size_t count) {
        lua_createtable(L, static_cast<int>(count), 0);
        for (std::size_t i = 0; i < count; ++i) {
            const std::string& s = cmd.args[from + i];
            lua_pushlstring(L, s.data(), s.size());
            lua_rawseti(L, -2, static_cast<int>(i + 1));
        }
        lua_setglobal(L, name);
    };
    const std::size_t k = static_cast<std::size_t>(numkeys);
    set_table("KEYS", 3, k);
    set_table("ARGV", 3 + k, cmd.args.size() - 3 - k);
    lua_rawgeti(L, LUA_REGISTRYINDEX, it->second);
    if (lua_pcall(L, 0, 1, 0) != 0) {
        std::string e = "?";
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            if (lua_isstring(L, -1)) e = lua_tostring(L, -1);
            lua_pop(L, 2);
            fail(e);  // a command's error, as it was
        }
        if (lua_isstring(L, -1)) e = lua_tostring(L, -1);
        lua_pop(L, 1);
        fail("ERR Error running script: " + e);
    }
    return pop_reply(L);
}

}  // namespace lockbench::sim
