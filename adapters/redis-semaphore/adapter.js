// lockbench adapter for swarthy's redis-semaphore (npm) over ioredis. Speaks lockbench's adapter
// protocol (README: External locks). Dependencies: `npm ci` in this folder (scripts/setup runs it).
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
const params = JSON.parse(process.env.LOCKBENCH_PARAMS || '{}');
const version = params.version || '5.8.0';
const pkg = version === '5.8.0' ? 'redis-semaphore' : `redis-semaphore-${version}`;
const say = (line) => process.stdout.write(JSON.stringify(line) + '\n');
if (!['5.8.0', '5.3.0', '5.3.1'].includes(version) || !['mutex', 'redlock-mutex', undefined].includes(params.variant)) {
  say({ready: false, error: `params: version ${version} or variant ${params.variant} is not one of 5.8.0, 5.3.0, ` +
                            '5.3.1 and mutex, redlock-mutex'});
  process.exit(2);
}
if (params.debug === true) process.env.DEBUG = 'redis-semaphore:*refresh*';
let semaphore, Redis;
try {
  semaphore = require(pkg);
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  process.stdout.write(JSON.stringify({ready: false, error: `${e.message.split('\n')[0]}: ` +
                                       'install it with (cd adapters/redis-semaphore && npm ci)'}) + '\n');
  process.exit(1);
}
const readline = require('readline');
// A library's asynchronous failure (a refresh whose command failed) must not end the adapter.
process.on('unhandledRejection', (e) => process.stderr.write(`redis-semaphore: ${e && e.stack || e}\n`));

const redlock = params.variant === 'redlock-mutex';
const timeout = Number(process.env.LOCKBENCH_COMMAND_TIMEOUT_MS);
// One attempt per command, no retry, as lockbench's own clients; a connection that a crash
// broke is made again 10 ms later (ioredis fails commands at once meanwhile: a node that just
// restarted would otherwise be missing from every vote for 50 ms or more). A
// Sentinel-found master is reached by this client's own path (LOCKBENCH_ADDRESS_MAP).
function connect(addr) {
  const [host, port] = addr.split(':');
  const options = {host, port: Number(port), connectTimeout: timeout, commandTimeout: timeout,
                   maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 10};
  if (process.env.LOCKBENCH_SENTINELS) {
    const natMap = {};
    for (const [from, to] of Object.entries(JSON.parse(process.env.LOCKBENCH_ADDRESS_MAP))) {
      const [h, p] = to.split(':');
      natMap[from] = {host: h, port: Number(p)};
    }
    Object.assign(options, {sentinels: process.env.LOCKBENCH_SENTINELS.split(',').map((a) => ({
      host: a.split(':')[0], port: Number(a.split(':')[1])})), name: process.env.LOCKBENCH_MASTER_NAME, natMap});
  }
  const client = new Redis(options);
  client.on('error', (e) => process.stderr.write(`ioredis ${addr}: ${e.message}\n`));
  return client;
}
const nodes = process.env.LOCKBENCH_NODES.split(',');
const clients = redlock ? nodes.map(connect) : [connect(nodes[0])];
let mutex = null;

const ops = {
  async acquire(req) {
    const options = {lockTimeout: req.ttl_ms, acquireAttemptsLimit: 1, retryInterval: 0,
                     onLockLost: (e) => say({event: 'lost', detail: e.message})};
    if (params.refresh === false) options.refreshInterval = 0;
    mutex = redlock ? new semaphore.RedlockMutex(clients, req.key, options)
                    : new semaphore.Mutex(clients[0], req.key, options);
    if (!await mutex.tryAcquire()) return {ok: false, error: 'held'};
    return redlock ? {ok: true, token: mutex.identifier} : {ok: true, token: mutex.identifier, nodes: [0]};
  },
  async release() {
    await mutex.release();
    return {ok: true};
  },
  async extend() {
    return {ok: false, error: 'redis-semaphore has no extend: it refreshes on its own (refreshInterval)'};
  },
};

// Answer once every node has connected, failed to, or the connect timeout has passed.
const connected = Promise.all(clients.map((c) => new Promise((done) => {
  if (c.status === 'ready') return done();
  c.once('ready', done);
  c.once('error', done);
})));
const connectTimeout = Number(process.env.LOCKBENCH_CONNECT_TIMEOUT_MS);
Promise.race([connected, new Promise((done) => setTimeout(done, connectTimeout))]).then(() => {
  say({ready: true, library: `redis-semaphore ${require(`${pkg}/package.json`).version}`,
       algorithm: (redlock ? 'RedlockMutex: SET NX PX a uuid on every node, held with a majority (no validity ' +
                             'check), Lua compare-and-delete release on every node'
                           : 'Mutex: SET NX PX a uuid, Lua compare-and-delete release') +
                  (params.refresh === false ? ', no refresh' : ', Lua compare-and-PEXPIRE refresh every 80% of the TTL'),
       fencing: false});
  const rl = readline.createInterface({input: process.stdin});
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(async () => {
      let answer;
      try {
        const req = JSON.parse(line);
        answer = await ops[req.op](req);
      } catch (e) {  // a command that failed or timed out: this attempt failed
        answer = {ok: false, error: e.message};
      }
      say(answer);
    });
  });
  rl.on('close', () => queue.finally(() => process.exit(0)));
});
