// lockbench adapter for node-redlock (npm "redlock"), one ioredis client per node of
// LOCKBENCH_NODES. Speaks lockbench's adapter protocol (docs/adapters.md).
// Dependencies: `npm ci` in this folder (scripts/setup runs it). Two versions, chosen by the
// run's params:
//   (default)        4.2.0, the current stable release, over ioredis 4: lock/unlock/extend.
//   "version": "5"   5.0.0-beta.2 (the newest published, npm alias redlock-5) over ioredis 5
//                    (alias ioredis-5): acquire/release/extend. Its `using` (automatic
//                    extension) is not used: lockbench's loop acquires, works and releases.
// Both: SET NX PX of a random value by Lua on every node, a majority wins, validity =
// TTL - (drift 1% of TTL + 2 ms) from the attempt's start; Lua compare-and-delete release;
// extend = SET PX of the same value (replaces the TTL). 4.2.0 takes that start at each attempt
// and refuses a lock whose validity is spent; 5.0.0-beta.2 takes it once, before all its
// retries, and hands out whatever is left, even nothing (issues #169, #296; fixed by PR #274
// on main, never published): scenarios/redlock-validity-retries.json.
// One file for both: the two APIs differ only in names (lock/acquire, unlock/release) and in
// what a lock tells (v4, v5 below). Retries: retryCount 0 (one attempt per acquire), unless
// the run's params ask for the library's own (retry_count, retry_delay_ms; jitter 0).
// Neither renews on its own. "warm_scripts": true loads the scripts before the ready line.
// What it cannot report: 4.2.0 does not say which nodes voted (no `nodes`, no `removed_on`);
// 5.0.0-beta.2 does (each attempt's votes), once every node has answered.
'use strict';
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

const params = kit.env.params;
const five = String(params.version || '') === '5';
const pkg = five ? 'redlock-5' : 'redlock';
let Redlock, Redis;
try {
  Redlock = five ? require('redlock-5').default : require('redlock');
  Redis = require(five ? 'ioredis-5' : 'ioredis');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/node-redlock && npm ci)');
}

// Per command, as lockbench's own clients: a node that does not answer in time is a failed vote.
const timeout = kit.env.commandTimeoutMs;
// One attempt per command, no retry.
const clients = kit.env.nodes.map(({host, port}) => new Redis({
  host, port, connectTimeout: timeout, commandTimeout: timeout, maxRetriesPerRequest: 0, enableOfflineQueue: false,
  retryStrategy: () => 50, lazyConnect: false}));
const retries = {retryCount: params.retry_count ?? 0, retryDelay: params.retry_delay_ms ?? 0, retryJitter: 0};
const redlock = new Redlock(clients, {driftFactor: 0.01, ...retries});
// A node cut off by a fault is expected (4.2.0: clientError; 5: error, also for a held key).
redlock.on(five ? 'error' : 'clientError', () => {});
let lock = null;

// Read from the installed package (5.0.0-beta.2's exports hide its package.json from require).
function installedVersion() {
  const file = path.join(__dirname, 'node_modules', pkg, 'package.json');
  // 5.0.0-beta.2's package.json spells it "v5.0.0-beta.2": the table shows versions alike.
  return JSON.parse(require('fs').readFileSync(file, 'utf8')).version.replace(/^v/, '');
}

// 5.0.0-beta.2: the nodes that voted for the last attempt, if every node has answered by now.
// The library returns once it has a majority and settles these stats only when the last node
// answers or times out: waiting for them would hold the answer back (a node behind a fault
// would cost a command timeout the library's caller never waits). Unknown: left out.
async function votedFor(attempts) {
  const stats = await Promise.race([attempts[attempts.length - 1], new Promise((r) => setImmediate(r, null))]);
  return stats ? clients.flatMap((c, i) => (stats.votesFor.has(c) ? [i] : [])) : undefined;
}

const v4 = {
  acquire: (key, ttl) => redlock.lock(key, ttl),
  release: async () => (await lock.unlock(), {ok: true}),
  extend: (ttl) => lock.extend(ttl),
};
const v5 = {
  acquire: (key, ttl) => redlock.acquire([key], ttl),
  release: async () => ({ok: true, removed_on: await votedFor((await lock.release()).attempts)}),
  extend: (ttl) => lock.extend(ttl),
};
const lib = five ? v5 : v4;

// A failed attempt (held, or too few nodes answered) throws: the kit answers it.
const ops = {
  async acquire(req) {
    const start = Date.now();
    lock = await lib.acquire(req.key, req.ttl_ms);
    // validity as the library sees it: its expiration (start + ttl - drift) by its clock
    const answer = {ok: true, token: lock.value, validity_ms: lock.expiration - start};
    const nodes = five ? await votedFor(lock.attempts) : undefined;
    if (nodes) answer.nodes = nodes;
    return answer;
  },
  release: () => lib.release(),
  async extend(req) {
    // node-redlock's extend sets the TTL to T from now on every node: it has no "add".
    if (req.replace === false) return {ok: false, error: 'node-redlock extends by replacing the TTL only'};
    const start = Date.now();
    lock = await lib.extend(req.ttl_ms);
    return {ok: true, validity_ms: lock.expiration - start};
  },
};

// Answer once every node has connected, failed to, or the connect timeout has passed (a
// node behind a blackhole never answers): the first acquire then sees the nodes as they are.
const connected = clients.map((c) => c.status === 'ready' || kit.firstEvent(c, ['ready', 'error']));
// params.warm_scripts: load the library's scripts first, as a process that has locked before
// has them: otherwise a fresh server's first EVALSHA answers NOSCRIPT and the library sends
// EVAL after that reply, so a fault on the first acquire's replies holds the NOSCRIPT, not the SET.
const warm = () => Promise.all(clients.flatMap((c) => Object.values(redlock.scripts).map(
  (s) => c.script('LOAD', s.value).catch((e) => kit.log(`script load: ${e.message}`)))));
kit.settled(connected).then(async () => {
  if (params.warm_scripts) await warm();
  kit.ready(`redlock ${installedVersion()}`, five
    ? 'Redlock: SET NX PX by Lua on every node, majority; validity counted from before its own retries, never checked'
    : 'Redlock: SET NX PX by Lua on every node, majority and validity > 0 within each attempt; Lua compare-and-delete release');
  // A reset (lockbench keeps the adapter for another repetition) first ends what this run holds.
  kit.serve(ops, () => { for (const c of clients) c.disconnect(); }, {kept: true});
});
