// lockbench adapter for node-redis-warlock 1.0.2 (npm, MIT; "warlock") over ioredis 4 on node 0
// of LOCKBENCH_NODES, or on the master that LOCKBENCH_SENTINELS names. Speaks lockbench's
// adapter protocol (README: External locks). Dependencies: `npm ci` in this folder
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
let Warlock, Redis;
try {
  Warlock = require('node-redis-warlock');
  Redis = require('ioredis');
} catch (e) {  // the first line says why, and what installs it
  process.stdout.write(JSON.stringify({ready: false, error: `${e.message.split('\n')[0]}: ` +
                                       'install it with (cd adapters/node-redis-warlock && npm ci)'}) + '\n');
  process.exit(1);
}
const readline = require('readline');

// Per command, as lockbench's own clients; one attempt per command, no offline queue.
const timeout = Number(process.env.LOCKBENCH_COMMAND_TIMEOUT_MS);
const options = {connectTimeout: timeout, commandTimeout: timeout, maxRetriesPerRequest: 0,
                 enableOfflineQueue: false, retryStrategy: () => 50};
function connect() {
  if (!process.env.LOCKBENCH_SENTINELS) {
    const [host, port] = process.env.LOCKBENCH_NODES.split(',')[0].split(':');
    return new Redis({...options, host, port: Number(port)});
  }
  // Ask Sentinel for the master, then reach it by this client's own path (natMap).
  const natMap = {};
  for (const [addr, own] of Object.entries(JSON.parse(process.env.LOCKBENCH_ADDRESS_MAP))) {
    const [host, port] = own.split(':');
    natMap[addr] = {host, port: Number(port)};
  }
  const sentinels = process.env.LOCKBENCH_SENTINELS.split(',').map((a) => {
    const [host, port] = a.split(':');
    return {host, port: Number(port)};
  });
  return new Redis({...options, sentinels, name: process.env.LOCKBENCH_MASTER_NAME, natMap,
                    sentinelRetryStrategy: () => 50});
}
const client = connect();
const warlock = Warlock(client);
// A node cut off by a fault is expected: errors go to stderr and never kill the adapter.
client.on('error', (e) => process.stderr.write(`warlock adapter: ${e.message}\n`));
process.on('unhandledRejection', (e) => process.stderr.write(`warlock adapter: ${e}\n`));
let held = null;  // {key, id} of the lock we hold

const ops = {
  acquire: (req) => new Promise((answer) => {
    warlock.lock(req.key, req.ttl_ms, (err, unlock, id) => {
      if (err) return answer({ok: false, error: err.message});
      if (typeof unlock !== 'function') return answer({ok: false, error: 'held'});
      held = {key: req.key, id};
      return answer({ok: true, token: id, nodes: [0]});
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
    try {
      return {ok: (await warlock.touch(held.key, held.id, req.ttl_ms)) === 'OK'};
    } catch (e) {
      return {ok: false, error: e.message};
    }
  },
};

// Answer once connected, or once the connect timeout has passed (a node behind a blackhole
// never answers): the first acquire then sees the node as it is.
const connected = new Promise((done) => {
  client.once('ready', done);
  client.once('error', done);
});
const connectTimeout = Number(process.env.LOCKBENCH_CONNECT_TIMEOUT_MS);
Promise.race([connected, new Promise((done) => setTimeout(done, connectTimeout))]).then(() => {
  process.stdout.write(JSON.stringify({
    ready: true, library: `node-redis-warlock ${require('node-redis-warlock/package.json').version}`,
    fencing: false,
    algorithm: 'SET NX PX with a uuid v1 token, Lua compare-and-delete release; no renewal',
  }) + '\n');
  const rl = readline.createInterface({input: process.stdin});
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(async () => {
      let answer;
      try {  // a request that throws fails alone: the adapter goes on answering
        const req = JSON.parse(line);
        answer = await ops[req.op](req);
      } catch (e) {
        answer = {ok: false, error: String(e && e.message || e)};
      }
      process.stdout.write(JSON.stringify(answer) + '\n');
    });
  });
  rl.on('close', () => queue.finally(() => process.exit(0)));
});
