<?php
// lockbench adapter for Laravel's Redis cache lock (Debian: php-illuminate-cache and
// php-illuminate-redis 8.83) over phpredis (php-redis). Speaks lockbench's adapter protocol
// (docs/adapters.md). Run name: laravel.
//
// The lock is what Cache::lock($name, $seconds) gives a Laravel app on a phpredis connection:
// Illuminate\Cache\RedisStore::lock() makes a PhpRedisLock (a RedisLock). Its acquire() is
// one SET key owner EX seconds NX (the owner a random 16-character string); release() a Lua
// compare-and-delete that answers whether it removed the key. The TTL is an int of whole
// SECONDS: a run's ttl_ms that is not a whole number of seconds is refused in the ready line
// rather than rounded. The connection is built without the framework's container: a
// RedisManager with the phpredis driver and one connection, as config/database.php would
// describe it (timeout and read_timeout from lockbench's connect and per-command timeouts).
// One attempt per acquire: acquire() tries once (only block() loops). Nothing renews, and
// Laravel 8's lock has no extend: every `extend` is refused. Cannot report validity_ms (the
// library computes none). No Sentinel: Laravel 8.83's phpredis connector cannot use one (only
// the predis driver's 'replication' => 'sentinel' can), so the failover case is not run.
require_once (getenv('LOCKBENCH_KIT') ?: __DIR__ . '/../kit') . '/lockbench_adapter.php';
require_once '/usr/share/php/Illuminate/Cache/autoload.php';
require_once '/usr/share/php/Illuminate/Redis/autoload.php';

use Illuminate\Cache\RedisStore;
use Illuminate\Redis\RedisManager;

if (!class_exists(\Redis::class) || !class_exists(RedisStore::class) || !class_exists(RedisManager::class)) {
    Lockbench::missing('phpredis or Illuminate', 'apt-get install php-redis php-illuminate-cache php-illuminate-redis');
}
$env = Lockbench::env();
$ttl_ms = $env->ttlMs;
if ($ttl_ms % 1000 !== 0) Lockbench::notReady("Laravel's lock TTL is whole seconds: ttl_ms $ttl_ms is not");
[$host, $port] = $env->nodes[0];
$manager = new RedisManager(null, 'phpredis', ['default' => [
    'host' => $host, 'port' => $port,
    'timeout' => $env->connectTimeoutMs / 1000,
    'read_timeout' => $env->commandTimeoutMs / 1000,
]]);
$store = new RedisStore($manager, '', 'default');  // no prefix: the key is lockbench's own
$lock = null;

function acquire(array $req): array
{
    global $store, $lock, $ttl_ms;
    $lock = $store->lock($req['key'], intdiv($ttl_ms, 1000));
    if (!$lock->acquire()) return ['ok' => false, 'error' => 'held'];
    return ['ok' => true, 'token' => $lock->owner(), 'nodes' => [0]];
}

function release(array $req): array
{
    global $lock;
    if (!$lock->release()) return ['ok' => false, 'error' => 'not owned: the key was no longer ours'];
    return ['ok' => true, 'removed_on' => [0]];
}

try {
    $manager->connection()->ping();  // ready means connected
} catch (\RedisException $e) {
    Lockbench::notReady('cannot reach Redis: ' . $e->getMessage());
}
$version = trim((string) shell_exec("dpkg-query -W -f='\${Version}' php-illuminate-cache 2>/dev/null"));
Lockbench::ready("php-illuminate-cache $version (phpredis " . phpversion('redis') . ')',
                 'SET NX EX whole seconds with a random owner, Lua compare-and-delete release, no renewal');
Lockbench::serve(['acquire' => 'acquire', 'release' => 'release',
                  'extend' => fn () => ['ok' => false, 'error' => "Laravel 8's lock cannot be extended"]]);
