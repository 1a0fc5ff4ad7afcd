// Two of the locks' scripts (lockimpl/lock.h), run by the model as the commands they call,
// through the same command code that redis.call reaches: compare-and-delete (every
// single-node lock's release, and Redlock's) and token-lua's fenced acquire. Each is its
// script line for line, with Lua's conversions of the replies made by hand: a nil reply is
// false, a status reply is true, an integer comes back an integer, `return false` is nil.
// A command's error ends the script with that error, as redis.call's does. Only the exact
// texts run here (any other script, or these with other arity, runs in Lua), so an edit of
// a script in lockimpl/ sends it back to Lua rather than to a stale copy.
#include <string_view>

#include "lockimpl/lock.h"
#include "sim/virtual/model_node.h"

namespace lockbench::sim {

std::optional<Value> ModelNode::native_lock_script(const Command& cmd) {
    static const std::string_view compare_and_delete = kCompareAndDelete, acquire_fenced = kAcquireFenced;
    const std::string_view body = cmd.args[1];
    const auto& a = cmd.args;
    if (body == compare_and_delete && a.size() == 5 && a[2] == "1") {
        // if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0
        const Value token = run({"get", a[3]});
        if (token.type == Value::Type::string && token.str == a[4]) return run({"del", a[3]});
        Value zero;
        zero.type = Value::Type::integer;
        return zero;
    }
    if (body == acquire_fenced && a.size() == 7 && a[2] == "2") {
        // if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return false
        const Value set = run({"set", a[3], a[5], "NX", "PX", a[6]});
        if (set.is_nil()) return Value{};
        return run({"incr", a[4]});
    }
    return std::nullopt;
}

}  // namespace lockbench::sim
