// lockbench adapter for alexpota's redlock-universal 0.8.5 (npm, MIT) over ioredis 5, through
// the library's own IoredisAdapter. Speaks lockbench's adapter protocol (docs/adapters.md).
// Dependencies: `npm ci` in this folder (scripts/setup runs it). The package asks for Node 22
// (its "engines"); it runs on Node 20, and npm only warns.
//
// The run's params choose the configuration (LOCKBENCH_PARAMS):
//   variant  "lock" (default): createLock, its SimpleLock (the README's Quick Start) on node 0,
//            or on the master LOCKBENCH_SENTINELS names: SET K <16 random bytes, hex> PX ttl NX;
//            release: a Lua compare-and-DEL (SCRIPT LOAD once, then EVALSHA); extend: a Lua
//            compare-and-PEXPIRE (replaces the TTL). No validity is computed. Its circuit
//            breaker is on, as by default: after 5 acquires in a row that failed with an error
//            (not "held"), every acquire fails at once for 60 s; before the first acquire, and
//            every 30 s, it PINGs first.
//            "redlock": createRedlock over every node: the same SET on each node at once, waits
//            for all of them (each up to the command timeout), then holds it if a majority said
//            OK and the time taken + (1% of the TTL + 2 ms) is under the TTL (else it releases
//            the nodes it got); release and extend (a GET on every node, then the compare-and-
//            PEXPIRE on every node) need a majority. It says on which nodes it got the lock, but
//            hands out no validity: the handle's acquiredAt is taken after the SETs, ttl is the TTL.
//   using    true: the README's recommended form, lock.using(routine): the acquire answers once
//            the routine starts, the release ends it, and meanwhile the library extends the lock
//            on its own (its auto-extension: when 80% of the TTL has passed since the last
//            extension, but never later than 1 s after it: a TTL under 1.25 s is extended again
//            as soon as each extension is answered). A failed extension aborts the routine's
//            signal: the adapter prints {"event": "lost"}. The routine is not told the handle:
//            no token.
//   retry_attempts, retry_delay_ms: the library's own retries (default here: 0; the library's
//            own default is 3 retries, 100 ms apart, 200 ms for a Redlock).
//   circuit_breaker  false: createLock's circuitBreaker: false (default: the library's, on).
//   warm     true: lock and unlock once before the ready line (below).
// One attempt per acquire: retryAttempts 0 (one SET, or one round of SETs). Lock objects are
// made once per key and TTL, as an application makes its lock once and acquires it again and
// again (the circuit breaker's count lives in the object).
// What it cannot report: validity (none computed). A Redlock release answers removed_on from
// the nodes' compare-and-deletes only when every node answered; a SimpleLock release from its
// own boolean.
'use strict';
const fs = require('fs');
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

let rlu, Redis;
try {
  rlu = require('redlock-universal');
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/redlock-universal && npm ci)');
}

const {env} = kit;
const params = env.params;
if (!['lock', 'redlock', undefined].includes(params.variant)) {
  kit.notReady(`params: variant ${params.variant} is not one of lock, redlock`);
}
const redlock = params.variant === 'redlock';
const using = params.using === true;
const timeout = env.commandTimeoutMs;

// One attempt per command, no retry, as lockbench's own clients; a broken connection is made
// again 10 ms later (ioredis fails commands at once meanwhile). A Sentinel-found master is
// reached by this client's own path (LOCKBENCH_ADDRESS_MAP).
function connect({host, port}) {
  const options = {host, port, connectTimeout: timeout, commandTimeout: timeout,
                   maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 10};
  if (!redlock && env.sentinels.length) {
    Object.assign(options, {sentinels: env.sentinels, name: env.masterName, natMap: env.addressMap,
                            sentinelRetryStrategy: () => 50});
  }
  const client = new Redis(options);
  client.on('error', (e) => kit.log(`ioredis ${host}:${port}: ${e.message}`));
  return client;
}

// The library's IoredisAdapter (its per-command timeout set to ours), noting what its last
// compare-and-delete answered: a Redlock's release says only whether a majority removed it.
class NotingAdapter extends rlu.IoredisAdapter {
  async delIfMatch(key, value) {
    const removed = await super.delIfMatch(key, value);
    this.removed = removed;
    return removed;
  }
}
const clients = redlock ? env.nodes.map(connect) : [connect(env.nodes[0])];
const adapters = clients.map((c) => new NotingAdapter(c, {timeout}));

const retries = {retryAttempts: params.retry_attempts ?? 0, retryDelay: params.retry_delay_ms ?? 0};
const locks = new Map();  // `${key} ${ttl}` -> the library's lock object
function lockFor(key, ttl) {
  const id = `${key} ${ttl}`;
  if (!locks.has(id)) {
    locks.set(id, redlock
      ? rlu.createRedlock({adapters, key, ttl, ...retries})
      : rlu.createLock({adapter: adapters[0], key, ttl, ...retries,
                        ...(params.circuit_breaker === false ? {circuitBreaker: false} : {})}));
  }
  return locks.get(id);
}

let held = null;  // {lock, handle} or, with using, {finish, done}
const plain = {
  async acquire(req) {
    const lock = lockFor(req.key, req.ttl_ms);
    const handle = await lock.acquire();  // throws LockAcquisitionError: held, or a node failed
    held = {lock, handle};
    const nodes = redlock ? handle.metadata.nodes.map((n) => Number(n.replace('node-', ''))) : [0];
    return {ok: true, token: handle.value, nodes};
  },
  async release() {
    for (const a of adapters) a.removed = undefined;
    const released = await held.lock.release(held.handle);  // Redlock: removed from a majority
    if (!redlock) return {ok: true, removed_on: released ? [0] : []};
    if (adapters.some((a) => a.removed === undefined)) return {ok: true};  // a node did not answer
    return {ok: true, removed_on: adapters.flatMap((a, i) => (a.removed ? [i] : []))};
  },
  async extend(req) {
    // extendIfMatch sets the TTL to T from now: there is no "add".
    if (req.replace === false) return {ok: false, error: 'redlock-universal extends by replacing the TTL only'};
    return {ok: await held.lock.extend(held.handle, req.ttl_ms)};
  },
};
const withUsing = {
  acquire: (req) => new Promise((answer) => {
    const lock = lockFor(req.key, req.ttl_ms);
    const done = lock.using((signal) => new Promise((finish) => {
      signal.addEventListener('abort', () => kit.lost(kit.describe(signal.error || 'extension failed')));
      held = {finish, done};
      answer(redlock ? {ok: true} : {ok: true, nodes: [0]});
    }));
    done.catch((e) => answer({ok: false, error: kit.describe(e)}));  // the acquire failed
  }),
  async release() {
    held.finish();  // the routine returns: using() stops extending and releases
    await held.done;
    return {ok: true};
  },
  extend: () => ({ok: false, error: 'with using() the library extends on its own'}),
};

// Answer once every node has connected, failed to, or the connect timeout has passed.
// params.warm: acquire and release the run's lock once before the ready line (its own lock
// object, key and TTL), as a process that has locked before: a SimpleLock's first acquire PINGs
// first (its health check, then every 30 s) and every first release loads its script (SCRIPT
// LOAD, then EVALSHA). Cold, a fault aimed at the first acquire's replies holds the PING's.
async function warmUp() {
  const lock = lockFor(env.key, env.ttlMs);
  const handle = await lock.acquire();
  await lock.release(handle);
}
kit.settled(clients.map((c) => c.status === 'ready' || kit.firstEvent(c, ['ready', 'error']))).then(async () => {
  if (params.warm === true) await warmUp().catch((e) => kit.log(`warm-up: ${kit.describe(e)}`));
  const file = path.join(__dirname, 'node_modules', 'redlock-universal', 'package.json');  // not exported
  const version = JSON.parse(fs.readFileSync(file, 'utf8')).version;
  kit.ready(`redlock-universal ${version}`,
            (redlock ? 'RedLock: SET NX PX a random token on every node, a majority within TTL - elapsed - drift; ' +
                       'Lua compare-and-delete release on every node'
                     : 'SimpleLock: SET NX PX a random token, Lua compare-and-delete release, circuit breaker' +
                       (params.circuit_breaker === false ? ' off' : ' on')) +
            (using ? '; using(): auto-extension at 80% of the TTL (at most 1 s apart)' : '; no renewal'));
  kit.serve(using ? withUsing : plain);
});
