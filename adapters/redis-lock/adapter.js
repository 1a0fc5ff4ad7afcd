// lockbench adapter for errorception's redis-lock 1.0.0 (npm "redis-lock"; MIT by its README,
// its package.json names no licence) over node-redis 4, the client it requires, on node 0 of
// LOCKBENCH_NODES. Speaks lockbench's adapter protocol (docs/adapters.md).
// Dependencies: `npm ci` in this folder (scripts/setup runs it).
//
// Its algorithm: SET lock.K <expiry> NX PX ttl, where <expiry> is Date.now() + ttl + 1 on the
// holder's own clock; the release is a plain DEL, sent only while the holder's clock says
// that expiry has not passed (seed 002's client-clock trust: no token, no ownership check).
// It does not renew, and has no extend.
//
// One attempt per acquire: the library retries a failed SET every retryDelay ms, forever,
// with no way to cancel. So each acquire hands the library a one-shot client of its own
// (`oneShot`): its first SET goes to Redis and tells the adapter the outcome; every later SET
// (the library's retries) returns a promise that never settles, so the retry loop parks on
// its first retry and never sends a command behind lockbench's back.
// node-redis 4 has no per-command timeout: the one-shot client races each command against
// LOCKBENCH_COMMAND_TIMEOUT_MS (a SET that lands after its timeout leaves a key nobody holds,
// which only delays the others). The release answers `removed_on` from DEL's own reply, which
// the library's release returns; no DEL sent (its clock said expired) removed nothing.
'use strict';
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

let redis, redisLock;
try {
  redis = require('redis');
  redisLock = require('redis-lock');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/redis-lock && npm ci)');
}

const timeoutMs = kit.env.commandTimeoutMs;
const {host, port} = kit.env.nodes[0];
const client = redis.createClient({
  socket: {host, port, connectTimeout: timeoutMs, reconnectStrategy: () => 50},
  disableOfflineQueue: true,  // a command while disconnected fails at once
});
// A node cut off by a fault is expected: the library's errors go to stderr (once each), never kill us.
let lastError = '';
const warn = (e) => {
  const text = String(e && e.message || e);
  if (text !== lastError) kit.log(`redis-lock adapter: ${text}`);
  lastError = text;
};
client.on('error', warn);

function withTimeout(promise) {
  let timer;
  const late = new Promise((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no reply within ${timeoutMs} ms`)), timeoutMs);
  });
  promise.catch(() => {});  // its failure after the timeout is already answered
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// The client the library sees for one acquire: one SET, then silence (see the header).
function oneShot() {
  const shot = {value: null, reply: null};
  shot.client = {
    v4: true,  // the library checks only that the property exists (a node-redis 4 client)
    set(key, value, options) {
      if (shot.reply) return new Promise(() => {});  // a retry: parked for good
      shot.value = String(value);
      shot.key = String(key);  // the library's own ("lock." before the name): the answer names it
      shot.reply = withTimeout(client.set(key, value, options));
      return shot.reply;
    },
    del: (key) => withTimeout(client.del(key)),
  };
  return shot;
}

let done = null;  // the library's release function for the lock we hold
const ops = {
  async acquire(req) {
    const start = Date.now();
    const shot = oneShot();
    const locked = redisLock(shot.client)(req.key, req.ttl_ms);
    const reply = await shot.reply.catch((e) => e);
    if (reply instanceof Error) return {ok: false, error: reply.message};
    if (reply === null) return {ok: false, error: 'held'};
    done = await locked;
    // validity as the library sees it: the expiry it stored, by its own clock
    return {ok: true, token: shot.value, key: shot.key, nodes: [0], validity_ms: Number(shot.value) - start};
  },
  async release() {
    const removed = await done();  // DEL's count, or undefined when no DEL was sent
    return {ok: true, removed_on: removed === 1 ? [0] : []};
  },
  extend: () => ({ok: false, error: 'redis-lock has no extend'}),
};

// Answer once connected, or once the connect timeout has passed (a node behind a blackhole
// never answers): the first acquire then sees the node as it is.
kit.settled([client.connect()]).then(() => {
  const version = (name) => require(`${name}/package.json`).version;
  kit.ready(`redis-lock ${version('redis-lock')}`,
            'SET NX PX with the holder\'s client-clock expiry as the value; release: plain DEL ' +
            'if its own clock says the lock has not expired; no renewal');
  // A reset (lockbench keeps the adapter for another repetition) first ends what this run holds.
  kit.serve(ops, () => client.disconnect().catch(() => {}), {kept: true});
});
