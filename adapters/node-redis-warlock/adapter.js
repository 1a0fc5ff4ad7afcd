// lockbench adapter for node-redis-warlock 1.0.2 (npm, MIT; "warlock") over ioredis 4 on node 0
// of LOCKBENCH_NODES, or on the master that LOCKBENCH_SENTINELS names. Speaks lockbench's
// adapter protocol (docs/adapters.md). Dependencies: `npm ci` in this folder
// (scripts/setup runs it).
//
// Its algorithm: SET K:lock <uuid v1, base64> PX ttl NX; release by a Lua compare-and-delete
// (GET, DEL if it is still our id); `touch` re-SETs the key with a new PX (XX) if it is still
// ours. It does not renew on its own. One attempt per acquire: `lock` is a single SET (the
// library's retrying form, `optimistic`, is not used).
// warlock's docs show node-redis; it calls the client with callbacks only (set, script,
// evalsha), which ioredis takes too, and ioredis gives a per-command timeout and Sentinel.
// What it cannot report: its scripts go through node-redis-script, which swallows every
// EVALSHA error but NOSCRIPT and returns undefined; a release that met such an error says
// neither success nor failure, and is answered `{"ok": true}` without `removed_on`.
'use strict';
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

let Warlock, Redis;
try {
  Warlock = require('node-redis-warlock');
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/node-redis-warlock && npm ci)');
}

// Per command, as lockbench's own clients; one attempt per command, no offline queue.
const {env} = kit;
const options = {connectTimeout: env.commandTimeoutMs, commandTimeout: env.commandTimeoutMs, maxRetriesPerRequest: 0,
                 enableOfflineQueue: false, retryStrategy: () => 50};
// Node 0, or: ask Sentinel for the master, then reach it by this client's own path (natMap).
const client = env.sentinels.length === 0
  ? new Redis({...options, ...env.nodes[0]})
  : new Redis({...options, sentinels: env.sentinels, name: env.masterName, natMap: env.addressMap,
               sentinelRetryStrategy: () => 50});
const warlock = Warlock(client);
// A node cut off by a fault is expected: errors go to stderr and never kill the adapter.
client.on('error', (e) => kit.log(`warlock adapter: ${e.message}`));
let held = null;  // {key, id} of the lock we hold

const ops = {
  acquire: (req) => new Promise((answer) => {
    warlock.lock(req.key, req.ttl_ms, (err, unlock, id) => {
      if (err) return answer({ok: false, error: err.message});
      if (typeof unlock !== 'function') return answer({ok: false, error: 'held'});
      held = {key: req.key, id};
      // its key is its own ("<K>:lock"): named for lockbench's probes
      return answer({ok: true, token: id, nodes: [0], key: warlock.makeKey(req.key)});
    });
  }),
  release: () => new Promise((answer) => {
    warlock.unlock(held.key, held.id, (err, removed) => {
      if (err) return answer({ok: false, error: err.message});
      if (removed === undefined) return answer({ok: true});  // an error it swallowed: see the header
      return answer({ok: true, removed_on: removed === 1 ? [0] : []});
    });
  }),
  async extend(req) {
    // touch sets the TTL to T from now: it has no "add".
    if (req.replace === false) return {ok: false, error: 'warlock touches by replacing the TTL only'};
    return {ok: (await warlock.touch(held.key, held.id, req.ttl_ms)) === 'OK'};
  },
};

// Answer once connected, or once the connect timeout has passed (a node behind a blackhole
// never answers): the first acquire then sees the node as it is.
kit.settled([kit.firstEvent(client, ['ready', 'error'])]).then(() => {
  kit.ready(`node-redis-warlock ${require('node-redis-warlock/package.json').version}`,
            'SET NX PX with a uuid v1 token, Lua compare-and-delete release; no renewal');
  // A reset (lockbench keeps the adapter for another repetition) first ends what this run holds.
  kit.serve(ops, () => client.disconnect(), {kept: true});
});
