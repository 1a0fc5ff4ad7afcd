/*
 * lockbench adapter for Hazelcast's FencedLock (com.hazelcast:hazelcast 5.4.0, pom.xml): the CP
 * subsystem's lock, replicated by Raft over the CP members (three, the "hazelcast" service:
 * sim/live/hazelcast.cpp). A grant belongs to this client's CP session and the thread that asked;
 * the client keeps the session alive with heartbeats, and the CP group ends a session none came
 * for within session-time-to-live-seconds (the run's TTL, which lockbench gives the members), and
 * frees its locks. Every grant hands out a fence, greater than any before it: the fence here, which
 * "fence": true has the store check. The holder is not told that its session ended until its next
 * call (unlock's LockOwnershipLostException).
 *
 * The client is a unisocket one (smart routing off): it talks to the members through the
 * addresses it is given (this client's own paths, through the link proxies when a case has them),
 * not the addresses they announce, and, as the client of every other service here, through one of
 * them at a time. One attempt per acquire: tryLockAndGetFence(wait_ms). Every call runs on one
 * thread of the adapter's (a FencedLock belongs to the thread that took it) and is given the op
 * timeout past its wait: Hazelcast fails a call only when its connection closes, and a link that
 * dropped bytes and went on (a blackhole's) leaves the connection open, its stream out of step,
 * and the call unanswered for good. A call past its time answers "timeout", and the client is
 * given up (terminated, not shut down: its CP session is left to expire, as a crashed one's) and
 * made again, with a new session, on the next request.
 * The token lockbench records is "<client uuid>:<thread id>": the client and thread whose session holds it.
 * Speaks lockbench's protocol (docs/adapters.md) through the Java kit; built by build.sh.
 */
import static lockbench.LockbenchAdapter.*;

import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.lock.FencedLock;

public final class HazelcastAdapter {
    // Hazelcast logs every connection at INFO through java.util.logging: warnings only, to stderr.
    static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");

    // One client: its connection, its CP session, the thread every lock call runs on (a
    // FencedLock is the thread's that took it; its proxy is made there too, since making one
    // asks the cluster for its CP group).
    static final class Client {
        final HazelcastInstance hazelcast;
        final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "lockbench-locks");
            t.setDaemon(true);
            return t;
        });
        final Map<String, FencedLock> locks = new java.util.HashMap<>();  // the lock thread's alone
        final String owner;

        Client(ClientConfig config) throws Exception {
            hazelcast = HazelcastClient.newHazelcastClient(config);
            owner = hazelcast.getLocalEndpoint().getUuid() + ":" + run(() -> Thread.currentThread().getId(), 0, Long.MAX_VALUE);
        }
        // On the lock thread only.
        FencedLock lock(String key) { return locks.computeIfAbsent(key, k -> hazelcast.getCPSubsystem().getLock(k)); }
        <T> T run(Callable<T> call, long waitMs, long timeoutMs) throws Exception {
            Future<T> answer = thread.submit(call);
            try {
                return answer.get(Math.min(Long.MAX_VALUE / 2, waitMs + timeoutMs), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
            } catch (TimeoutException e) {
                giveUp();
                throw new TimeoutException("no answer within " + (waitMs + timeoutMs) + " ms; the client is given up, its session left to expire");
            }
        }
        // Terminated, not shut down (a shutdown would close its session), on a thread of its own:
        // the answer does not wait for its executors. The stuck call fails when it is done.
        void giveUp() {
            thread.shutdown();
            Thread t = new Thread(() -> hazelcast.getLifecycleService().terminate(), "lockbench-give-up");
            t.setDaemon(true);
            t.start();
        }
        // Given up here, or shut down by Hazelcast itself (a client that could not reconnect
        // within its cluster-connect timeout ends itself).
        boolean broken() {
            if (!thread.isShutdown() && !hazelcast.getLifecycleService().isRunning()) thread.shutdown();
            return thread.isShutdown();
        }
    }

    // A client, tried a few times: a cold JVM on a busy machine can miss the op timeout its
    // first connection and authentication are given (as Redisson's adapter does).
    static Client connect(ClientConfig config, int attempts) throws Exception {
        for (int attempt = 1;; ++attempt) {
            try {
                return new Client(config);
            } catch (Exception e) {
                if (attempt >= attempts) throw e;
                System.err.println("lockbench adapter: connecting, attempt " + attempt + ": " + describe(e));
            }
        }
    }

    static Client client;

    public static void main(String[] args) throws Exception {
        Env env = env();
        HAZELCAST_LOG.setLevel(Level.WARNING);
        ClientConfig config = new ClientConfig();
        config.setClusterName("lockbench");
        config.setProperty("hazelcast.logging.type", "jdk");
        config.setProperty("hazelcast.client.invocation.timeout.seconds", Long.toString(Math.max(1, (env.opTimeoutMs + 999) / 1000)));
        // A connection that reads nothing for the op timeout is given up (its default, 60 s, is
        // past lockbench's budget for an answer).
        config.setProperty("hazelcast.client.heartbeat.timeout", Long.toString(env.opTimeoutMs));
        config.setProperty("hazelcast.client.heartbeat.interval", Long.toString(Math.max(100, env.opTimeoutMs / 4)));
        config.getNetworkConfig().setSmartRouting(false).setConnectionTimeout(env.opTimeoutMs);
        // A new client that finds no member within the op timeout fails (its default waits forever).
        config.getConnectionStrategyConfig().getConnectionRetryConfig().setClusterConnectTimeoutMillis(env.opTimeoutMs);
        for (Address node : env.nodes) config.getNetworkConfig().addAddress(node.host + ":" + node.port);
        long opMs = env.opTimeoutMs;
        client = connect(config, 5);
        warm(client, env.key, env.key + ":lockbench-warm:" + ProcessHandle.current().pid(), opMs);
        ready("hazelcast " + mavenVersion("com.hazelcast", "hazelcast"),
              "FencedLock (CP subsystem, Raft over " + env.nodes.size() + " CP members): held by a CP session the client's heartbeats keep alive, a fence per grant",
              true);
        serve(Map.of(
            "acquire", req -> {
                if (client.broken()) client = connect(config, 1);
                Client c = client;
                String key = (String) req.get("key");
                long waitMs = number(req, "wait_ms");
                long fence = c.run(() -> c.lock(key).tryLockAndGetFence(waitMs, TimeUnit.MILLISECONDS), waitMs, opMs);
                if (fence == FencedLock.INVALID_FENCE) return obj("ok", false, "error", "held");
                return obj("ok", true, "token", c.owner, "fence", fence, "nodes", List.of(0));
            },
            "release", req -> {
                if (client.broken()) return obj("ok", false, "error", "lost: the client that held it was given up (a call went unanswered)");
                Client c = client;
                String key = (String) req.get("key");
                // FencedLock is reentrant: an acquire answered late (refused here, granted there)
                // and then granted again holds it twice, so every hold of this thread is undone.
                // LockOwnershipLostException: its session ended; the lock is someone else's or no one's.
                c.run(() -> {
                    FencedLock lock = c.lock(key);
                    lock.unlock();
                    for (int i = 0; i < 100 && lock.isLockedByCurrentThread(); ++i) lock.unlock();
                    return null;
                }, 0, opMs);
                return obj("ok", true, "removed_on", List.of(0));
            }),
            null);  // the kit halts the JVM: a client's shutdown closes its session, which a crash would not
    }

    // The run's key's proxy made (the first acquire then sends only the lock request), and a
    // lock of its own taken and released, so that the first acquire does not pay for loading
    // the classes. A few tries; a failure is only logged (the requests will meet it).
    static void warm(Client c, String runKey, String warmKey, long opMs) {
        for (int i = 0; i < 5 && !c.broken(); ++i) {
            try {
                c.run(() -> {
                    c.lock(runKey);
                    FencedLock lock = c.lock(warmKey);
                    if (lock.tryLock(0, TimeUnit.MILLISECONDS)) lock.unlock();
                    return null;
                }, 0, opMs);
                return;
            } catch (Exception e) {
                System.err.println("lockbench adapter: warming up: " + describe(e));
            }
        }
    }
}
