/*
 * lockbench adapter for seed 001's lock on Jedis (redis.clients:jedis, pom.xml): a JedisPool,
 * SET key random NX EX seconds to lock, the Lua compare-and-delete to release, exactly as the
 * seed writes them (its jedis.set(name, value, "NX", "EX", seconds) is Jedis 2's signature;
 * Jedis 3 and later spell it with SetParams). No extend: the seed has none.
 * Speaks lockbench's protocol (docs/adapters.md) through the Java kit; built by build.sh.
 */
import static lockbench.LockbenchAdapter.*;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.params.SetParams;

public final class JedisAdapter {
    // The seed's release, character for character.
    private static final String RELEASE = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then "
                                          + "return redis.call(\"del\",KEYS[1]) "
                                          + "else return 0 "
                                          + "end";

    private static JedisPool pool;
    private static String token;

    // The seed's lock(lockName, randomVal, seconds).
    static boolean lock(String lockName, String randomVal, int seconds) {
        try (Jedis jedis = pool.getResource()) {
            String rlt = jedis.set(lockName, randomVal, SetParams.setParams().nx().ex(seconds));
            return "OK".equalsIgnoreCase(rlt);
        }
    }

    // The seed's release(lockName, randomVal).
    static boolean release(String lockName, String randomVal) {
        try (Jedis jedis = pool.getResource()) {
            Object rlt = jedis.eval(RELEASE, 1, lockName, randomVal);
            return Long.valueOf(1).equals(rlt);
        }
    }

    public static void main(String[] args) throws Exception {
        Env env = env();
        if (env.ttlMs != null && env.ttlMs % 1000 != 0)
            notReady("the seed's lock takes whole seconds (EX): ttl_ms " + env.ttlMs + " is not");
        Address node = env.nodes.get(0);
        pool = new JedisPool(new HostAndPort(node.host, node.port),
                             DefaultJedisClientConfig.builder()
                                 .socketTimeoutMillis(env.commandTimeoutMs)
                                 .connectionTimeoutMillis(env.connectTimeoutMs).build());
        // A lock of its own key taken and released first: the pool's first connection and the
        // first script load are the JVM's slowest, not a repetition's first acquire.
        String warmKey = env.key + ":lockbench-warm:" + ProcessHandle.current().pid();
        try {
            if (lock(warmKey, "warm", 1)) release(warmKey, "warm");
        } catch (RuntimeException e) {
            System.err.println("lockbench adapter: warming up: " + describe(e));
        }
        ready("jedis " + mavenVersion("redis.clients", "jedis"),
              "seed 001: SET NX EX (whole seconds) with a random token through a JedisPool, Lua compare-and-delete release", false);
        serve(Map.of(
            "acquire", req -> {
                String candidate = UUID.randomUUID().toString();
                if (!lock((String) req.get("key"), candidate, (int) (number(req, "ttl_ms") / 1000))) return obj("ok", false, "error", "held");
                token = candidate;
                return obj("ok", true, "token", token, "nodes", List.of(0));
            },
            "release", req -> release((String) req.get("key"), token)
                                  ? obj("ok", true, "removed_on", List.of(0))
                                  : obj("ok", false, "error", "not ours (the compare-and-delete removed nothing)")),
            // A reset (lockbench keeps the adapter for another repetition) first closes this run's pool.
            () -> pool.close(), true);
    }
}
