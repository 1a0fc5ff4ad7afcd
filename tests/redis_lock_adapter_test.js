// adapters/redis-lock makes one attempt per acquire and leaves no retry behind, against a live
// redis-server this test starts on a free port (run by ctest; needs `npm ci` in that folder).
//
// The library retries a failed SET every 50 ms, forever. The adapter's acquire on a key held
// by someone else must answer "held", and once the key is free no retry may take it: over a
// window of ten retry periods the key stays free and the server saw exactly one SET from the
// adapter. The window is an observation, not a synchronisation: the control first shows that
// the library on its own does retry (and takes the freed key) within the same window.
'use strict';
const assert = require('assert');
const {spawn} = require('child_process');
const net = require('net');
const path = require('path');
const readline = require('readline');
const {createRequire} = require('module');

const adapterDir = path.join(__dirname, '..', 'adapters', 'redis-lock');
const need = createRequire(path.join(adapterDir, 'adapter.js'));
const redis = need('redis');
const redisLock = need('redis-lock');
const windowMs = 10 * 50;  // ten of the library's default retry periods
const pause = (ms) => new Promise((done) => setTimeout(done, ms));

function freePort() {
  return new Promise((done) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const {port} = s.address();
      s.close(() => done(port));
    });
  });
}

// The adapter as lockbench runs it: one request a line in, one answer a line out.
function startAdapter(port) {
  const child = spawn('node', [path.join(adapterDir, 'adapter.js')], {
    env: {...process.env, LOCKBENCH_NODES: `127.0.0.1:${port}`, LOCKBENCH_COMMAND_TIMEOUT_MS: '1000',
          LOCKBENCH_CONNECT_TIMEOUT_MS: '2000'},
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({input: child.stdout})[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value);
  const ask = async (req) => {
    child.stdin.write(JSON.stringify(req) + '\n');
    return next();
  };
  return {child, next, ask};
}

async function setCalls(client) {
  const stats = await client.info('commandstats');
  const m = /cmdstat_set:calls=(\d+)/.exec(stats);
  return m ? Number(m[1]) : 0;
}

async function main() {
  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '',
                                        '--appendonly', 'no'], {stdio: 'ignore'});
  try {
    const client = redis.createClient({socket: {host: '127.0.0.1', port, reconnectStrategy: () => 20}});
    client.on('error', () => {});
    await client.connect();

    // Control: the library alone keeps retrying, and takes the key once it is free.
    await client.set('lock.control', 'someone else');
    const taken = redisLock(client)('control', 60000);
    await client.del('lock.control');
    await Promise.race([taken, pause(windowMs).then(() => assert.fail('the library did not retry'))]);

    // The adapter: one SET, "held", and nothing after it.
    await client.set('lock.k', 'someone else');
    const adapter = startAdapter(port);
    assert.strictEqual((await adapter.next()).ready, true);
    await client.configResetStat();
    assert.deepStrictEqual(await adapter.ask({op: 'acquire', key: 'k', ttl_ms: 60000, wait_ms: 0}),
                           {ok: false, error: 'held'});
    await client.del('lock.k');
    await pause(windowMs);
    assert.strictEqual(await client.exists('lock.k'), 0, 'a retry took the lock behind lockbench\'s back');
    assert.strictEqual(await setCalls(client), 1, 'the adapter sent more than one SET');

    // It still works, and its release reports what DEL removed.
    const held = await adapter.ask({op: 'acquire', key: 'k', ttl_ms: 60000, wait_ms: 0});
    assert.strictEqual(held.ok, true);
    assert.strictEqual(await client.get('lock.k'), held.token);
    assert.deepStrictEqual(await adapter.ask({op: 'release', key: 'k'}), {ok: true, removed_on: [0]});
    assert.strictEqual(await client.exists('lock.k'), 0);
    adapter.child.stdin.end();
    await new Promise((done) => adapter.child.on('exit', done));
    await client.quit();
    console.log('redis-lock adapter: one attempt, no retry left behind');
  } finally {
    server.kill('SIGKILL');
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
