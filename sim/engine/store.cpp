#include "sim/engine/store.h"

namespace lockbench {
namespace {

// KEYS: counter, log, fence_max, fence_lease, token, token_lease, holder. ARGV: client, lease,
// fence ("" if none), the check (resource_check_name), the lease's token.
// TIME is split into seconds and microseconds: cjson prints numbers with 14 digits.
// The log record is built in the same order whatever the check, so that cjson writes the
// default check's records exactly as before the check was a choice.
const char* const kEnter = R"lua(
local read = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', KEYS[7], ARGV[1])  -- the client that entered last
local t = redis.call('time')
local e = {kind = 'enter', client = tonumber(ARGV[1]), lease = ARGV[2], read = read,
           t_s = tonumber(t[1]), t_usec = tonumber(t[2])}
if ARGV[3] ~= '' then
  local f = tonumber(ARGV[3])
  e.fence = f
  if ARGV[4] == 'fence' then
    local max = redis.call('get', KEYS[3])
    if not max or f > tonumber(max) then
      redis.call('set', KEYS[3], f)
      redis.call('set', KEYS[4], ARGV[2])
    end
  end
end
if ARGV[4] == 'token' then
  redis.call('set', KEYS[5], ARGV[5])
  redis.call('set', KEYS[6], ARGV[2])
end
e.seq = redis.call('llen', KEYS[2]) + 1
redis.call('rpush', KEYS[2], cjson.encode(e))
return read
)lua";

// KEYS as above. ARGV: client, lease, fence ("" if none), the value read at enter, the
// check, the lease's token.
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
  if ARGV[5] == 'fence' then
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
end
if ARGV[5] == 'token' and redis.call('get', KEYS[5]) ~= ARGV[6] then
  accepted = 0
  e.kind = 'reject'
  e.registered = redis.call('get', KEYS[6]) or ''
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

const char* store_script(StoreScript which) {
    switch (which) {
        case StoreScript::enter: return kEnter;
        case StoreScript::write_and_exit: return kWriteAndExit;
        case StoreScript::abandon: return kAbandon;
    }
    return "";
}

const char* resource_check_name(ResourceCheck c) {
    switch (c) {
        case ResourceCheck::none: return "none";
        case ResourceCheck::fence: return "fence";
        case ResourceCheck::token: return "token";
    }
    return "?";
}

std::optional<ResourceCheck> parse_resource_check(const std::string& name) {
    for (ResourceCheck c : {ResourceCheck::none, ResourceCheck::fence, ResourceCheck::token})
        if (name == resource_check_name(c)) return c;
    return std::nullopt;
}

Reply Store::enter(const SectionId& s) {
    return env_.command(NodeId{0},
                        {"EVAL", kEnter, "7", keys_.counter, keys_.log, keys_.fence_max, keys_.fence_lease,
                         keys_.token, keys_.token_lease, keys_.holder, std::to_string(s.client), s.lease, fence_arg(s),
                         resource_check_name(check_), s.token},
                        timeout_);
}

Reply Store::write_and_exit(const SectionId& s, long long read) {
    return env_.command(NodeId{0},
                        {"EVAL", kWriteAndExit, "6", keys_.counter, keys_.log, keys_.fence_max,
                         keys_.fence_lease, keys_.token, keys_.token_lease, std::to_string(s.client), s.lease,
                         fence_arg(s), std::to_string(read), resource_check_name(check_), s.token},
                        timeout_);
}

Reply Store::counter() { return env_.command(NodeId{0}, {"GET", keys_.counter}, timeout_); }

Reply Store::abandon(const SectionId& s) {
    return env_.command(NodeId{0}, {"EVAL", kAbandon, "1", keys_.log, std::to_string(s.client), s.lease}, timeout_);
}

}  // namespace lockbench
