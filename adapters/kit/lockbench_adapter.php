<?php
// lockbench's adapter protocol for a PHP lock library (docs/adapters.md), PHP 8.1+ only.
//
// The protocol: lockbench starts the adapter with its settings in LOCKBENCH_* variables; the
// adapter's first stdout line is {"ready": true, "library": ..., "algorithm": ..., "fencing": ...}
// (or {"ready": false, "error": ...} and exit 1); then it reads one JSON request a line on stdin
// (acquire, release, extend), one at a time, and answers each with one line {"ok": ..., ...};
// {"event": "lost", "detail": ...} may come at any time, unasked. It exits when stdin closes.
// stdout carries only those lines; logs and warnings go to stderr.
//
// This file does all of that, as static methods of the class Lockbench: Lockbench::env() (the
// settings, parsed), ready, notReady, missing, serve (the request loop: a handler's return
// value is its answer; one that throws answers {"ok": false, "error": "<Class>: <message>"},
// with the previous exception's message after it, as does an unknown op or a line that is not
// JSON, and the loop goes on; stdin closed: $onClose(), then exit 0), lost/event/say. On load
// it sends PHP's warnings and notices to stderr (display_errors; no error handler, so that a
// library that reads error_get_last() still can), and echo or print output to stderr too; an
// uncaught exception before the ready line becomes the not-ready line. An adapter finds this
// file through LOCKBENCH_KIT (the folder lockbench gives every adapter), else by its own path:
//
//   require_once (getenv('LOCKBENCH_KIT') ?: __DIR__ . '/../kit') . '/lockbench_adapter.php';
//   if (!class_exists(\MyLock\Store::class)) Lockbench::missing('MyLock', 'apt-get install php-mylock');
//   $env = Lockbench::env();
//   [$host, $port] = $env->nodes[0];
//   $store = new \MyLock\Store($host, $port, $env->commandTimeoutMs / 1000);
//   Lockbench::ready('php-mylock ' . \MyLock\Store::VERSION, 'SET NX PX with a random token, Lua release');
//   Lockbench::serve([
//       'acquire' => fn (array $req) => ['ok' => true, 'token' => $store->lock($req['key'], $req['ttl_ms'])],
//       'release' => fn (array $req) => ['ok' => $store->unlock()],
//   ]);

ini_set('display_errors', 'stderr');  // stdout is the protocol: warnings and notices go to stderr
ini_set('log_errors', '0');           // once is enough

// The settings lockbench gives every adapter; an absent number is null.
final class LockbenchEnv
{
    /** @var list<array{0: string, 1: int}> [host, port], node 0 first */
    public readonly array $nodes;
    public readonly ?string $key;
    public readonly ?int $client;  // -1: the start-up check
    public readonly ?int $ttlMs;
    public readonly array $params;
    public readonly ?int $commandTimeoutMs;
    public readonly ?int $opTimeoutMs;
    public readonly ?int $connectTimeoutMs;
    /** @var list<array{0: string, 1: int}> under Sentinel: where to ask for the master */
    public readonly array $sentinels;
    public readonly ?string $masterName;
    /** @var array<string, array{0: string, 1: int}> each address a Sentinel may name => this client's own path */
    public readonly array $addressMap;

    public function __construct()
    {
        $this->nodes = self::addresses('LOCKBENCH_NODES');
        $this->key = self::text('LOCKBENCH_KEY');
        $this->client = self::number('LOCKBENCH_CLIENT');
        $this->ttlMs = self::number('LOCKBENCH_TTL_MS');
        $params = json_decode(self::text('LOCKBENCH_PARAMS') ?? '{}', true, 512, JSON_THROW_ON_ERROR);
        if (!is_array($params) || array_is_list($params) && $params !== []) {
            throw new \UnexpectedValueException('LOCKBENCH_PARAMS is not an object: ' . getenv('LOCKBENCH_PARAMS'));
        }
        $this->params = $params;
        $this->commandTimeoutMs = self::number('LOCKBENCH_COMMAND_TIMEOUT_MS');
        $this->opTimeoutMs = self::number('LOCKBENCH_OP_TIMEOUT_MS');
        $this->connectTimeoutMs = self::number('LOCKBENCH_CONNECT_TIMEOUT_MS');
        $this->sentinels = self::addresses('LOCKBENCH_SENTINELS');
        $this->masterName = self::text('LOCKBENCH_MASTER_NAME');
        $map = json_decode(self::text('LOCKBENCH_ADDRESS_MAP') ?? '{}', true, 512, JSON_THROW_ON_ERROR);
        $this->addressMap = array_map([self::class, 'address'], is_array($map) ? $map : []);
    }

    /** This client's own path to an address a Sentinel named: [host, port]. */
    public function ownPath(string $host, int|string $port): array
    {
        return $this->addressMap["$host:$port"] ?? [$host, (int) $port];
    }

    public static function address(string $text): array
    {
        $at = strrpos($text, ':');
        if ($at === false) throw new \UnexpectedValueException("not host:port: $text");
        return [substr($text, 0, $at), (int) substr($text, $at + 1)];
    }

    private static function text(string $name): ?string
    {
        $value = getenv($name);
        return $value === false || $value === '' ? null : $value;
    }

    private static function number(string $name): ?int
    {
        $value = self::text($name);
        return $value === null ? null : intval($value);
    }

    private static function addresses(string $name): array
    {
        $value = self::text($name);
        return $value === null ? [] : array_map([self::class, 'address'], explode(',', $value));
    }
}

final class Lockbench
{
    private static ?LockbenchEnv $env = null;
    private static bool $readySaid = false;

    public static function env(): LockbenchEnv
    {
        if (self::$env === null) {
            try {
                self::$env = new LockbenchEnv();
            } catch (\Exception $e) {  // a malformed setting: nothing can run
                self::notReady("lockbench's environment: " . self::describe($e));
            }
        }
        return self::$env;
    }

    /** One protocol line, written whole. */
    public static function say(array $line): void
    {
        fwrite(STDOUT, json_encode($line, JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR) . "\n");
    }

    /** A line on stderr: the adapter's log, kept in the run's folder. */
    public static function log(string $text): void
    {
        fwrite(STDERR, $text . "\n");
    }

    /** An exception as an answer's error text: "<Class>: <message>[: <previous message>]". */
    public static function describe(\Throwable $e): string
    {
        $why = $e->getPrevious() ? ': ' . $e->getPrevious()->getMessage() : '';
        return get_class($e) . ': ' . $e->getMessage() . $why;
    }

    /** The first line says why the adapter cannot run; exit 1. */
    public static function notReady(string $error): never
    {
        self::say(['ready' => false, 'error' => $error]);
        exit(1);
    }

    /** A library that is not installed: "<what> is missing: <how>" (how installs it). */
    public static function missing(string $what, string $how): never
    {
        self::notReady("$what is missing: $how");
    }

    /** The ready line: library "NAME VERSION" (read from the package), algorithm in one line. */
    public static function ready(string $library, string $algorithm, bool $fencing = false, array $extra = []): void
    {
        self::say(['ready' => true, 'library' => $library, 'algorithm' => $algorithm, 'fencing' => $fencing] + $extra);
        self::$readySaid = true;
    }

    /** An unsolicited line, {"event": kind, ...}. */
    public static function event(string $kind, array $fields = []): void
    {
        self::say(['event' => $kind] + $fields);
    }

    /** The library says the lock is lost. */
    public static function lost(string $detail): void
    {
        self::event('lost', ['detail' => $detail]);
    }

    /**
     * Answers requests in order, one at a time, until stdin closes; then $onClose(), exit 0.
     * @param array<string, callable(array): array> $handlers op name => handler
     */
    public static function serve(array $handlers, ?callable $onClose = null): never
    {
        while (($line = fgets(STDIN)) !== false) {
            $answer = self::answer($handlers, $line);
            try {
                self::say($answer);
            } catch (\JsonException $e) {  // an answer JSON cannot carry
                self::say(['ok' => false, 'error' => self::describe($e)]);
            }
        }
        if ($onClose !== null) {
            try {
                $onClose();
            } catch (\Throwable $e) {  // the answers are all given: the exit stays clean
                self::log('lockbench adapter: on close: ' . $e);
            }
        }
        exit(0);
    }

    private static function answer(array $handlers, string $line): array
    {
        $short = substr(trim($line), 0, 200);
        try {
            $req = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            return ['ok' => false, 'error' => "not JSON: $short"];
        }
        if (!is_array($req) || !is_string($req['op'] ?? null)) {
            return ['ok' => false, 'error' => "not a request (no op): $short"];
        }
        $handler = $handlers[$req['op']] ?? null;
        if (!is_callable($handler)) return ['ok' => false, 'error' => "{$req['op']} is not supported"];
        try {  // a request that fails fails alone: the adapter goes on answering
            $answer = $handler($req);
        } catch (\Throwable $e) {
            return ['ok' => false, 'error' => self::describe($e)];
        }
        if (!is_array($answer) || !is_bool($answer['ok'] ?? null)) {
            return ['ok' => false, 'error' => "{$req['op']} answered " . var_export($answer, true) . ', not {"ok": true|false, ...}'];
        }
        return $answer;
    }

    /** @internal set_exception_handler's: an exception nothing caught. */
    public static function uncaught(\Throwable $e): void
    {
        self::log('lockbench adapter: uncaught ' . $e);
        if (!self::$readySaid) self::say(['ready' => false, 'error' => self::describe($e)]);
        exit(1);
    }
}

set_exception_handler([Lockbench::class, 'uncaught']);
Lockbench::env();  // a malformed setting is the not-ready line at once
// echo, print and a library's stray output go to stderr; the protocol writes to STDOUT itself.
ob_start(function (string $buffer): string {
    if ($buffer !== '') fwrite(STDERR, $buffer);
    return '';
}, 1);
