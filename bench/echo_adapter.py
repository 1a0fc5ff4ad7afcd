#!/usr/bin/python3
"""lockbench_bench's echo adapter: speaks the adapter protocol, touches no Redis, answers at
once. A cycle through it costs the protocol alone (pipes, JSON both ways, the interpreter):
cycle/echo-python against cycle/redis-py shows what the protocol adds to a library's cycle."""
import json
import sys

print(json.dumps({"ready": True, "library": "echo"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"ok": True, "token": "echo"} if req["op"] == "acquire" else {"ok": True}), flush=True)
