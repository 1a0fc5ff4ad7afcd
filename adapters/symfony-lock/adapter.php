<?php
// lockbench adapter for Symfony's Lock component (Debian: php-symfony-lock 5.4) over phpredis
// (php-redis). Speaks lockbench's adapter protocol (docs/adapters.md).
//
// params.store chooses the store:
//   "redis" (default; run name symfony-redis): one RedisStore on node 0. Its save is one Lua
//     script: a sorted set per key, each holder's random token scored with its expiry
//     (Redis's own TIME + ttl, in ms; ceil(ttl_s * 1000) sent as a number), PEXPIREAT on the
//     key; release ZREMs our token. Timed by the server's clock, not the client's.
//   "combined" (run name symfony-combined): CombinedStore with ConsensusStrategy over one
//     RedisStore per node of LOCKBENCH_NODES, Symfony's own Redlock. It saves on the stores
//     one after another (not in parallel), stops as soon as a majority can no longer be
//     reached, and checks the elapsed time: each store's save first cuts the Key's lifetime
//     to microtime(true) + ttl, so the lock is refused when the first store's save began more
//     than ttl ago by the client's WALL clock (microtime, not a monotonic clock), with no
//     drift allowance. A refused or failed quorum deletes the key on every store.
// The lock is made as LockFactory makes it: Lock(Key, store, ttl, autoRelease false), so
// acquire() is save() then refresh() (putOffExpiration: the TTL again from now), then the
// Key's lifetime is checked. acquire(false) is one attempt (only acquire(true) loops). Nothing
// renews on its own; `extend` is refresh(ttl), which replaces the TTL (no "add": refused).
// Cannot report: `nodes` for the combined store (it counts successes, not which ones), and
// `removed_on` for either (RedisStore::delete throws away its script's answer; Lock::release
// only checks that the key is no longer ours). validity_ms: getRemainingLifetime() plus the
// time since the acquire began.
require_once (getenv('LOCKBENCH_KIT') ?: __DIR__ . '/../kit') . '/lockbench_adapter.php';
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Lock;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

if (!class_exists(\Redis::class) || !class_exists(RedisStore::class)) {
    Lockbench::missing('phpredis or Symfony Lock', 'apt-get install php-redis php-symfony-lock');
}
$env = Lockbench::env();
$ttl_s = $env->ttlMs / 1000;  // Symfony's TTLs are float seconds
$store_param = $env->params['store'] ?? 'redis';
if (!in_array($store_param, ['redis', 'combined'], true)) {
    Lockbench::notReady('params: store ' . json_encode($store_param) . ' is not one of redis, combined');
}
$combined = $store_param === 'combined';

// One phpredis connection, per command timeout as lockbench's own clients. Behind Sentinel:
// ask it for the master (phpredis' RedisSentinel), reach that by this client's own path.
function connect_node(array $node): \Redis
{
    global $env;
    if ($env->sentinels) {
        [$sh, $sp] = $env->sentinels[0];
        $master = (new \RedisSentinel($sh, $sp, $env->connectTimeoutMs / 1000))->getMasterAddrByName($env->masterName);
        $node = $env->ownPath($master[0], $master[1]);
    }
    $redis = new \Redis();
    $redis->connect($node[0], $node[1], $env->connectTimeoutMs / 1000, null, 0, $env->commandTimeoutMs / 1000);
    return $redis;
}

function make_store(): object
{
    global $env, $ttl_s, $combined;
    if (!$combined) return new RedisStore(connect_node($env->nodes[0]), $ttl_s);
    // A node that cannot be reached at start is a store whose every command fails.
    $stores = array_map(fn ($node) => new RedisStore(lazy_node($node), $ttl_s), $env->nodes);
    return new CombinedStore($stores, new ConsensusStrategy());
}

function lazy_node(array $node): \Redis
{
    try {
        return connect_node($node);
    } catch (\RedisException $e) {
        Lockbench::log("node $node[0]:$node[1]: " . $e->getMessage());
        return new \Redis();  // not connected: each command throws, a failed vote
    }
}

$lock = null;
try {
    $store = make_store();
} catch (\RedisException $e) {
    Lockbench::notReady('cannot reach Redis: ' . $e->getMessage());
}
// RedisStore asks each node once, on its first script, whether scripts may call TIME: done
// here, as a long-lived worker would have, so that an acquire's replies are the save's own.
try {
    $store->exists(new Key('lockbench-probe'));
} catch (\Exception $e) {
    Lockbench::log('probe: ' . $e->getMessage());
}

function acquire(array $req): array
{
    global $store, $lock, $ttl_s, $combined;
    $store ??= make_store();
    $key = new Key($req['key']);
    $lock = new Lock($key, $store, $ttl_s, false);
    $start = hrtime(true);
    try {
        if (!$lock->acquire(false)) return ['ok' => false, 'error' => 'held'];
    } catch (\Exception $e) {
        // phpredis reconnects a dropped connection once, on the next command; if that fails
        // too (the node is still restarting) the connection stays "went away" until connect()
        // is called again. A PHP application connects per request: the next acquire does.
        if (!$combined) $store = null;
        throw $e;
    }
    $elapsed_ms = (hrtime(true) - $start) / 1e6;
    // The token is the member RedisStore added to the key's sorted set (the same on every node).
    $answer = ['ok' => true, 'token' => $key->getState(RedisStore::class),
               'validity_ms' => $lock->getRemainingLifetime() * 1000 + $elapsed_ms];
    if (!$combined) $answer['nodes'] = [0];
    return $answer;
}

function release(array $req): array
{
    global $lock;
    $lock->release();  // throws LockReleasingException if the key is still ours afterwards
    return ['ok' => true];
}

function extend(array $req): array
{
    global $lock;
    if (!($req['replace'] ?? false)) return ['ok' => false, 'error' => 'Symfony refresh() sets the TTL from now: no add'];
    $lock->refresh($req['ttl_ms'] / 1000);
    return ['ok' => true, 'validity_ms' => $lock->getRemainingLifetime() * 1000];
}

// Behind Sentinel a request that failed asks Sentinel again at the next acquire (the kit answers it).
function or_ask_again(callable $op): callable
{
    return function (array $req) use ($op) {
        global $env, $store;
        try {
            return $op($req);
        } catch (\Exception $e) {
            if ($env->sentinels) $store = null;
            throw $e;
        }
    };
}

$version = trim((string) shell_exec("dpkg-query -W -f='\${Version}' php-symfony-lock 2>/dev/null"));
Lockbench::ready("php-symfony-lock $version (phpredis " . phpversion('redis') . ')', $combined
    ? 'CombinedStore+ConsensusStrategy: RedisStore on each node in turn, majority, refused when ttl ran out by the wall clock'
    : 'RedisStore: sorted set of tokens scored by server TIME + ttl, PEXPIREAT, ZREM release');
Lockbench::serve(['acquire' => or_ask_again('acquire'), 'release' => or_ask_again('release'),
                  'extend' => or_ask_again('extend')]);
