<?php
// The PHP adapter kit (adapters/kit/lockbench_adapter.php) with a fake library, no Redis.
//
// A kit-based adapter whose handlers throw (an exception with a previous one, a TypeError),
// whose library warns and echoes, and whose library announces a lost lock from a signal
// handler (PHP's timer: pcntl) while a request is being served, and throws from one: fed
// requests on stdin, it must print the ready line first, answer every request in order (an
// error answer, never a crash), keep stdout to protocol lines, and exit 0 when stdin closes.
// The signals are sent to itself and dispatched at once, so nothing depends on timing. Run by
// ctest; exits 1 on the first failed check.

$kit = realpath(__DIR__ . '/../adapters/kit');
$dir = sys_get_temp_dir() . '/adapter-kit-test-' . getmypid();
mkdir($dir);
register_shutdown_function(function () use ($dir) {
    foreach (glob("$dir/*") as $f) unlink($f);
    rmdir($dir);
});

$fake = <<<'PHP'
<?php
require_once getenv('LOCKBENCH_KIT') . '/lockbench_adapter.php';

echo "a library's chatter on stdout\n";  // must end up on stderr
$holder = null;
pcntl_signal(SIGUSR1, fn () => Lockbench::lost('heartbeat: the lock is gone'));
pcntl_signal(SIGUSR2, fn () => throw new \LogicException('the refresh timer failed'));

function acquire(array $req): array
{
    global $holder;
    if ($holder !== null) return ['ok' => false, 'error' => 'held'];
    $holder = $req['key'];
    return ['ok' => true, 'token' => "t-{$req['key']}", 'nodes' => [0]];
}

Lockbench::ready('fake-lock 1.0', 'an array in memory', true);
Lockbench::serve([
    'acquire' => 'acquire',
    'boom' => fn () => throw new \RuntimeException('the library failed', 0, new \Exception('connection reset')),
    'typeError' => fn () => ['ok' => true, 'n' => strlen([])],
    'warns' => function () {
        $r = file_get_contents('/nonexistent/lockbench-kit-test');  // an E_WARNING, as a library's
        echo "echoed by a library\n";
        return ['ok' => $r !== false];
    },
    'lostWhileServing' => function () {
        for ($i = 0; $i < 3; $i++) {
            posix_kill(getmypid(), SIGUSR1);
            pcntl_signal_dispatch();
        }
        return ['ok' => true];
    },
    'timerThrows' => function () {
        posix_kill(getmypid(), SIGUSR2);
        pcntl_signal_dispatch();
        return ['ok' => true, 'not' => 'reached'];
    },
    'notAnAnswer' => fn () => 'yes',
    'showEnv' => function () {
        $env = Lockbench::env();
        return ['ok' => true, 'nodes' => $env->nodes, 'key' => $env->key, 'client' => $env->client,
                'ttl_ms' => $env->ttlMs, 'params' => $env->params, 'command_timeout_ms' => $env->commandTimeoutMs,
                'op_timeout_ms' => $env->opTimeoutMs, 'connect_timeout_ms' => $env->connectTimeoutMs,
                'sentinels' => $env->sentinels, 'master_name' => $env->masterName,
                'own_path' => $env->ownPath('10.0.0.1', 6379), 'unmapped' => $env->ownPath('10.0.0.9', '7000')];
    },
], function () {
    fwrite(STDERR, "closed cleanly\n");
});
PHP;
file_put_contents("$dir/fake_adapter.php", $fake);

$baseEnv = [
    'LOCKBENCH_NODES' => '127.0.0.1:7001,127.0.0.1:7002', 'LOCKBENCH_KEY' => 'lock', 'LOCKBENCH_CLIENT' => '3',
    'LOCKBENCH_TTL_MS' => '500', 'LOCKBENCH_PARAMS' => '{"fence": true, "variant": "x"}',
    'LOCKBENCH_COMMAND_TIMEOUT_MS' => '200', 'LOCKBENCH_OP_TIMEOUT_MS' => '2000', 'LOCKBENCH_CONNECT_TIMEOUT_MS' => '1000',
    'LOCKBENCH_SENTINELS' => '127.0.0.1:8001', 'LOCKBENCH_MASTER_NAME' => 'lockbench',
    'LOCKBENCH_ADDRESS_MAP' => '{"10.0.0.1:6379": "127.0.0.1:9001"}',
];

// The adapter as lockbench runs it, with every request written at once and stdin then closed.
function run(array $requests, ?string $source = null, array $env = []): array
{
    global $dir, $kit, $baseEnv;
    $file = "$dir/fake_adapter.php";
    if ($source !== null) {
        $file = "$dir/other_adapter.php";
        file_put_contents($file, $source);
    }
    $input = '';
    foreach ($requests as $r) $input .= is_string($r) ? $r : json_encode($r) . "\n";
    file_put_contents("$dir/in", $input);
    $vars = array_filter(getenv(), fn ($k) => !str_starts_with($k, 'LOCKBENCH_'), ARRAY_FILTER_USE_KEY);
    $p = proc_open([PHP_BINARY, $file], [0 => ['file', "$dir/in", 'r'], 1 => ['file', "$dir/out", 'w'],
                                         2 => ['file', "$dir/err", 'w']], $pipes, null,
                   $env + ['LOCKBENCH_KIT' => $kit] + $baseEnv + $vars);
    $status = proc_close($p);
    $lines = [];
    foreach (explode("\n", rtrim(file_get_contents("$dir/out"), "\n")) as $line) {
        if ($line === '') continue;
        $lines[] = json_decode($line, true, 512, JSON_THROW_ON_ERROR);  // every line whole JSON
    }
    return ['status' => $status, 'lines' => $lines, 'stderr' => file_get_contents("$dir/err")];
}

function check(bool $ok, string $what, $detail = null): void
{
    if ($ok) return;
    fwrite(STDERR, "FAILED: $what\n" . ($detail === null ? '' : var_export($detail, true) . "\n"));
    exit(1);
}

function same($actual, $expected, string $what): void
{
    check($actual === $expected, $what, ['actual' => $actual, 'expected' => $expected]);
}

// Requests, errors and events.
$p = run([
    ['op' => 'acquire', 'key' => 'k', 'ttl_ms' => 500, 'wait_ms' => 0],
    ['op' => 'acquire', 'key' => 'k', 'ttl_ms' => 500, 'wait_ms' => 0],
    ['op' => 'boom'],
    ['op' => 'typeError'],
    ['op' => 'warns'],
    ['op' => 'lostWhileServing'],
    ['op' => 'timerThrows'],
    ['op' => 'notAnAnswer'],
    ['op' => 'extend', 'key' => 'k', 'ttl_ms' => 500, 'replace' => true],
    "this is not JSON\n",
    "[1, 2]\n",
    ['op' => 'acquire', 'key' => 'k', 'ttl_ms' => 500, 'wait_ms' => 0],
]);
same($p['status'], 0, 'exit status at the end of stdin: ' . $p['stderr']);
same($p['lines'], [
    ['ready' => true, 'library' => 'fake-lock 1.0', 'algorithm' => 'an array in memory', 'fencing' => true],
    ['ok' => true, 'token' => 't-k', 'nodes' => [0]],
    ['ok' => false, 'error' => 'held'],
    ['ok' => false, 'error' => 'RuntimeException: the library failed: connection reset'],
    ['ok' => false, 'error' => 'TypeError: strlen(): Argument #1 ($string) must be of type string, array given'],
    ['ok' => false],
    ['event' => 'lost', 'detail' => 'heartbeat: the lock is gone'],
    ['event' => 'lost', 'detail' => 'heartbeat: the lock is gone'],
    ['event' => 'lost', 'detail' => 'heartbeat: the lock is gone'],
    ['ok' => true],
    ['ok' => false, 'error' => 'LogicException: the refresh timer failed'],
    ['ok' => false, 'error' => "notAnAnswer answered 'yes', not {\"ok\": true|false, ...}"],
    ['ok' => false, 'error' => 'extend is not supported'],
    ['ok' => false, 'error' => 'not JSON: this is not JSON'],
    ['ok' => false, 'error' => 'not a request (no op): [1, 2]'],
    ['ok' => false, 'error' => 'held'],
], 'the lines');
foreach (["a library's chatter on stdout", 'echoed by a library', 'Failed to open stream', 'closed cleanly'] as $text) {
    check(str_contains($p['stderr'], $text), "stderr has \"$text\"", $p['stderr']);
}

// Nothing asked: the ready line, then exit 0.
$p = run([]);
same($p['status'], 0, 'exit status with nothing asked');
same(count($p['lines']), 1, 'only the ready line');

// The environment, parsed.
$p = run([['op' => 'showEnv']]);
same($p['lines'][1], ['ok' => true, 'nodes' => [['127.0.0.1', 7001], ['127.0.0.1', 7002]], 'key' => 'lock',
                      'client' => 3, 'ttl_ms' => 500, 'params' => ['fence' => true, 'variant' => 'x'],
                      'command_timeout_ms' => 200, 'op_timeout_ms' => 2000, 'connect_timeout_ms' => 1000,
                      'sentinels' => [['127.0.0.1', 8001]], 'master_name' => 'lockbench',
                      'own_path' => ['127.0.0.1', 9001], 'unmapped' => ['10.0.0.9', 7000]], 'the environment');
$p = run([['op' => 'showEnv']], null, ['LOCKBENCH_PARAMS' => '', 'LOCKBENCH_SENTINELS' => '', 'LOCKBENCH_OP_TIMEOUT_MS' => '']);
same([$p['lines'][1]['params'], $p['lines'][1]['sentinels'], $p['lines'][1]['op_timeout_ms']], [[], [], null],
     'absent settings');

// Not ready: malformed params, a missing library, an exception before the ready line.
$p = run([['op' => 'showEnv']], null, ['LOCKBENCH_PARAMS' => '{not json']);
same($p['status'], 1, 'exit status with malformed params');
same(count($p['lines']), 1, 'one line with malformed params');
check($p['lines'][0]['ready'] === false && str_starts_with($p['lines'][0]['error'], "lockbench's environment: JsonException: "),
      'the not-ready line for malformed params', $p['lines']);
$p = run([], "<?php\nrequire_once getenv('LOCKBENCH_KIT') . '/lockbench_adapter.php';\n"
             . "if (!class_exists('NoSuch\\\\Lock')) Lockbench::missing('NoSuch Lock', 'apt-get install php-nosuch-lock');\n");
same([$p['status'], $p['lines']], [1, [['ready' => false, 'error' => 'NoSuch Lock is missing: apt-get install php-nosuch-lock']]],
     'a missing library');
$p = run([], "<?php\nrequire_once getenv('LOCKBENCH_KIT') . '/lockbench_adapter.php';\n"
             . "throw new \\RedisException('no server');\n");
same([$p['status'], $p['lines']], [1, [['ready' => false, 'error' => 'RedisException: no server']]],
     'an exception before the ready line');
echo "adapter kit (PHP): all checks passed\n";
