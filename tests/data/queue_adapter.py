#!/usr/bin/python3
"""An adapter whose library queues a waiting acquire, as Curator's acquire(time) does: client 0's
first acquire says {"event": "waiting", ...} (queued behind the holder) and then waits 1.5 s
before it gives up (held); every other acquire is granted at once. Releases answer ok.

With the argument "silent", client 0's first acquire waits as long but says nothing: a library
that cannot tell lockbench it is queued.
"""
import json
import os
import sys
import time

client = os.environ.get("LOCKBENCH_CLIENT", "")
silent = sys.argv[1:] == ["silent"]
print(json.dumps({"ready": True, "library": "queue 1"}), flush=True)
first = True
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire" and client == "0" and first:
        first = False
        if not silent:
            print(json.dumps({"event": "waiting", "detail": "queued 2 of 2, behind the holder"}), flush=True)
        time.sleep(1.5)
        print(json.dumps({"ok": False, "error": "held"}), flush=True)
    elif req["op"] == "acquire":
        print(json.dumps({"ok": True, "token": "t"}), flush=True)
    else:
        print(json.dumps({"ok": True}), flush=True)
