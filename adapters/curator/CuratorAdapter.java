/*
 * lockbench adapter for Apache Curator's InterProcessMutex on ZooKeeper, built by build.sh at two
 * versions: Debian's libcurator-recipes-java (5.4.0) and pom.xml's (5.9.0).
 *
 * Speaks lockbench's adapter protocol (docs/adapters.md) through the Java kit,
 * adapters/kit/LockbenchAdapter.java, as adapters/kazoo-lock/adapter.py does through the Python
 * one. The recipe: each contender creates a protected ephemeral sequential znode under the lock's
 * path (its name starts with a random GUID, so that a create whose reply was lost can find its
 * own znode again); the lowest holds the lock; the others would watch their predecessor
 * (acquire(0, ms) makes one attempt: it gives up, deleting its znode, instead of waiting). The
 * session is the lease: when it expires (its client silent past the session timeout) ZooKeeper
 * deletes the znode and the next contender holds the lock. Curator also expires a session by
 * itself once its connection has been SUSPENDED for a whole session timeout, and then opens a
 * new one.
 *
 * One CuratorFramework for the adapter's life (CuratorFrameworkFactory.newClient), its session
 * timeout the run's ttl_ms, over every server in LOCKBENCH_NODES (ZooKeeper's client fails over
 * among them). Its retry policy retries an operation whose connection was lost (and one whose
 * session expired: Curator retries that too) every 50 ms for half the answer budget below, and
 * an operation waits as long for a connection (or a session timeout, if that is shorter); every
 * answer comes within 0.8 x LOCKBENCH_OP_TIMEOUT_MS (a request still running then is answered
 * with an error, and a late acquire's lock released before the next request). Every acquire makes a new
 * InterProcessMutex, so nothing of a lost session's lock is kept. The mutex belongs to the
 * thread that acquired it, so every request runs on one worker thread.
 *
 * The fence is the lock znode's czxid (read right after the acquire, as the kazoo adapter does):
 * a zxid is unique across the ensemble's history and grows across leader changes; the sequence
 * number restarts if Curator's container parent is ever deleted and recreated.
 *
 * params: "listener": true registers a ConnectionStateListener that announces the lock lost
 * ({"event": "lost", ...}) when the connection goes SUSPENDED or LOST while it is held, as
 * Curator's documentation tells applications to do ("If a SUSPENDED state is reported you
 * cannot be certain that you still hold the lock unless you subsequently receive a RECONNECTED
 * state. If a LOST state is reported it is certain that you no longer hold the lock."). Every
 * state change is logged on stderr in any case, as are Curator's and ZooKeeper's own warnings
 * (slf4j-simple at WARN). "wait": true makes each acquire wait in the queue, as applications
 * call it (acquire(time, unit), for half the answer budget) rather than make one attempt: its
 * znode stays queued behind the holder's until the predecessor's deletion wakes it, and the
 * adapter says so ({"event": "waiting"}, see QueueLook). "warm": true
 * takes and releases a lock of its own (a path of this process's) before the ready line, as the
 * npm adapters do: a JVM's first acquire loads and compiles the recipe's classes (0.8 s on a
 * loaded machine, against 0.3 s for the next), which is the JVM's start, not the lock's.
 *
 * Built by adapters/curator/build.sh into adapters/curator/classes; locks/curator*.json run it.
 */
import static lockbench.LockbenchAdapter.describe;
import static lockbench.LockbenchAdapter.env;
import static lockbench.LockbenchAdapter.event;
import static lockbench.LockbenchAdapter.lost;
import static lockbench.LockbenchAdapter.missing;
import static lockbench.LockbenchAdapter.obj;
import static lockbench.LockbenchAdapter.present;
import static lockbench.LockbenchAdapter.ready;
import static lockbench.LockbenchAdapter.serve;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import lockbench.LockbenchAdapter.Env;
import lockbench.LockbenchAdapter.Handler;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public final class CuratorAdapter {
    private CuratorAdapter() {}

    public static void main(String[] args) throws Exception {
        Env env = env();  // the kit first: from here on stdout is the protocol's
        // Curator's classes are loaded only in Recipe, after this check: a missing jar is the
        // not-ready line rather than a JVM's NoClassDefFoundError.
        if (!present("org.apache.curator.framework.recipes.locks.InterProcessMutex") || !present("org.apache.zookeeper.ZooKeeper"))
            missing("Apache Curator", "apt-get install libcurator-recipes-java (its jars on the class path, as locks/curator.json has them)");
        // Curator's and ZooKeeper's logs (slf4j-simple, on stderr): warnings and errors with their time,
        // not the INFO lines of every connection. Set before any of their loggers exists.
        setDefault("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        setDefault("org.slf4j.simpleLogger.showDateTime", "true");
        setDefault("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        // No SASL: the servers ask for none, and ZooKeeper's client would look for a JAAS
        // configuration on every connection.
        setDefault("zookeeper.sasl.client", "false");
        Recipe.run(env);
    }

    private static void setDefault(String property, String value) {
        if (System.getProperty(property) == null) System.setProperty(property, value);
    }

    /** Everything that touches Curator: loaded once main has found it on the class path. */
    static final class Recipe {
        private Recipe() {}

        /** InterProcessMutex, with the path of the znode it holds (protected in 5.4.0 and 5.9.0). */
        static final class Mutex extends InterProcessMutex {
            Mutex(CuratorFramework client, String path) {
                super(client, path);
            }

            String node() {
                return getLockPath();  // this thread's: the worker's
            }
        }

        /** The lock lockbench was told it holds. */
        static final class Held {
            final Mutex mutex;
            final String node;    // its znode's path
            final long session;   // the session that held it when the acquire was answered

            Held(Mutex mutex, String node, long session) {
                this.mutex = mutex;
                this.node = node;
                this.session = session;
            }
        }

        static CuratorFramework client;
        static volatile Held held;
        static long budgetMs;
        static long waitMs;  // how long an acquire waits in the queue: 0, one attempt
        // Every request on this thread: InterProcessMutex belongs to the thread that acquired it.
        static final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "lockbench-worker");
            t.setDaemon(true);
            return t;
        });
        static Future<Map<String, Object>> late;
        // With "wait": looks, while an acquire waits, whether it waits in the queue (below).
        static final ScheduledExecutorService looker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "lockbench-queue-looker");
            t.setDaemon(true);
            return t;
        });

        static void run(Env env) throws Exception {
            int sessionMs = env.ttlMs != null ? env.ttlMs : 500;  // the session is the lease
            int opTimeoutMs = env.opTimeoutMs != null ? env.opTimeoutMs : 2000;
            budgetMs = (long) (0.8 * opTimeoutMs);  // every answer well within lockbench's op timeout
            int retryMs = (int) (budgetMs / 2);
            boolean listener = Boolean.TRUE.equals(env.params.get("listener"));
            waitMs = Boolean.TRUE.equals(env.params.get("wait")) ? budgetMs / 2 : 0;

            client = CuratorFrameworkFactory.newClient(
                env.connectString(), sessionMs, Math.min(retryMs, sessionMs),
                new RetryUntilElapsed(retryMs, 50));
            client.getConnectionStateListenable().addListener((c, state) -> {
                Held h = held;
                System.err.printf("%tT.%<tL lockbench adapter: connection %s (session 0x%x)%s%n", System.currentTimeMillis(), state,
                                  sessionId(), h != null ? " while holding " + h.node : "");
                if (listener && h != null && (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST))
                    lost("Curator's connection state went " + state + " while the lock was held (" + h.node + ")");
            });
            client.start();
            // Said ready once the session is established (or, at the latest, after one answer's
            // budget: each operation waits for a connection itself).
            client.blockUntilConnected((int) budgetMs, TimeUnit.MILLISECONDS);
            if (Boolean.TRUE.equals(env.params.get("warm"))) warm();

            String library = "Apache Curator " + version(InterProcessMutex.class, "org.apache.curator", "curator-recipes")
                             + " (ZooKeeper client " + version(ZooKeeper.class, "org.apache.zookeeper", "zookeeper") + ")";
            ready(library,
                "InterProcessMutex: protected ephemeral sequential znode, watch the predecessor; held while the session lives"
                    + (waitMs > 0 ? "; acquire waits up to " + waitMs + " ms in the queue" : "")
                    + (listener ? "; a ConnectionStateListener says lost on SUSPENDED or LOST" : ""),
                true);
            // When stdin closes, close() ends the session (its znodes go at once rather than when it
            // would expire); the kit exits without waiting for a request given up on.
            serve(Map.of(
                "acquire", req -> answer(Recipe::acquire, req),
                "release", req -> answer(Recipe::release, req),
                "extend", req -> answer(Recipe::extend, req)), () -> client.close());
        }

        static Map<String, Object> acquire(Map<String, Object> req) throws Exception {
            String path = "/lockbench/" + ((String) req.get("key")).replace('/', '_');
            // A contender that finds others queued already would wait on its predecessor's watch;
            // one attempt gives up instead, so it looks first, with a read the server it is
            // connected to answers alone (as the kazoo adapter does, for the same reason: without
            // the look every failed attempt is two writes through the leader and a quorum, a create
            // and a delete). A stale read costs one more attempt or one attempt's wait: the create
            // and the children after it decide, as before. A waiting acquire queues instead.
            if (waitMs == 0) {
                try {
                    if (!client.getChildren().forPath(path).isEmpty()) return obj("ok", false, "error", "held");
                } catch (KeeperException.NoNodeException e) {
                    // no lock taken on this key yet
                }
            }
            Mutex candidate = new Mutex(client, path);
            // One attempt (0 ms: the contender znode is deleted unless it is the lowest), or, with
            // "wait", acquire(time, unit) as applications call it: queued behind the holder, woken
            // by its predecessor's deletion, for at most half the answer budget.
            boolean acquired;
            QueueLook look = waitMs > 0 ? new QueueLook(candidate) : null;
            try {
                acquired = candidate.acquire(waitMs, TimeUnit.MILLISECONDS);
            } finally {
                if (look != null) look.stop();
            }
            if (!acquired) {
                if (!client.getZookeeperClient().isConnected()) return obj("ok", false, "error", "not connected to ZooKeeper");
                return obj("ok", false, "error", "held");
            }
            String node = candidate.node();
            Stat stat;
            try {
                stat = client.checkExists().forPath(node);
            } catch (Exception e) {
                releaseQuietly(candidate);
                throw e;
            }
            if (stat == null) {
                releaseQuietly(candidate);
                return obj("ok", false, "error", "lost: its znode was gone right after the acquire (the session expired)");
            }
            long session = sessionId();
            if (stat.getEphemeralOwner() != session) {
                // InterProcessMutex says we hold the lock through a znode that another session owns:
                // the session that created it has expired, and its znode is about to be deleted
                // (CURATOR-604). Answered as the library says it (held); told to the reader, in the
                // history as an adapter line (kept short: lockbench keeps 200 characters of an event).
                System.err.printf("lockbench adapter: acquire() returned true for %s, owned by session 0x%x, while this"
                                  + " client's session is 0x%x (CURATOR-604)%n", node, stat.getEphemeralOwner(), session);
                event("curator-604", obj("detail", String.format("its znode's session 0x%x is not this client's, 0x%x",
                                                                 stat.getEphemeralOwner(), session)));
            }
            held = new Held(candidate, node, session);
            return obj("ok", true, "token", ZKPaths.getNodeFromPath(node), "fence", stat.getCzxid(), "nodes", List.of(0));
        }

        static Map<String, Object> release(Map<String, Object> req) throws Exception {
            Held h = held;
            if (h == null) return obj("ok", false, "error", "not held");
            try {
                return release(h);
            } finally {
                held = null;  // held until release() has returned: a listener's event meanwhile is this lock's
            }
        }

        static Map<String, Object> release(Held h) throws Exception {
            // InterProcessMutex.release() deletes the znode and swallows NoNode, so it does not say
            // whether this release removed the lock or the session's expiry had already: the znode
            // is read first, and the release counts as a removal only if it was there, this
            // session's, and the session was still the same after the release (after an expiry the
            // znode is gone by the time a new session's delete could reach it, or who deleted it is
            // unknown).
            Stat stat = null;
            Exception unread = null;
            try {
                stat = client.checkExists().forPath(h.node);
            } catch (Exception e) {
                unread = e;
            }
            h.mutex.release();  // a delete that fails for the connection is retried by Curator in the background (guaranteed)
            if (unread != null) return obj("ok", true);  // released; whether it removed the lock, unknown
            if (stat == null) return obj("ok", false, "error", "lost: its znode was gone already (the session expired)");
            if (stat.getEphemeralOwner() != h.session || sessionId() != h.session)
                return obj("ok", true);  // its session changed meanwhile: who removed it, unknown
            return obj("ok", true, "removed_on", List.of(0));
        }

        static Map<String, Object> extend(Map<String, Object> req) {
            return obj("ok", false, "error", "nothing to extend: ZooKeeper's client keeps the session (the lease) alive");
        }

        // One lock taken and released on a path no other client uses, on the worker thread, within
        // one answer's budget; a failure is only logged (the requests will meet it themselves).
        static void warm() {
            String path = "/lockbench-warm/" + ProcessHandle.current().pid();
            try {
                worker.submit(() -> {
                    Mutex m = new Mutex(client, path);
                    if (m.acquire(budgetMs, TimeUnit.MILLISECONDS)) m.release();
                    client.delete().quietly().forPath(path);
                    return null;
                }).get(budgetMs, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                System.err.println("lockbench adapter: warming up: " + describe(e));
            }
        }

        static void releaseQuietly(Mutex mutex) {
            try {
                mutex.release();
            } catch (Exception e) {
                System.err.println("lockbench adapter: releasing a lock nobody was told of: " + describe(e));
            }
        }

        /**
         * Says {"event": "waiting"} when the acquire in flight waits in the queue behind another
         * contender's znode, and again when the one ahead of it changes: lockbench's keep_holder_ms
         * then knows that a late answer met the lock held (this acquire waits behind the holder)
         * rather than not having come. Curator says nothing of it, so every 10 ms, while
         * acquire(time) runs: the lock's contenders (getParticipantNodes, in queue order), and this
         * session's among them by its znode's ephemeral owner. Nothing is said once the acquire
         * has returned.
         */
        static final class QueueLook {
            static volatile QueueLook current;  // the acquire's in flight, stopped once it is answered

            private final Mutex mutex;
            private final ScheduledFuture<?> task;
            private String ahead;      // the contender this acquire was last said to wait behind
            private String own;        // this acquire's znode, once found (its session's)
            private boolean stopped;   // under this: no event after the acquire was answered

            QueueLook(Mutex mutex) {
                this.mutex = mutex;
                current = this;
                this.task = looker.scheduleWithFixedDelay(this::look, 10, 10, TimeUnit.MILLISECONDS);
            }

            void stop() {
                synchronized (this) {
                    stopped = true;
                }
                task.cancel(false);
            }

            private void look() {
                try {
                    List<String> nodes = List.copyOf(mutex.getParticipantNodes());
                    int at = own != null ? nodes.indexOf(own) : -1;
                    if (at < 0) {  // not found yet, or a new znode (Curator's retry after a lost session)
                        own = null;
                        long session = sessionId();
                        for (int i = 0; i < nodes.size() && own == null; i++) {
                            Stat stat = client.checkExists().forPath(nodes.get(i));
                            if (stat != null && stat.getEphemeralOwner() == session) {
                                own = nodes.get(i);
                                at = i;
                            }
                        }
                    }
                    if (at < 1) return;  // first in line, or not queued yet
                    String before = ZKPaths.getNodeFromPath(nodes.get(at - 1));
                    synchronized (this) {
                        if (stopped || before.equals(ahead)) return;
                        ahead = before;
                        event("waiting", obj("detail", "queued " + (at + 1) + " of " + nodes.size() + ", behind " + before));
                    }
                } catch (Exception e) {
                    // not connected, or the lock's path not there yet: the next look
                }
            }
        }

        static long sessionId() {
            try {
                return client.getZookeeperClient().getZooKeeper().getSessionId();
            } catch (Exception e) {
                return 0;
            }
        }

        static String version(Class<?> inJar, String group, String artifact) {
            Properties pom = new Properties();
            try (InputStream in = inJar.getResourceAsStream("/META-INF/maven/" + group + "/" + artifact + "/pom.properties")) {
                if (in != null) pom.load(in);
            } catch (IOException e) {
                // unknown, as below
            }
            return pom.getProperty("version", "(version unknown)");
        }

        // ---- every answer within the budget -----------------------------------------------------------
        // Curator's calls wait for a connection and retry, so each request runs on the worker thread.
        // One given up on keeps running there; it is collected before the next request, and a late
        // acquire's lock is released (on the worker: the thread that holds it) before anything else.

        static Map<String, Object> answer(Handler handler, Map<String, Object> req) throws Exception {
            long deadline = System.nanoTime() + budgetMs * 1_000_000;
            if (!collectLate(deadline))
                return obj("ok", false, "error", "ZooKeeper has not answered an earlier request yet");
            Future<Map<String, Object>> future = worker.submit(() -> handler.handle(req));
            try {
                return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                late = future;
                QueueLook look = QueueLook.current;
                if (look != null) look.stop();  // answered: its waiting would be a later acquire's
                return obj("ok", false, "error", "no answer from ZooKeeper within " + budgetMs + " ms");
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exception) throw (Exception) cause;
                throw e;
            }
        }

        static boolean collectLate(long deadline) throws InterruptedException {
            if (late == null) return true;
            Map<String, Object> answer;
            try {
                answer = late.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                return false;
            } catch (ExecutionException e) {
                answer = Map.of();
            }
            late = null;
            Held h = held;
            if (Boolean.TRUE.equals(answer.get("ok")) && answer.containsKey("token") && h != null) {  // an acquire nobody was told of
                held = null;
                worker.submit(() -> releaseQuietly(h.mutex));
            }
            return true;
        }
    }
}
