// lockbench adapter for node-redlock 4.2.0 (npm "redlock", the current stable release) over
// ioredis, one client per node of LOCKBENCH_NODES. Speaks lockbench's adapter protocol
// (README: External locks). Dependencies: `npm ci` in this folder (scripts/setup runs it).
'use strict';
let Redlock, Redis;
try {
  Redlock = require('redlock');
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  process.stdout.write(JSON.stringify({ready: false, error: `${e.message.split('\n')[0]}: ` +
                                       'install it with (cd adapters/node-redlock && npm ci)'}) + '\n');
  process.exit(1);
}
const readline = require('readline');

// Per command, as lockbench's own clients: a node that does not answer in time is a failed vote.
const timeout = Number(process.env.LOCKBENCH_COMMAND_TIMEOUT_MS);
const clients = process.env.LOCKBENCH_NODES.split(',').map((addr) => {
  const [host, port] = addr.split(':');
  // One attempt per command, no retry.
  return new Redis({host, port: Number(port), connectTimeout: timeout, commandTimeout: timeout,
                    maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50,
                    lazyConnect: false});
});
// The library's defaults, but one attempt per acquire: lockbench's worker does the retrying.
const redlock = new Redlock(clients, {driftFactor: 0.01, retryCount: 0, retryDelay: 0, retryJitter: 0});
redlock.on('clientError', () => {});  // a node cut off by a fault is expected
let lock = null;

const ops = {
  async acquire(req) {
    const start = Date.now();
    try {
      lock = await redlock.lock(req.key, req.ttl_ms);
    } catch (e) {
      return {ok: false, error: e.message};
    }
    // validity as the library sees it: its expiration (start + ttl - drift) by its clock
    return {ok: true, token: lock.value, validity_ms: lock.expiration - start};
  },
  async release() {
    try {
      await lock.unlock();
      return {ok: true};
    } catch (e) {
      return {ok: false, error: e.message};
    }
  },
  async extend(req) {
    // node-redlock's extend sets the TTL to T from now on every node: it has no "add".
    if (req.replace === false) return {ok: false, error: 'node-redlock extends by replacing the TTL only'};
    try {
      lock = await lock.extend(req.ttl_ms);
      return {ok: true};
    } catch (e) {
      return {ok: false, error: e.message};
    }
  },
};

// Answer once every node has connected, failed to, or the connect timeout has passed (a
// node behind a blackhole never answers): the first acquire then sees the nodes as they are.
const connected = Promise.all(clients.map((c) => new Promise((done) => {
  if (c.status === 'ready') return done();
  c.once('ready', done);
  c.once('error', done);
})));
const connectTimeout = Number(process.env.LOCKBENCH_CONNECT_TIMEOUT_MS);
Promise.race([connected, new Promise((done) => setTimeout(done, connectTimeout))]).then(() => {
  process.stdout.write(JSON.stringify({
    ready: true, library: `redlock ${require('redlock/package.json').version}`,
    algorithm: 'Redlock: SET NX PX on every node, a majority within the validity (TTL minus elapsed and drift)',
    fencing: false}) + '\n');
  const rl = readline.createInterface({input: process.stdin});
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(async () => {
      const req = JSON.parse(line);
      const answer = await ops[req.op](req);
      process.stdout.write(JSON.stringify(answer) + '\n');
    });
  });
  rl.on('close', () => queue.then(() => process.exit(0)));
});
