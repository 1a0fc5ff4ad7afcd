// lockbench's adapter protocol for a Node lock library (docs/adapters.md). CommonJS,
// Node's own modules only.
//
// The protocol: lockbench starts the adapter with its settings in LOCKBENCH_* variables; the
// adapter's first stdout line is {"ready": true, "library": ..., "algorithm": ..., "fencing": ...}
// (or {"ready": false, "error": ...} and exit 1); then it reads one JSON request a line on stdin
// (acquire, release, extend), one at a time, and answers each with one line {"ok": ..., ...};
// {"event": "lost", "detail": ...} may come at any time, unasked. It exits when stdin closes.
// stdout carries only those lines; logs and stack traces go to stderr.
//
// This module does all of that: `env` (the settings, parsed), `ready`, `notReady`, `missing`,
// `serve` (the request loop: requests are answered in order, one at a time; a handler's return
// value, or what its promise resolves to, is the answer (reset: below); one that throws or rejects answers
// {"ok": false, "error": "<Type>: <message>"}, as does an unknown op or a line that is not
// JSON, and the loop goes on; stdin closed: onClose(), then exit 0 once every answer is
// written), `lost`/`event`/`say` (whole lines, at any time), `settled` and `firstEvent` (wait
// for connections, at most the connect timeout). On require it sends console.log to stderr
// and turns an unhandled rejection or an uncaught exception (a library's timer, a
// connection's 'error' event nobody listens to) into a line on stderr rather than the end of
// the adapter; one before the ready line becomes the not-ready line. An adapter finds this file through
// LOCKBENCH_KIT (the folder lockbench gives every adapter), else by its own path:
//
//   const path = require('path');
//   const kit = require(path.join(process.env.LOCKBENCH_KIT || path.join(__dirname, '..', 'kit'), 'lockbench-adapter.js'));
//   let MyLock;
//   try { MyLock = require('my-lock'); } catch (e) { kit.missing(e, 'install it with (cd adapters/MY-LOCK && npm ci)'); }
//   const lock = new MyLock({...kit.env.nodes[0], timeout: kit.env.commandTimeoutMs});
//   lock.on('lost', (why) => kit.lost(String(why)));
//   kit.settled([lock.connect()]).then(() => {
//     kit.ready(`my-lock ${require('my-lock/package.json').version}`, 'SET NX PX with a random token, Lua release');
//     kit.serve({acquire: async (req) => ({ok: true, token: await lock.acquire(req.key, req.ttl_ms)}),
//                release: async () => ({ok: await lock.release()})});
//   });
'use strict';
const readline = require('readline');

let readySaid = false;

// One protocol line, written whole (stdout is a pipe: Node writes it synchronously).
function say(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// A line on stderr: the adapter's log, kept in the run's folder.
function log(text) {
  process.stderr.write(`${text}\n`);
}

// An error as an answer's text: "<Type>: <message>".
function describe(e) {
  if (e instanceof Error) return `${e.name || e.constructor.name}: ${e.message}`;
  return String(e);
}

// The first line says why the adapter cannot run; exit 1.
function notReady(error) {
  say({ready: false, error});
  process.exit(1);
}

// A package that is not installed: its error's first line (or "<what> is missing"), then how to install it.
function missing(what, how) {
  const why = what instanceof Error ? String(what.message).split('\n')[0] : `${what} is missing`;
  notReady(`${why}: ${how}`);
}

// The ready line: library "NAME VERSION" (read from the package), algorithm in one line.
// During a reset it is the reset's answer instead.
function ready(library, algorithm, fencing = false, extra = {}) {
  if (resetting) {
    resetting.described = {library, algorithm, fencing, ...extra};
    if (resetting.served) resetting.finish();
    return;
  }
  say({ready: true, library, algorithm, fencing, ...extra});
  readySaid = true;
}

// An unsolicited line, {"event": kind, ...}, at any time.
function event(kind, fields = {}) {
  say({event: kind, ...fields});
}

// The library says the lock is lost.
function lost(detail) {
  event('lost', {detail});
}

// Resolves once every promise has settled (resolved or rejected), or after `ms`, whichever
// comes first: a node behind a blackhole never answers. The default is the connect timeout
// and one command's: a client is ready after its connect and a first exchange (ioredis's
// ready check is an INFO). With the connect timeout alone (200 ms), an adapter on a busy
// machine said ready before its connection was, its first acquire failed at once, and the
// reconnect's INFO then waited behind the very fault that held its replies.
function settled(promises, ms = env.connectTimeoutMs + env.commandTimeoutMs) {
  let timer;
  const late = new Promise((done) => { timer = setTimeout(done, ms); });
  return Promise.race([Promise.allSettled(promises), late]).finally(() => clearTimeout(timer));
}

// Resolves at the first of `events` the emitter emits (a client's 'ready' or 'error').
function firstEvent(emitter, events) {
  return new Promise((done) => {
    const first = (...args) => {
      for (const e of events) emitter.removeListener(e, first);
      done(args);
    };
    for (const e of events) emitter.on(e, first);
  });
}

// Answers requests in order, one at a time, until stdin closes; then onClose() (may be async),
// and exit 0 once every answer is written. handlers: op name -> function(request) -> answer or promise.
//
// serve(handlers, onClose, {kept: true}) says the adapter may be kept across repetitions
// (lockbench's matrix keeps it rather than start a Node.js for every client of every run):
// onClose() drops everything its library holds (connections, timers, state), and running the
// adapter's file again builds everything anew. Then {"op": "reset"} at a run's end has
// onClose() drop the library's connections and state, and the adapter waits, holding nothing;
// {"op": "reset", "env": {LOCKBENCH_*: ...}} readies it for another run: `env` becomes the new
// settings and the adapter's own file runs again (the libraries it requires stay loaded: that
// is the start-up saved), its ready() and serve() making the reset's answer {"ok": true,
// "library": ..., ...} and the handlers from then on. Without kept (or onClose), a reset
// answers {"ok": false, ...}, and lockbench starts a new adapter for each run.
const SETTINGS = ['NODES', 'KEY', 'CLIENT', 'TTL_MS', 'PARAMS', 'COMMAND_TIMEOUT_MS', 'OP_TIMEOUT_MS', 'CONNECT_TIMEOUT_MS',
  'SENTINELS', 'MASTER_NAME', 'ADDRESS_MAP', 'USER', 'PASSWORD', 'DATABASE'].map((n) => `LOCKBENCH_${n}`);
let current = null;  // {handlers, onClose} of the adapter's latest run of its file
let resetting = null;  // during a reset: {described, served}
function serve(handlers, onClose, {kept = false} = {}) {
  if (resetting) {
    resetting.served = {handlers, onClose, kept};
    if (resetting.described) resetting.finish();
    return;
  }
  current = {handlers, onClose, kept};
  const rl = readline.createInterface({input: process.stdin});
  let queue = Promise.resolve();
  rl.on('line', (line) => {
    queue = queue.then(() => answer(current.handlers, line)).then((reply) => {
      try {
        say(reply);
      } catch (e) {  // an answer JSON cannot carry (a BigInt, a cycle)
        say({ok: false, error: describe(e)});
      }
    });
  });
  rl.on('close', () => {
    queue.then(() => current.onClose && !current.closed && current.onClose())
         .catch((e) => log(`lockbench adapter: on close: ${e && e.stack || e}`))
         .finally(() => process.exit(0));
  });
}

async function reset(req) {
  if (!current.kept || typeof current.onClose !== 'function') {
    return {ok: false, error: 'reset is not supported: the adapter does not serve(handlers, onClose, {kept: true})'};
  }
  if (!current.closed) await current.onClose();
  current.closed = true;
  if (req.env === undefined) return {ok: true};  // the run's end: nothing held until the next
  if (req.env === null || typeof req.env !== 'object') return {ok: false, error: 'reset: env is not an object'};
  for (const name of SETTINGS) delete process.env[name];  // the last run's, which this one may not have
  for (const [name, value] of Object.entries(req.env)) process.env[name] = String(value);
  Object.assign(env, readEnv(req.env));  // the same object every run of the file holds
  const done = {described: null, served: null};
  const both = new Promise((finish) => { done.finish = finish; });
  resetting = done;
  const main = require.main.filename;
  delete require.cache[main];
  require(main);  // its top level runs again; what it awaits before ready() and serve() too
  let timer;
  const late = new Promise((r) => { timer = setTimeout(r, env.opTimeoutMs + env.connectTimeoutMs); });
  await Promise.race([both, late]).finally(() => clearTimeout(timer));
  resetting = null;
  if (!done.described || !done.served) {
    // Half started: its file may still say ready later, as a second adapter on the same pipes.
    // It ends once this answer is written (lockbench starts another).
    setImmediate(() => process.exit(1));
    return {ok: false, error: 'reset: the adapter did not say ready and serve'};
  }
  current = done.served;
  return {ok: true, ...done.described};
}

async function answer(handlers, line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    return {ok: false, error: `not JSON: ${line.trim().slice(0, 200)}`};
  }
  if (req === null || typeof req !== 'object' || typeof req.op !== 'string') {
    return {ok: false, error: `not a request (no op): ${line.trim().slice(0, 200)}`};
  }
  if (req.op === 'reset') {
    try {
      return await reset(req);
    } catch (e) {
      resetting = null;
      return {ok: false, error: `reset: ${describe(e)}`};
    }
  }
  const handler = Object.hasOwn(handlers, req.op) ? handlers[req.op] : undefined;
  if (typeof handler !== 'function') return {ok: false, error: `${req.op} is not supported`};
  let reply;
  try {  // a request that fails fails alone: the adapter goes on answering
    reply = await handler(req);
  } catch (e) {
    return {ok: false, error: describe(e)};
  }
  if (reply === null || typeof reply !== 'object' || typeof reply.ok !== 'boolean') {
    return {ok: false, error: `${req.op} answered ${JSON.stringify(reply)}, not {"ok": true|false, ...}`};
  }
  return reply;
}

// A library's asynchronous failure is evidence for stderr, never the end of the adapter.
process.on('unhandledRejection', (e) => log(`lockbench adapter: unhandled rejection: ${e && e.stack || e}`));
process.on('uncaughtException', (e) => {
  log(`lockbench adapter: uncaught exception: ${e && e.stack || e}`);
  if (!readySaid) notReady(describe(e));
});
console.log = console.info = console.debug = console.error;  // stdout is the protocol's

function parseAddress(text) {
  const at = text.lastIndexOf(':');
  return {host: text.slice(0, at), port: Number(text.slice(at + 1))};
}

// The settings lockbench gives every adapter; an absent number is undefined.
function readEnv(vars) {
  const number = (name) => (vars[name] ? Number(vars[name]) : undefined);
  const addresses = (name) => (vars[name] ? vars[name].split(',').map(parseAddress) : []);
  const params = JSON.parse(vars.LOCKBENCH_PARAMS || '{}');
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw new Error(`LOCKBENCH_PARAMS is not an object: ${vars.LOCKBENCH_PARAMS}`);
  }
  const addressMap = {};  // each address a Sentinel may name -> this client's own {host, port}
  for (const [from, to] of Object.entries(JSON.parse(vars.LOCKBENCH_ADDRESS_MAP || '{}'))) {
    addressMap[from] = parseAddress(to);
  }
  return {
    nodes: addresses('LOCKBENCH_NODES'),  // [{host, port}], node 0 first
    key: vars.LOCKBENCH_KEY,
    client: number('LOCKBENCH_CLIENT'),  // -1: the start-up check
    ttlMs: number('LOCKBENCH_TTL_MS'),
    params,
    commandTimeoutMs: number('LOCKBENCH_COMMAND_TIMEOUT_MS'),
    opTimeoutMs: number('LOCKBENCH_OP_TIMEOUT_MS'),
    connectTimeoutMs: number('LOCKBENCH_CONNECT_TIMEOUT_MS'),
    sentinels: addresses('LOCKBENCH_SENTINELS'),  // under Sentinel: where to ask for the master
    masterName: vars.LOCKBENCH_MASTER_NAME,
    addressMap,  // ioredis takes it as its natMap
  };
}

let env;
try {
  env = readEnv(process.env);
} catch (e) {  // a malformed setting: nothing can run
  notReady(`lockbench's environment: ${describe(e)}`);
}

module.exports = {env, ready, notReady, missing, serve, say, event, lost, log, describe, settled, firstEvent};
