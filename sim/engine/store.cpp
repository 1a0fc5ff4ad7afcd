#include "sim/engine/store.h"

namespace lockbench {
namespace {

// KEYS: counter, log, fence_max, fence_lease. ARGV: client, lease, fence ("" if none).
// TIME is split into seconds and microseconds: cjson prints numbers with 14 digits.
const char* const kEnter = R"lua(
local read = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', 'lockbench:holder', ARGV[1])  -- StoreKeys::holder: the client that entered last
local t = redis.call('time')
local e = {kind = 'enter', client = tonumber(ARGV[1]), lease = ARGV[2], read = read,
           t_s = tonumber(t[1]), t_usec = tonumber(t[2])}
if ARGV[3] ~= '' then
  local f = tonumber(ARGV[3])
  e.fence = f
  local max = redis.call('get', KEYS[3])
  if not max or f > tonumber(max) then
    redis.call('set', KEYS[3], f)
    redis.call('set', KEYS[4], ARGV[2])
  end
end
e.seq = redis.call('llen', KEYS[2]) + 1
redis.call('rpush', KEYS[2], cjson.encode(e))
return read
)lua";

// KEYS as above. ARGV: client, lease, fence ("" if none), the value read at enter.
const char* const kWriteAndExit = R"lua(
local prev = tonumber(redis.call('get', KEYS[1]) or '0')
local read = tonumber(ARGV[4])
local t = redis.call('time')
local e = {kind = 'write', client = tonumber(ARGV[1]), lease = ARGV[2], read = read, prev = prev,
           t_s = tonumber(t[1]), t_usec = tonumber(t[2])}
local accepted = 1
if ARGV[3] ~= '' then
  local f = tonumber(ARGV[3])
  e.fence = f
  local max = redis.call('get', KEYS[3])
  if max and (f < tonumber(max) or (f == tonumber(max) and redis.call('get', KEYS[4]) ~= ARGV[2])) then
    accepted = 0
    e.kind = 'reject'
    e.max_fence = tonumber(max)
  else
    redis.call('set', KEYS[3], f)
    redis.call('set', KEYS[4], ARGV[2])
  end
end
if accepted == 1 then redis.call('set', KEYS[1], read + 1) end
e.seq = redis.call('llen', KEYS[2]) + 1
redis.call('rpush', KEYS[2], cjson.encode(e))
local x = {kind = 'exit', client = e.client, lease = e.lease, fence = e.fence,
           t_s = e.t_s, t_usec = e.t_usec, seq = e.seq + 1}
redis.call('rpush', KEYS[2], cjson.encode(x))
return accepted
)lua";

// KEYS: log. ARGV: client, lease.
const char* const kAbandon = R"lua(
local t = redis.call('time')
local x = {kind = 'exit', client = tonumber(ARGV[1]), lease = ARGV[2], abandoned = true,
           t_s = tonumber(t[1]), t_usec = tonumber(t[2])}
x.seq = redis.call('llen', KEYS[1]) + 1
redis.call('rpush', KEYS[1], cjson.encode(x))
return 1
)lua";

std::string fence_arg(const SectionId& s) { return s.fence ? std::to_string(*s.fence) : ""; }

}  // namespace

Reply Store::enter(const SectionId& s) {
    return env_.command(NodeId{0},
                        {"EVAL", kEnter, "4", keys_.counter, keys_.log, keys_.fence_max, keys_.fence_lease,
                         std::to_string(s.client), s.lease, fence_arg(s)},
                        timeout_);
}

Reply Store::write_and_exit(const SectionId& s, long long read) {
    return env_.command(NodeId{0},
                        {"EVAL", kWriteAndExit, "4", keys_.counter, keys_.log, keys_.fence_max,
                         keys_.fence_lease, std::to_string(s.client), s.lease, fence_arg(s),
                         std::to_string(read)},
                        timeout_);
}

Reply Store::abandon(const SectionId& s) {
    return env_.command(NodeId{0}, {"EVAL", kAbandon, "1", keys_.log, std::to_string(s.client), s.lease}, timeout_);
}

}  // namespace lockbench
