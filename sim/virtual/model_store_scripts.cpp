// The protected store's three scripts (sim/engine/store.h), run by the model in C++ rather
// than in Lua: a simulated run spends most of its time in them otherwise (a dozen KEYS and
// ARGV pushed, eight redis.calls and a cjson.encode per section). Each function below is its
// script line for line, in the same order of commands, so that the keys, the log lines (as
// encode_flat writes them: keys sorted, numbers as %.14g) and the reply are the Lua path's.
//
// It runs only on the inputs the store gives: numbers that are plain whole numbers (below
// 1e13, written as Lua would print them back), keys of the right type with no expiry, seven
// (six, one) distinct keys. Anything else returns nothing before changing anything, and the
// script runs in Lua. tests/model_store_scripts_test.cpp runs both paths side by side.
#include <charconv>
#include <string_view>

#include "sim/engine/recorder.h"
#include "sim/engine/store.h"
#include "sim/virtual/model_node.h"

namespace lockbench::sim {
namespace {

// tonumber(s), when s is exactly how Lua prints that number (so that writing it back, or
// into the log, gives the same text).
std::optional<long long> whole(std::string_view s) {
    long long v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    if (v >= 10'000'000'000'000LL || v <= -10'000'000'000'000LL) return std::nullopt;
    char buf[24];
    const char* end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    if (std::string_view(buf, static_cast<std::size_t>(end - buf)) != s) return std::nullopt;  // "007", "+1", "-0"
    return v;
}

// One log record as cjson.encode writes a flat table: fields added in sorted key order.
class LogLine {
public:
    LogLine& num(const char* key, long long v) {
        start(key);
        text_ += std::to_string(v);
        return *this;
    }
    LogLine& str(const char* key, std::string_view v) {
        start(key);
        append_json_escaped(text_, v);
        return *this;
    }
    LogLine& yes(const char* key) {
        start(key);
        text_ += "true";
        return *this;
    }
    std::string done() { return std::move(text_) + "}"; }

private:
    void start(const char* key) {
        text_ += text_.size() > 1 ? ",\"" : "\"";
        text_ += key;
        text_ += "\":";
    }
    std::string text_ = "{";
};

Value integer(long long v) {
    Value out;
    out.type = Value::Type::integer;
    out.integer = v;
    return out;
}

bool distinct(const std::vector<std::string>& args, std::size_t from, std::size_t count) {
    for (std::size_t i = from; i < from + count; ++i)
        for (std::size_t j = i + 1; j < from + count; ++j)
            if (args[i] == args[j]) return false;
    return true;
}

}  // namespace

// A key's entry when it is absent (nullptr) or of `type` with no expiry; else *ok = false.
const ModelNode::Entry* ModelNode::plain(const std::string& key, Entry::Type type, bool* ok) const {
    const auto it = data_.find(key);
    if (it == data_.end()) return nullptr;
    if (it->second.type != type || it->second.expire_at_ms) *ok = false;
    return &it->second;
}

// SET key value, as cmd_set does it with no options.
void ModelNode::set_plain(const std::string& key, std::string value) {
    Entry e;
    e.str = std::move(value);
    data_[key] = std::move(e);
    touch(key);
}

long long ModelNode::rpush_log(const std::string& key, std::string line) {
    Entry& e = data_[key];
    e.type = Entry::Type::list;
    e.list.push_back(std::move(line));
    touch(key);
    return static_cast<long long>(e.list.size());
}

std::optional<Value> ModelNode::native_store_script(const Command& cmd) {
    static const std::string_view enter = store_script(StoreScript::enter),
                                  write = store_script(StoreScript::write_and_exit),
                                  abandon = store_script(StoreScript::abandon);
    const std::string_view body = cmd.args[1];
    if (body == enter) return store_enter(cmd);
    if (body == write) return store_write_and_exit(cmd);
    if (body == abandon && cmd.args.size() == 6 && cmd.args[2] == "1" && whole(cmd.args[4]) &&
        cmd.args[5].find('\0') == std::string::npos) {
        bool ok = true;
        plain(cmd.args[3], Entry::Type::list, &ok);
        if (ok) return store_abandon(cmd);
    }
    return std::nullopt;
}

std::optional<Value> ModelNode::store_enter(const Command& cmd) {
    const auto& a = cmd.args;
    if (a.size() != 15 || a[2] != "7" || !distinct(a, 3, 7)) return std::nullopt;
    const auto key = [&](int i) -> const std::string& { return a[static_cast<std::size_t>(2 + i)]; };
    const auto arg = [&](int i) -> const std::string& { return a[static_cast<std::size_t>(9 + i)]; };
    bool ok = true;
    const Entry* counter = plain(key(1), Entry::Type::string, &ok);
    plain(key(2), Entry::Type::list, &ok);
    for (int k = 3; k <= 7; ++k) plain(key(k), Entry::Type::string, &ok);
    const std::optional<long long> read = counter ? whole(counter->str) : 0, client = whole(arg(1));
    const bool fenced = !arg(3).empty(), by_fence = fenced && arg(4) == "fence";
    const std::optional<long long> fence = fenced ? whole(arg(3)) : std::nullopt;
    const long long f = fence.value_or(0);  // read only when fenced
    const Entry* max = plain(key(3), Entry::Type::string, &ok);
    if (!ok || !read || !client || (fenced && !fence) || (by_fence && max && !whole(max->str)) ||
        arg(2).find('\0') != std::string::npos)
        return std::nullopt;
    // The script, from here on.
    set_plain(key(7), arg(1));
    if (by_fence && (!max || f > *whole(max->str))) {
        set_plain(key(3), std::to_string(f));
        set_plain(key(4), arg(2));
    }
    if (arg(4) == "token") {
        set_plain(key(5), arg(5));
        set_plain(key(6), arg(2));
    }
    const Entry* log = plain(key(2), Entry::Type::list, &ok);
    const long long seq = (log ? static_cast<long long>(log->list.size()) : 0) + 1;
    LogLine e;
    e.num("client", *client);
    if (fenced) e.num("fence", f);
    e.str("kind", "enter").str("lease", arg(2)).num("read", *read).num("seq", seq);
    e.num("t_s", now_ms_ / 1000).num("t_usec", (now_ms_ % 1000) * 1000);
    rpush_log(key(2), e.done());
    return integer(*read);
}

std::optional<Value> ModelNode::store_write_and_exit(const Command& cmd) {
    const auto& a = cmd.args;
    if (a.size() != 15 || a[2] != "6" || !distinct(a, 3, 6)) return std::nullopt;
    const auto key = [&](int i) -> const std::string& { return a[static_cast<std::size_t>(2 + i)]; };
    const auto arg = [&](int i) -> const std::string& { return a[static_cast<std::size_t>(8 + i)]; };
    bool ok = true;
    const Entry* counter = plain(key(1), Entry::Type::string, &ok);
    plain(key(2), Entry::Type::list, &ok);
    const Entry* max = plain(key(3), Entry::Type::string, &ok);
    const Entry* max_lease = plain(key(4), Entry::Type::string, &ok);
    const Entry* token = plain(key(5), Entry::Type::string, &ok);
    const Entry* token_lease = plain(key(6), Entry::Type::string, &ok);
    const std::optional<long long> prev = counter ? whole(counter->str) : 0, read = whole(arg(4)), client = whole(arg(1));
    const bool fenced = !arg(3).empty(), by_fence = fenced && arg(5) == "fence";
    const std::optional<long long> fence = fenced ? whole(arg(3)) : std::nullopt;
    const long long f = fence.value_or(0);  // read only when fenced
    if (!ok || !prev || !read || !client || (fenced && !fence) || (by_fence && max && !whole(max->str)) ||
        arg(2).find('\0') != std::string::npos || (token_lease && token_lease->str.find('\0') != std::string::npos))
        return std::nullopt;
    // The script, from here on.
    const char* kind = "write";
    std::optional<long long> max_fence;
    std::optional<std::string> registered;
    if (by_fence) {
        const std::optional<long long> m = max ? whole(max->str) : std::nullopt;
        if (m && (f < *m || (f == *m && (!max_lease || max_lease->str != arg(2))))) {
            kind = "reject";
            max_fence = m;
        } else {
            set_plain(key(3), std::to_string(f));
            set_plain(key(4), arg(2));
        }
    }
    if (arg(5) == "token" && (!token || token->str != arg(6))) {
        kind = "reject";
        registered = token_lease ? token_lease->str : "";
    }
    const bool accepted = std::string_view(kind) == "write";
    if (accepted) set_plain(key(1), std::to_string(*read + 1));
    const Entry* log = plain(key(2), Entry::Type::list, &ok);
    const long long seq = (log ? static_cast<long long>(log->list.size()) : 0) + 1;
    const long long t_s = now_ms_ / 1000, t_usec = (now_ms_ % 1000) * 1000;
    LogLine e, x;
    e.num("client", *client);
    x.num("client", *client);
    if (fenced) e.num("fence", f), x.num("fence", f);
    e.str("kind", kind).str("lease", arg(2));
    x.str("kind", "exit").str("lease", arg(2));
    if (max_fence) e.num("max_fence", *max_fence);
    e.num("prev", *prev).num("read", *read);
    if (registered) e.str("registered", *registered);
    e.num("seq", seq).num("t_s", t_s).num("t_usec", t_usec);
    x.num("seq", seq + 1).num("t_s", t_s).num("t_usec", t_usec);
    rpush_log(key(2), e.done());
    rpush_log(key(2), x.done());
    return integer(accepted ? 1 : 0);
}

Value ModelNode::store_abandon(const Command& cmd) {
    bool ok = true;
    const Entry* log = plain(cmd.args[3], Entry::Type::list, &ok);
    const long long seq = (log ? static_cast<long long>(log->list.size()) : 0) + 1;
    LogLine x;
    x.yes("abandoned").num("client", *whole(cmd.args[4])).str("kind", "exit").str("lease", cmd.args[5]);
    x.num("seq", seq).num("t_s", now_ms_ / 1000).num("t_usec", (now_ms_ % 1000) * 1000);
    rpush_log(cmd.args[3], x.done());
    return integer(1);
}

}  // namespace lockbench::sim
