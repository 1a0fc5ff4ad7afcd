// lockbench adapter for swarthy's redis-semaphore (npm) over ioredis. Speaks lockbench's adapter
// protocol (docs/adapters.md). Dependencies: `npm ci` in this folder (scripts/setup runs it).
//
// The run's params choose the configuration (LOCKBENCH_PARAMS):
//   variant  "mutex" (default): its Mutex on node 0: SET NX PX with a random uuid, a Lua
//            compare-and-PEXPIRE refresh, a Lua compare-and-delete release;
//            "redlock-mutex": its RedlockMutex on every node: the same SET on each, held with a
//            majority. It has no validity check: the time the SETs took is never subtracted.
//   refresh  true (default): the library renews on its own, every 80% of the TTL (a setInterval
//            in this process, so a pause of the client stops it too); false: refreshInterval 0.
//   version  "5.8.0" (default, the current release), "5.3.0" (its refresh re-creates an expired
//            key: swarthy/redis-semaphore#175) or "5.3.1" (the fix), installed side by side.
//   debug    true: the library's own refresh log (the debug package) on stderr.
// Retries off: acquireAttemptsLimit 1 and retryInterval 0 (the library's acquire would otherwise
// retry every 10 ms for 10 s). A failed refresh calls onLockLost, which by default throws inside
// a timer: here it prints {"event": "lost"} instead. The library's release ignores what its
// compare-and-delete returned, so a release answers {"ok": true} without removed_on. RedlockMutex
// does not say on which nodes it holds, so its acquire answers no nodes. Neither hands out a
// fencing token or a validity.
'use strict';
const path = require('path');
const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));

const {env} = kit;
const params = env.params;
const version = params.version || '5.8.0';
const pkg = version === '5.8.0' ? 'redis-semaphore' : `redis-semaphore-${version}`;
if (!['5.8.0', '5.3.0', '5.3.1'].includes(version) || !['mutex', 'redlock-mutex', undefined].includes(params.variant)) {
  kit.notReady(`params: version ${version} or variant ${params.variant} is not one of 5.8.0, 5.3.0, ` +
               '5.3.1 and mutex, redlock-mutex');
}
if (params.debug === true) process.env.DEBUG = 'redis-semaphore:*refresh*';
let semaphore, Redis;
try {
  semaphore = require(pkg);
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  kit.missing(e, 'install it with (cd adapters/redis-semaphore && npm ci)');
}

const redlock = params.variant === 'redlock-mutex';
const timeout = env.commandTimeoutMs;
// One attempt per command, no retry, as lockbench's own clients; a connection that a crash
// broke is made again 10 ms later (ioredis fails commands at once meanwhile: a node that just
// restarted would otherwise be missing from every vote for 50 ms or more). A
// Sentinel-found master is reached by this client's own path (LOCKBENCH_ADDRESS_MAP).
function connect({host, port}) {
  const options = {host, port, connectTimeout: timeout, commandTimeout: timeout,
                   maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 10};
  if (env.sentinels.length) Object.assign(options, {sentinels: env.sentinels, name: env.masterName, natMap: env.addressMap});
  const client = new Redis(options);
  client.on('error', (e) => kit.log(`ioredis ${host}:${port}: ${e.message}`));
  return client;
}
const clients = redlock ? env.nodes.map(connect) : [connect(env.nodes[0])];
let mutex = null;

// A command that failed or timed out throws: the kit answers that this attempt failed.
const ops = {
  async acquire(req) {
    const options = {lockTimeout: req.ttl_ms, acquireAttemptsLimit: 1, retryInterval: 0,
                     onLockLost: (e) => kit.lost(e.message)};
    if (params.refresh === false) options.refreshInterval = 0;
    mutex = redlock ? new semaphore.RedlockMutex(clients, req.key, options)
                    : new semaphore.Mutex(clients[0], req.key, options);
    if (!await mutex.tryAcquire()) return {ok: false, error: 'held'};
    // Its key is its own ("mutex:" before the name), which the answer names for lockbench's probes.
    const answer = {ok: true, token: mutex.identifier, key: mutex._key};
    return redlock ? answer : {...answer, nodes: [0]};
  },
  async release() {
    await mutex.release();
    return {ok: true};
  },
  extend: () => ({ok: false, error: 'redis-semaphore has no extend: it refreshes on its own (refreshInterval)'}),
};

// Answer once every node has connected, failed to, or the connect timeout has passed.
kit.settled(clients.map((c) => c.status === 'ready' || kit.firstEvent(c, ['ready', 'error']))).then(() => {
  kit.ready(`redis-semaphore ${require(`${pkg}/package.json`).version}`,
            (redlock ? 'RedlockMutex: SET NX PX a uuid on every node, held with a majority (no validity ' +
                       'check), Lua compare-and-delete release on every node'
                     : 'Mutex: SET NX PX a uuid, Lua compare-and-delete release') +
            (params.refresh === false ? ', no refresh' : ', Lua compare-and-PEXPIRE refresh every 80% of the TTL'));
  // A reset (lockbench keeps the adapter for another repetition) first ends what this run holds.
  kit.serve(ops, () => {
    if (mutex) mutex.stopRefresh();
    for (const c of clients) c.disconnect();
  }, {kept: true});
});
