// lockbench adapter for AmrSaber's simple-redis-mutex 3.0.0 (npm, ISC) over node-redis 6 (npm
// "redis", its peer dependency), on node 0 of LOCKBENCH_NODES or on the master that
// LOCKBENCH_SENTINELS names. Speaks lockbench's adapter protocol (docs/adapters.md).
// Dependencies: `npm ci` in this folder (scripts/setup runs it).
//
// Its algorithm (tryLock): first make sure a subscriber connection (a duplicate of the client)
// is open and SUBSCRIBEd to its release channel, then
//   SET @simple-redis-mutex:lock-K <String(Math.random())> NX PX ttl,
// and only after that SET's OK, as a separate command, INCR @simple-redis-mutex:fencing-tokens
// (one counter for every lock, never expiring) for the fencing token. Release: a Lua
// compare-and-DEL that also PUBLISHes the release (SCRIPT LOAD once, then EVALSHA); it returns
// nothing, and the library's release returns nothing either. Its `refreshTimeout` (a GET, then
// a PEXPIRE of the lock's first TTL: not atomic, and silent when the lock is gone) is not
// offered as extend, since it cannot say whether it refreshed. It does not renew on its own.
// The key it locks is its own prefix before lockbench's key: the answer names the key of the
// SET that said OK ("key"), where lockbench's probes read the token.
//
// One attempt per acquire: tryLock is a single SET (the library's blocking `lock`, which
// re-tries on every published release and every pollingInterval, is not used).
// params: "warm": true takes and releases a lock of another key before the ready line (below);
// "fence" is lockbench's (the store checks the fencing token).
// The token answered is the value of the SET that said OK (the library keeps it to itself).
// What it cannot report: no validity; no removed_on (the release says nothing).
'use strict';
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

let redis, mutex;
try {
  redis = require('redis');
  mutex = require('simple-redis-mutex');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/simple-redis-mutex && npm ci)');
}

const {env} = kit;
const timeout = env.commandTimeoutMs;
// node-redis's own command timeout (until the command is written; see below); a command while
// disconnected fails at once; a broken connection is made again 50 ms later.
const socket = {connectTimeout: timeout, reconnectStrategy: () => 50};
const options = {disableOfflineQueue: true, commandOptions: {timeout}};
// Node 0, or: ask Sentinel for the master, then reach it by this client's own path.
const client = env.sentinels.length === 0
  ? redis.createClient({...options, socket: {...socket, ...env.nodes[0]}})
  : redis.createSentinel({commandOptions: options.commandOptions, name: env.masterName, sentinelRootNodes: env.sentinels,
                          nodeAddressMap: env.addressMap, nodeClientOptions: {socket, disableOfflineQueue: true},
                          sentinelClientOptions: {socket, disableOfflineQueue: true}});
// node-redis's command timeout runs only until a command is written: a reply that never comes
// (a node behind a blackhole, a stopped server) is waited for until the connection breaks. So
// the library is handed the client with each of the commands it sends (SET, INCR, SCRIPT LOAD,
// EVALSHA, EVAL, GET, PEXPIRE) raced against LOCKBENCH_COMMAND_TIMEOUT_MS, as lockbench's own
// clients time theirs out (a SET that lands after its timeout leaves a key nobody holds, which
// only delays the others); everything else (duplicate, on) goes to the client itself. Not under
// Sentinel: there node-redis holds a command while it has no master, and one raced out would
// still be sent once the new master is found, leaving keys that no one holds for a TTL (in
// failover-lost-lock they kept the others out); there the acquire's patience (below) bounds it.
// The library does not tell its lock's value: the SET that says OK does (the token).
const TIMED = new Set(['set', 'incr', 'scriptLoad', 'evalSha', 'eval', 'get', 'pExpire']);
function withTimeout(promise) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no reply within ${timeout} ms`)), timeout);
  });
  promise.catch(() => {});  // its failure after the timeout is already answered
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
let lastSet = null;  // the value of the last SET that said OK
let lastKey = null;  // and its key
const timed = new Proxy(client, {
  get(target, prop) {
    const value = Reflect.get(target, prop);
    if (typeof value !== 'function') return value;
    if (!TIMED.has(prop)) return value.bind(target);
    return (...args) => {
      let reply = value.apply(target, args);
      if (!env.sentinels.length) reply = withTimeout(reply);
      if (prop === 'set') reply.then((r) => { if (r === 'OK') { lastSet = String(args[1]); lastKey = String(args[0]); } }, () => {});
      return reply;
    };
  },
});
// A node cut off by a fault is expected: its errors go to stderr (once each), never kill us.
let lastError = '';
client.on('error', (e) => {
  const text = String(e && e.message || e);
  if (text !== lastError) kit.log(`simple-redis-mutex adapter: ${text}`);
  lastError = text;
});

// How long an acquire or a release waits for the library: tryLock's first step, opening the
// subscriber connection, waits for the node to answer, and node-redis 6's Sentinel client holds
// commands while it finds a new master (2 to 4 s of a failover). One still waiting after a quarter of
// lockbench's op timeout answers that it failed; a lock that tryLock hands out after that is
// released at once (no one was told it is held).
const patienceMs = env.opTimeoutMs / 4;
function patiently(promise) {
  let timer;
  const waited = new Promise((done) => { timer = setTimeout(done, patienceMs, null); });
  return Promise.race([promise, waited]).finally(() => clearTimeout(timer));
}
function late(pending, key) {
  pending.then(([hasLock, releaseFn]) => {
    if (!hasLock) return;
    kit.log(`simple-redis-mutex adapter: tryLock(${key}) answered after ${patienceMs} ms: releasing that lock`);
    return releaseFn();
  }).catch((e) => kit.log(`simple-redis-mutex adapter: a late tryLock: ${kit.describe(e)}`));
}

let release = null;  // the library's release function for the lock we hold
const ops = {
  async acquire(req) {
    const pending = mutex.tryLock(timed, req.key, {timeout: req.ttl_ms});
    const answer = await patiently(pending);
    if (answer === null) {
      late(pending, req.key);
      return {ok: false, error: `tryLock did not answer within ${patienceMs} ms`};
    }
    const [hasLock, releaseFn] = answer;
    if (!hasLock) return {ok: false, error: 'held'};
    release = releaseFn;
    return {ok: true, token: lastSet, key: lastKey, fence: releaseFn.fencingToken, nodes: [0]};
  },
  async release() {
    // resolves to nothing, whether it deleted the key or not
    if (await patiently(release().then(() => true)) === null) {
      return {ok: false, error: `release did not answer within ${patienceMs} ms`};
    }
    return {ok: true};
  },
  extend: () => ({ok: false, error: 'simple-redis-mutex has no extend that says whether it refreshed ' +
                                   '(refreshTimeout: GET, then PEXPIRE of the first TTL)'}),
};

// Answer once connected, or once the connect timeout has passed (a node behind a blackhole
// never answers): the first acquire then sees the node as it is.
// params.warm: take and release a lock of another key (LOCKBENCH_KEY + ":warm-up") before the
// ready line, as a process that has locked before: the library opens its subscriber connection
// at its first tryLock, before that tryLock's SET (under Sentinel: a second Sentinel client,
// which discovers the master anew), and loads its release script at its first release. Cold,
// a fault aimed at the first acquire meets that connection's hand-shake, not the SET.
async function warmUp() {
  const [hasLock, releaseFn] = await mutex.tryLock(timed, `${env.key}:warm-up`, {timeout: env.ttlMs || 1000});
  if (hasLock) await releaseFn();
}
kit.settled([client.connect()]).then(async () => {
  if (env.params.warm === true) {
    if (await patiently(warmUp().then(() => true, (e) => kit.log(`warm-up: ${kit.describe(e)}`))) === null) {
      kit.log(`warm-up: no answer within ${patienceMs} ms`);
    }
  }
  kit.ready(`simple-redis-mutex ${require('simple-redis-mutex/package.json').version}`,
            'SET NX PX a Math.random() token, then INCR a global fencing counter; Lua compare-and-delete ' +
            'release (and PUBLISH); no renewal', true);
  kit.serve(ops);
});
