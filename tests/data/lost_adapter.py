#!/usr/bin/python3
"""An adapter whose library loses every lock it takes, as redis-semaphore's onLockLost would
say: it grants each acquire, and answers each extend by first announcing, unsolicited,
{"event": "lost", ...}, then failing the extend. Every request it reads is appended to
$TMPDIR/lost-adapter.requests, so a test can see what lockbench sent.
"""
import json
import os
import sys

log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "lost-adapter.requests"), "a")
print(json.dumps({"ready": True, "library": "lost 1"}), flush=True)
taken = 0
for line in sys.stdin:
    log.write(line)
    log.flush()
    req = json.loads(line)
    if req["op"] == "acquire":
        taken += 1
        print(json.dumps({"ok": True, "token": f"t{taken}"}), flush=True)
    elif req["op"] == "extend":
        print(json.dumps({"event": "lost", "reason": "onLockLost"}), flush=True)  # while extend waits
        print(json.dumps({"ok": False, "error": "lock lost"}), flush=True)
    else:
        print(json.dumps({"ok": True}), flush=True)
