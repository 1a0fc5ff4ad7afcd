/*
 * lockbench adapter for Spring Integration's RedisLockRegistry
 * (org.springframework.integration:spring-integration-redis, pom.xml) over Spring Data Redis and
 * Lettuce, as an application sets it up: new RedisLockRegistry(connectionFactory, registryKey,
 * expireAfter = the run's TTL), obtain(key), tryLock(wait), unlock(). The registry's default lock
 * type (a spin lock): a Lua script that SETs <registryKey>:<key> to the registry's client id with
 * PX expireAfter if it is free, or re-PEXPIREs it if it is already this client's; unlock deletes
 * it if it is still this client's (Redis 8.4's DELEX ... IFEQ first; on an older Redis, which
 * answers "unknown command", a Lua compare-and-delete from then on), and throws when it had
 * expired. Each grant is also a local
 * ReentrantLock of the registry's, which every request (all on main) takes in turn. No renewal:
 * the registry renews only when asked to (renewLock), and nothing here asks.
 * Speaks lockbench's protocol (docs/adapters.md) through the Java kit; built by build.sh.
 */
import static lockbench.LockbenchAdapter.*;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.SocketOptions;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;

public final class SpringLockRegistryAdapter {
    static final String REGISTRY = "lockbench";  // the registryKey: the store's key is lockbench:<key>

    public static void main(String[] args) throws Exception {
        Env env = env();
        Address node = env.nodes.get(0);
        // Spring Boot's LettuceConnectionConfiguration, with the run's timeouts; the connect
        // timeout is the op timeout (a cold JVM's first connection loads Netty's classes).
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
            new RedisStandaloneConfiguration(node.host, node.port),
            LettuceClientConfiguration.builder()
                .commandTimeout(Duration.ofMillis(env.commandTimeoutMs))
                .clientOptions(ClientOptions.builder()
                    .socketOptions(SocketOptions.builder().connectTimeout(Duration.ofMillis(env.opTimeoutMs)).build())
                    .build())
                .build());
        factory.afterPropertiesSet();
        factory.start();
        RedisLockRegistry registry = new RedisLockRegistry(factory, REGISTRY, env.ttlMs);

        // A lock of its own key taken and released first (a few tries, a failure only logged):
        // the first connection and script are the JVM's slowest, not a repetition's first acquire.
        Lock warm = registry.obtain(env.key + ":lockbench-warm:" + ProcessHandle.current().pid());
        for (int i = 0; i < 5; ++i) {
            try {
                if (warm.tryLock(0, TimeUnit.MILLISECONDS)) warm.unlock();
                break;
            } catch (RuntimeException e) {
                System.err.println("lockbench adapter: warming up: " + describe(e));
            }
        }
        ready("spring-integration-redis " + mavenVersion("org.springframework.integration", "spring-integration-redis")
                  + " (spring-data-redis " + mavenVersion("org.springframework.data", "spring-data-redis")
                  + ", lettuce " + mavenVersion("io.lettuce", "lettuce-core") + ")",
              "RedisLockRegistry: a local lock, then Lua SET <registry>:<key> <client id> PX expireAfter if free (PEXPIRE if its own), Lua compare-and-delete unlock", false);
        serve(Map.of(
            "acquire", req -> {
                Lock lock = registry.obtain(req.get("key"));
                if (!lock.tryLock(number(req, "wait_ms"), TimeUnit.MILLISECONDS)) return obj("ok", false, "error", "held");
                // The key it stored, <registryKey>:<key>, which the TTL probe reads.
                return obj("ok", true, "nodes", List.of(0), "key", REGISTRY + ":" + req.get("key"));
            },
            "release", req -> {
                registry.obtain(req.get("key")).unlock();  // throws when the key was no longer this client's
                return obj("ok", true, "removed_on", List.of(0));
            }),
            // A reset (lockbench keeps the adapter for another repetition) first ends this run's
            // registry and its connections.
            () -> {
                registry.destroy();
                factory.destroy();
            }, true);
    }
}
