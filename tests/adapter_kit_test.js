// The Node adapter kit (adapters/kit/lockbench-adapter.js) with a fake library, no Redis.
//
// A kit-based adapter whose handlers throw and reject, whose timers throw, whose connection
// emits 'error' with nobody listening, whose promise rejects unhandled, and whose library
// announces a lost lock from a timer while a request is being served: fed requests on stdin,
// it must print the ready line first, answer every request in order (an error answer, never a
// crash), keep every line whole, and exit 0 once stdin closes and every queued answer is
// written. Each handler resolves only after what it set off has happened (setImmediate queued
// before the throw, a counter for the timer), so nothing depends on timing. Run by ctest.
'use strict';
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const test = require('node:test');

const kitDir = path.join(__dirname, '..', 'adapters', 'kit');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adapter-kit-test-'));
process.on('exit', () => fs.rmSync(dir, {recursive: true, force: true}));

const fake = String.raw`'use strict';
const path = require('path');
const {EventEmitter} = require('events');
const kit = require(path.join(process.env.LOCKBENCH_KIT, 'lockbench-adapter.js'));

console.log("a library's chatter on stdout");  // must end up on stderr
let holder = null;
let heartbeat = null;
const ops = {
  acquire(req) {
    if (holder !== null) return {ok: false, error: 'held'};
    holder = req.key;
    return {ok: true, token: 't-' + req.key, nodes: [0]};
  },
  boom() { throw new Error('the library failed'); },
  async rejects() { throw new TypeError('a reply it did not expect'); },
  throwsAString() { throw 'a string'; },
  timerThrows: () => new Promise((done) => setTimeout(() => {
    setImmediate(done, {ok: true});  // runs after the throw below has been dealt with
    throw new RangeError('the refresh timer failed');
  }, 0)),
  connectionError: () => new Promise((done) => setTimeout(() => {
    setImmediate(done, {ok: true});
    new EventEmitter().emit('error', new Error('connection reset, nobody listening'));
  }, 0)),
  unhandledRejection() {
    Promise.reject(new Error('a refresh rejected, nobody listening'));
    return new Promise((done) => setImmediate(done, {ok: true}));
  },
  lostWhileServing: () => new Promise((done) => setTimeout(() => {
    for (let i = 0; i < 3; i++) kit.lost('while serving ' + i);
    done({ok: true});
  }, 0)),
  startHeartbeat(req) {  // from now on a timer announces the loss, while the next requests are answered
    let beats = 0;
    heartbeat = new Promise((done) => {
      const timer = setInterval(() => {
        kit.lost('beat ' + beats + ': ' + 'x'.repeat(req.size));
        if (++beats === req.n) {
          clearInterval(timer);
          done();
        }
      }, 0);
    });
    return {ok: true};
  },
  joinHeartbeat: async () => (await heartbeat, {ok: true, joined: true}),
  slow: () => new Promise((done) => setImmediate(() => setImmediate(done, {ok: true, slow: true}))),
  notAnAnswer() {},
  showEnv: () => ({ok: true, env: kit.env}),
};
kit.settled([Promise.reject(new Error('a node that did not connect')), Promise.resolve()]).then(() => {
  kit.ready('fake-lock 1.0', 'a map in memory', true);
  kit.serve(ops, () => new Promise((done) => setImmediate(() => {
    process.stderr.write('closed cleanly\n');
    done();
  })), {kept: true});
});
`;
fs.writeFileSync(path.join(dir, 'fake-adapter.js'), fake);

const baseEnv = {
  LOCKBENCH_NODES: '127.0.0.1:7001,127.0.0.1:7002', LOCKBENCH_KEY: 'lock', LOCKBENCH_CLIENT: '3',
  LOCKBENCH_TTL_MS: '500', LOCKBENCH_PARAMS: '{"fence": true, "variant": "x"}', LOCKBENCH_COMMAND_TIMEOUT_MS: '200',
  LOCKBENCH_OP_TIMEOUT_MS: '2000', LOCKBENCH_CONNECT_TIMEOUT_MS: '1000', LOCKBENCH_SENTINELS: '127.0.0.1:8001',
  LOCKBENCH_MASTER_NAME: 'lockbench', LOCKBENCH_ADDRESS_MAP: '{"10.0.0.1:6379": "127.0.0.1:9001"}',
};

// The adapter as lockbench runs it, with every request written at once and stdin then closed.
function run(requests, {source = null, env = {}} = {}) {
  let file = path.join(dir, 'fake-adapter.js');
  if (source !== null) {
    file = path.join(dir, 'other-adapter.js');
    fs.writeFileSync(file, source);
  }
  const vars = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LOCKBENCH_')));
  const input = requests.map((r) => (typeof r === 'string' ? r : JSON.stringify(r) + '\n')).join('');
  const p = spawnSync(process.execPath, [file], {input, encoding: 'utf8', timeout: 20000, maxBuffer: 64 << 20,
                                                 env: {...vars, ...baseEnv, LOCKBENCH_KIT: kitDir, ...env}});
  const lines = p.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));  // every line whole
  return {status: p.status, signal: p.signal, lines, stderr: p.stderr};
}

test('requests, errors and events', () => {
  const p = run([
    {op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0},
    {op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0},
    {op: 'boom'},
    {op: 'rejects'},
    {op: 'throwsAString'},
    {op: 'timerThrows'},
    {op: 'connectionError'},
    {op: 'unhandledRejection'},
    {op: 'lostWhileServing'},
    {op: 'notAnAnswer'},
    {op: 'extend', key: 'k', ttl_ms: 500, replace: true},
    {op: 'toString'},
    'this is not JSON\n',
    '[1, 2]\n',
    {op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0},
  ]);
  assert.strictEqual(p.status, 0, p.stderr);
  assert.deepStrictEqual(p.lines, [
    {ready: true, library: 'fake-lock 1.0', algorithm: 'a map in memory', fencing: true},
    {ok: true, token: 't-k', nodes: [0]},
    {ok: false, error: 'held'},
    {ok: false, error: 'Error: the library failed'},
    {ok: false, error: 'TypeError: a reply it did not expect'},
    {ok: false, error: 'a string'},
    {ok: true},
    {ok: true},
    {ok: true},
    {event: 'lost', detail: 'while serving 0'},
    {event: 'lost', detail: 'while serving 1'},
    {event: 'lost', detail: 'while serving 2'},
    {ok: true},
    {ok: false, error: 'notAnAnswer answered undefined, not {"ok": true|false, ...}'},
    {ok: false, error: 'extend is not supported'},
    {ok: false, error: 'toString is not supported'},
    {ok: false, error: 'not JSON: this is not JSON'},
    {ok: false, error: 'not a request (no op): [1, 2]'},
    {ok: false, error: 'held'},
  ]);
  // The asynchronous failures were logged, and the adapter went on; stray output is a log.
  for (const text of ['the refresh timer failed', 'connection reset, nobody listening',
                      'a refresh rejected, nobody listening', "a library's chatter on stdout", 'closed cleanly']) {
    assert.ok(p.stderr.includes(text), `stderr lacks "${text}":\n${p.stderr}`);
  }
});

test('events from a timer never interleave with answers', () => {
  const n = 300, size = 3000, asked = 300;
  const requests = [{op: 'startHeartbeat', n, size}];
  for (let i = 0; i < asked; i++) requests.push({op: 'acquire', key: `k${i}`, ttl_ms: 500, wait_ms: 0});
  requests.push({op: 'joinHeartbeat'});
  const p = run(requests);
  assert.strictEqual(p.status, 0, p.stderr);
  const events = p.lines.slice(1).filter((l) => 'event' in l);
  const answers = p.lines.slice(1).filter((l) => !('event' in l));
  assert.deepStrictEqual(events, Array.from({length: n}, (_, i) => ({event: 'lost', detail: `beat ${i}: ${'x'.repeat(size)}`})));
  assert.deepStrictEqual(answers, [{ok: true}, {ok: true, token: 't-k0', nodes: [0]},
                                   ...Array(asked - 1).fill({ok: false, error: 'held'}), {ok: true, joined: true}]);
});

test('stdin closed: every queued answer is written, then exit 0', () => {
  const p = run([{op: 'slow'}, {op: 'slow'}, {op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0}, {op: 'slow'}]);
  assert.strictEqual(p.status, 0, p.stderr);
  assert.deepStrictEqual(p.lines.slice(1), [{ok: true, slow: true}, {ok: true, slow: true},
                                            {ok: true, token: 't-k', nodes: [0]}, {ok: true, slow: true}]);
  assert.ok(p.stderr.includes('closed cleanly'), p.stderr);
  const idle = run([]);
  assert.strictEqual(idle.status, 0, idle.stderr);
  assert.deepStrictEqual(idle.lines.length, 1);
});

test('a reset runs the file again with the new settings; an adapter not kept refuses it', () => {
  const newEnv = {...baseEnv, LOCKBENCH_KEY: 'other', LOCKBENCH_CLIENT: '5', LOCKBENCH_NODES: '127.0.0.1:7101'};
  delete newEnv.LOCKBENCH_SENTINELS;
  // A reset without env (a run's end) only closes; the reset that follows does not close again.
  const p = run([{op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0}, {op: 'reset'}, {op: 'reset', env: newEnv},
                 {op: 'showEnv'}, {op: 'acquire', key: 'k', ttl_ms: 500, wait_ms: 0}]);
  assert.strictEqual(p.status, 0, p.stderr);
  assert.deepStrictEqual(p.lines[1], {ok: true, token: 't-k', nodes: [0]});
  assert.deepStrictEqual(p.lines[2], {ok: true});
  assert.deepStrictEqual(p.lines[3], {ok: true, library: 'fake-lock 1.0', algorithm: 'a map in memory', fencing: true});
  assert.deepStrictEqual([p.lines[4].env.key, p.lines[4].env.client, p.lines[4].env.nodes, p.lines[4].env.sentinels],
                         ['other', 5, [{host: '127.0.0.1', port: 7101}], []]);
  // The run before's lock is forgotten: the file's state is new.
  assert.deepStrictEqual(p.lines[5], {ok: true, token: 't-k', nodes: [0]});
  assert.strictEqual(p.stderr.split('closed cleanly').length - 1, 2, p.stderr);  // at the run's end, then at stdin's

  assert.ok(fake.includes('{kept: true}'));
  const refused = run([{op: 'reset', env: baseEnv}, {op: 'acquire', key: 'k', ttl_ms: 1, wait_ms: 0}],
                      {source: fake.replace('{kept: true}', '{kept: false}')});
  assert.strictEqual(refused.status, 0, refused.stderr);
  assert.strictEqual(refused.lines[1].ok, false);
  assert.match(refused.lines[1].error, /reset is not supported/);
  assert.deepStrictEqual(refused.lines[2], {ok: true, token: 't-k', nodes: [0]});
});

test('the environment, parsed', () => {
  const p = run([{op: 'showEnv'}]);
  assert.deepStrictEqual(p.lines[1], {ok: true, env: {
    nodes: [{host: '127.0.0.1', port: 7001}, {host: '127.0.0.1', port: 7002}], key: 'lock', client: 3, ttlMs: 500,
    params: {fence: true, variant: 'x'}, commandTimeoutMs: 200, opTimeoutMs: 2000, connectTimeoutMs: 1000,
    sentinels: [{host: '127.0.0.1', port: 8001}], masterName: 'lockbench',
    addressMap: {'10.0.0.1:6379': {host: '127.0.0.1', port: 9001}}}});
  const bare = run([{op: 'showEnv'}], {env: {LOCKBENCH_PARAMS: '', LOCKBENCH_SENTINELS: '', LOCKBENCH_ADDRESS_MAP: ''}});
  assert.deepStrictEqual(bare.lines[1].env.params, {});
  assert.deepStrictEqual(bare.lines[1].env.sentinels, []);
  assert.deepStrictEqual(bare.lines[1].env.addressMap, {});
});

test('not ready: malformed params, a missing package, an exception before the ready line', () => {
  const bad = run([{op: 'acquire'}], {env: {LOCKBENCH_PARAMS: '{not json'}});
  assert.strictEqual(bad.status, 1);
  assert.strictEqual(bad.lines.length, 1);
  assert.strictEqual(bad.lines[0].ready, false);
  assert.match(bad.lines[0].error, /^lockbench's environment: SyntaxError: /);

  const missing = run([], {source: `const kit = require(process.env.LOCKBENCH_KIT + '/lockbench-adapter.js');
    try { require('no-such-lock-library'); } catch (e) { kit.missing(e, 'install it with (cd adapters/x && npm ci)'); }
    kit.ready('not reached', '');`});
  assert.strictEqual(missing.status, 1);
  assert.deepStrictEqual(missing.lines, [{ready: false,
    error: "Cannot find module 'no-such-lock-library': install it with (cd adapters/x && npm ci)"}]);

  const thrown = run([], {source: `require(process.env.LOCKBENCH_KIT + '/lockbench-adapter.js');
    throw new RangeError('no server');`});
  assert.strictEqual(thrown.status, 1);
  assert.deepStrictEqual(thrown.lines, [{ready: false, error: 'RangeError: no server'}]);
  assert.ok(thrown.stderr.includes('no server'), thrown.stderr);
});
