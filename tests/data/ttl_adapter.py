#!/usr/bin/python3
"""A test adapter: a lock on node 0 with a random token, answering with the validity the run's
params say ("said_validity_ms"), so that a test can set a library's word against the key's real
TTL. "layout" is how the key holds the token: "string" (SET NX PX, the default), "hash" (a
field, as Redisson) or "zset" (a member scored with its expiry in the server's milliseconds, as
Symfony's RedisStore). "wrong_token": true answers a token the key does not hold."""
import json
import os
import sys
import uuid

import redis

params = json.loads(os.environ["LOCKBENCH_PARAMS"])
host, port = os.environ["LOCKBENCH_NODES"].split(",")[0].split(":")
client = redis.Redis(host=host, port=int(port))
layout = params.get("layout", "string")
ACQUIRE = {
    "string": "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0",
    "hash": """if redis.call('exists', KEYS[1]) == 1 then return 0 end
               redis.call('hset', KEYS[1], ARGV[1], 1) redis.call('pexpire', KEYS[1], ARGV[2]) return 1""",
    "zset": """if redis.call('exists', KEYS[1]) == 1 then return 0 end
               local t = redis.call('time')
               local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
               redis.call('zadd', KEYS[1], expiry, ARGV[1]) redis.call('pexpireat', KEYS[1], expiry) return 1""",
}[layout]
token = None
print(json.dumps({"ready": True, "library": "ttl-test 1"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        token = uuid.uuid4().hex
        if not client.eval(ACQUIRE, 1, req["key"], token, req["ttl_ms"]):
            print(json.dumps({"ok": False, "error": "held"}), flush=True)
            continue
        said = "not-" + token if params.get("wrong_token") else token
        print(json.dumps({"ok": True, "token": said, "validity_ms": params["said_validity_ms"], "nodes": [0]}), flush=True)
    else:
        # Ours if the key holds our token in its layout (the probe's own reading of it).
        script = """local kind = redis.call('type', KEYS[1]).ok
                    if (kind == 'string' and redis.call('get', KEYS[1]) == ARGV[1])
                       or (kind == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1)
                       or (kind == 'zset' and redis.call('zscore', KEYS[1], ARGV[1])) then
                      return redis.call('del', KEYS[1]) end return 0"""
        removed = client.eval(script, 1, req["key"], token)
        print(json.dumps({"ok": True, "removed_on": [0] if removed else []}), flush=True)
