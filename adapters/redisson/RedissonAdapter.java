/*
 * lockbench adapter for Redisson's locks (org.redisson:redisson, pom.xml), as seed 003 uses
 * them: redissonClient.getLock(name), then tryLock with no lease time, so that Redisson's
 * watchdog keeps the lease (lockWatchdogTimeout, here the run's ttl_ms, renewed every third of
 * it) until unlock. On one node, or the master the Sentinels name (its NAT mapper turns the
 * addresses they name into this client's own paths); under Sentinel every grant and renewal
 * also WAITs for the replicas (checkLockSyncedSlaves, on by default), and a grant no replica
 * acknowledged is deleted and fails. One attempt per command (retryAttempts 0): lockbench
 * retries. Parameters (the lock file's "params"), at most one of them (more is not ready):
 *   fenced  true: getFencedLock, tryLockAndGetToken: its token is the fence
 *   lease   true: tryLock(wait, leaseTime = the run's TTL): no watchdog, the key expires
 *   fair    true: getFairLock: waiters queued in a list and a zset beside the hash
 *   redlock true: a RedissonRedLock over one client per node (the run's "nodes"), each lock
 *           with its watchdog: granted when a majority of its locks are; which nodes is not
 *           told, so the answer names none
 * Its connect timeout is the run's op timeout (ten command timeouts), not the command timeout:
 * a cold JVM's first connection (Netty's classes loading) takes longer than 200 ms; and the PING
 * Redisson sends on every new connection has the command timeout, which a cold JVM on a loaded
 * machine can miss, so the client is made again (warmer each time) until it connects. Before its
 * ready line it takes and releases a lock of its own key, so that a repetition's first acquire
 * does not pay for loading Redisson's lock classes and scripts (as the Curator adapter's warm).
 * The token lockbench probes is the lock hash's field, Redisson's getLockName(threadId):
 * "<client id>:<thread id>"; every request is served on main, the thread that holds the lock.
 * Speaks lockbench's protocol (docs/adapters.md) through the Java kit; built by build.sh.
 */
import static lockbench.LockbenchAdapter.*;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.misc.RedisURI;

public final class RedissonAdapter {
    public static void main(String[] args) throws Exception {
        Env env = env();
        boolean fenced = Boolean.TRUE.equals(env.params.get("fenced"));
        boolean lease = Boolean.TRUE.equals(env.params.get("lease"));
        boolean fair = Boolean.TRUE.equals(env.params.get("fair"));
        boolean redlock = Boolean.TRUE.equals(env.params.get("redlock"));
        long ttlMs = env.ttlMs;
        if ((fenced ? 1 : 0) + (lease ? 1 : 0) + (fair ? 1 : 0) + (redlock ? 1 : 0) > 1)
            notReady("params: at most one of fenced, lease, fair and redlock");

        List<RedissonClient> clients = new java.util.ArrayList<>();
        if (redlock) for (Address node : env.nodes) clients.add(connect(config(env, ttlMs, node)));
        else clients.add(connect(config(env, ttlMs, env.sentinels.isEmpty() ? env.nodes.get(0) : null)));
        RedissonClient redisson = clients.get(0);
        String how = fenced ? "RFencedLock: a hash field <client id>:<thread id> and an incremented fencing token"
                   : fair ? "RFairLock: a hash field <client id>:<thread id>, a queue of waiters, Lua"
                   : redlock ? "RedissonRedLock: an RLock on each of " + clients.size() + " nodes, a majority of them"
                   : "RLock: a hash field <client id>:<thread id>, Lua";
        how += lease ? ", a lease time and no watchdog" : ", the watchdog renewing it every third of lockWatchdogTimeout";
        Map<String, RLock> locks = new java.util.HashMap<>();
        java.util.function.Function<String, RLock> lockOf = key -> locks.computeIfAbsent(key,
            k -> fenced ? redisson.getFencedLock(k) : fair ? redisson.getFairLock(k)
               : redlock ? new RedissonRedLock(clients.stream().map(c -> c.getLock(k)).toArray(RLock[]::new))
               : redisson.getLock(k));
        // The nodes a grant stands on, as far as it is told: one, or (RedLock) not said.
        List<Integer> on = redlock ? null : List.of(0);
        warm(lockOf.apply(env.key + ":lockbench-warm:" + ProcessHandle.current().pid()));
        String token = redisson.getId() + ":" + Thread.currentThread().getId();
        ready("redisson " + mavenVersion("org.redisson", "redisson"), how, fenced);
        serve(Map.of(
            "acquire", req -> {
                RLock lock = lockOf.apply((String) req.get("key"));
                long waitMs = number(req, "wait_ms");
                if (fenced) {
                    Long fence = ((RFencedLock) lock).tryLockAndGetToken(waitMs, TimeUnit.MILLISECONDS);
                    if (fence == null) return obj("ok", false, "error", "held");
                    return obj("ok", true, "token", token, "fence", fence, "nodes", List.of(0));
                }
                boolean got = lease ? lock.tryLock(waitMs, ttlMs, TimeUnit.MILLISECONDS)
                                    : lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
                if (!got) return obj("ok", false, "error", "held");
                return on == null ? obj("ok", true) : obj("ok", true, "token", token, "nodes", on);
            },
            "release", req -> {
                // RLock is reentrant: an acquire answered late (refused here, granted there) and
                // then granted again holds it twice, so every hold of this thread is undone, each
                // unlock checking the owner as the first does.
                // RFairLock's unlock also succeeds when the lock's hash is gone (its script then wakes
                // the next waiter and removes nothing), so whether this thread held it is asked
                // first: not held, the release removed nothing (removed_on []); the question
                // unanswered, it says nothing of what it removed. unlock() runs either way: it is
                // what stops the watchdog. A lease that expires between the two round trips is
                // still said removed: the library's script answers both stories alike.
                RLock lock = lockOf.apply((String) req.get("key"));
                Boolean held = Boolean.TRUE;
                if (fair) {
                    try {
                        held = lock.isHeldByCurrentThread();
                    } catch (RuntimeException e) {
                        held = null;
                    }
                }
                lock.unlock();  // IllegalMonitorStateException: not this thread's (RedLock: no error, every node tried)
                // RedLock says nothing of which node it removed; nor does a fair release whose question
                // went unanswered.
                if (on == null || held == null) return obj("ok", true);
                for (int i = 0; i < 100 && lock.isHeldByCurrentThread(); ++i) lock.unlock();
                return obj("ok", true, "removed_on", held ? on : List.of());
            }),
            // A reset (lockbench keeps the adapter for another repetition) first ends this run's
            // clients, with no Netty quiet period (the default would hold it 2 s); at stdin's
            // end the kit halts the JVM.
            () -> clients.forEach(c -> c.shutdown(0, 2, TimeUnit.SECONDS)), true);
    }

    // One client's configuration: of one node, or (node null) of the master Sentinel names.
    static Config config(Env env, long ttlMs, Address node) {
        Config config = new Config();
        // Sized for one lock on a 2-core machine (the defaults start 16 + 32 threads and 24 idle
        // connections); the lock's commands and scripts are the same.
        config.setThreads(2).setNettyThreads(2);
        config.setLockWatchdogTimeout(ttlMs);
        if (node != null) {
            config.useSingleServer()
                .setAddress("redis://" + node.host + ":" + node.port)
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(1)
                .setTimeout(env.commandTimeoutMs).setConnectTimeout(env.opTimeoutMs)
                .setRetryAttempts(0);
        } else {  // the master Sentinel names, reached by this client's own path (NAT map)
            var sentinel = config.useSentinelServers().setMasterName(env.masterName).setNatMapper(uri -> {
                    Address own = env.addressMap.get(uri.getHost() + ":" + uri.getPort());
                    return own == null ? uri : new RedisURI(uri.getScheme(), own.host, own.port);
                })
                .setCheckSentinelsList(false).setSentinelsDiscovery(false)
                .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(2)
                .setSlaveConnectionMinimumIdleSize(1).setSlaveConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1).setSubscriptionConnectionPoolSize(1)
                .setTimeout(env.commandTimeoutMs).setConnectTimeout(env.opTimeoutMs)
                .setRetryAttempts(0);
            for (Address a : env.sentinels) sentinel.addSentinelAddress("redis://" + a);
        }
        return config;
    }

    static RedissonClient connect(Config config) {
        for (int attempt = 1;; ++attempt) {
            try {
                return Redisson.create(config);
            } catch (RuntimeException e) {
                if (attempt == 5) throw e;
                System.err.println("lockbench adapter: connecting, attempt " + attempt + ": " + describe(e));
            }
        }
    }

    // A few tries; a failure is only logged (the requests will meet it).
    static void warm(RLock lock) {
        for (int i = 0; i < 5; ++i) {
            try {
                if (lock.tryLock(0, TimeUnit.MILLISECONDS)) lock.unlock();
                return;
            } catch (Exception e) {
                System.err.println("lockbench adapter: warming up: " + describe(e));
            }
        }
    }
}
