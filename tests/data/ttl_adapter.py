#!/usr/bin/python3
"""A test adapter: SET NX PX on node 0 with a random token, answering with the validity the
run's params say ("said_validity_ms"), so that a test can set a library's word against the
key's real TTL. "wrong_token": true answers a token the key does not hold."""
import json
import os
import sys
import uuid

import redis

params = json.loads(os.environ["LOCKBENCH_PARAMS"])
host, port = os.environ["LOCKBENCH_NODES"].split(",")[0].split(":")
client = redis.Redis(host=host, port=int(port))
token = None
print(json.dumps({"ready": True, "library": "ttl-test 1"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        token = uuid.uuid4().hex
        if not client.set(req["key"], token, nx=True, px=req["ttl_ms"]):
            print(json.dumps({"ok": False, "error": "held"}), flush=True)
            continue
        said = "not-" + token if params.get("wrong_token") else token
        print(json.dumps({"ok": True, "token": said, "validity_ms": params["said_validity_ms"], "nodes": [0]}), flush=True)
    else:
        script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
        removed = client.eval(script, 1, req["key"], token)
        print(json.dumps({"ok": True, "removed_on": [0] if removed else []}), flush=True)
