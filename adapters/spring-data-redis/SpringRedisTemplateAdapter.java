/*
 * lockbench adapter for seed 003's first lock, on Spring Data Redis's RedisTemplate
 * (org.springframework.data:spring-data-redis, pom.xml) over Lettuce, as Spring Boot sets it up:
 * the seed injects the template Boot makes (@Resource by the name redisTemplate, a
 * RedisTemplate<Object, Object> with JDK serialization of keys and values), locks with
 * opsForValue().setIfAbsent(key, uuid, seconds, SECONDS) (SET NX EX) and releases with its Lua
 * compare-and-delete through redisTemplate.execute(DefaultRedisScript). So the key in the store is
 * the JDK-serialized key and value: bytes, not text. So the answer names neither a "token" nor a
 * "key" (the protocol's token is what the library stored): lockbench cannot read this lock's
 * key, and its key probe (probe_key_ttl) and its question to the lock server after a refused
 * write say nothing of it. No extend: the seed has none.
 * Speaks lockbench's protocol (docs/adapters.md) through the Java kit; built by build.sh.
 */
import static lockbench.LockbenchAdapter.*;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.SocketOptions;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.script.DefaultRedisScript;

public final class SpringRedisTemplateAdapter {
    // The seed's release, character for character.
    private static final String RELEASE =
        "if (redis.call('get',KEYS[1]) == ARGV[1]) then " +
                "return redis.call('del',KEYS[1]) " +
                "else " +
                "return 0 " +
                "end";

    public static void main(String[] args) throws Exception {
        Env env = env();
        if (env.ttlMs != null && env.ttlMs % 1000 != 0)
            notReady("the seed's lock takes whole seconds: ttl_ms " + env.ttlMs + " is not");
        Address node = env.nodes.get(0);
        // Boot's LettuceConnectionConfiguration, with the run's timeouts in place of its defaults;
        // the connect timeout is the op timeout, as Redisson's adapter's: a cold JVM's first
        // connection (Netty's classes loading) takes longer than a command's.
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
        // Boot's RedisAutoConfiguration.redisTemplate: a new template on the factory, its
        // serializers the default (JDK serialization).
        RedisTemplate<Object, Object> redisTemplate = new RedisTemplate<>();
        redisTemplate.setConnectionFactory(factory);
        redisTemplate.afterPropertiesSet();

        String[] value = {null};
        String warmKey = env.key + ":lockbench-warm:" + ProcessHandle.current().pid();
        // The first connection and script are the JVM's slowest, not a repetition's first acquire:
        // a lock of its own key taken and released first, a few tries, a failure only logged.
        for (int i = 0; i < 5; ++i) {
            try {
                if (Boolean.TRUE.equals(redisTemplate.opsForValue().setIfAbsent(warmKey, "warm", 1, TimeUnit.SECONDS)))
                    redisTemplate.execute(new DefaultRedisScript<>(RELEASE, Boolean.class), Collections.singletonList(warmKey), "warm");
                break;
            } catch (RuntimeException e) {
                System.err.println("lockbench adapter: warming up: " + describe(e));
            }
        }
        ready("spring-data-redis " + mavenVersion("org.springframework.data", "spring-data-redis")
                  + " (lettuce " + mavenVersion("io.lettuce", "lettuce-core") + ")",
              "seed 003: RedisTemplate setIfAbsent (SET NX EX, whole seconds) of a uuid, JDK-serialized key and value, Lua compare-and-delete release", false);
        serve(Map.of(
            "acquire", req -> {
                String candidate = UUID.randomUUID().toString().replace("-", "");  // IdUtil.fastSimpleUUID()
                Boolean flag = redisTemplate.opsForValue().setIfAbsent(req.get("key"), candidate, number(req, "ttl_ms") / 1000, TimeUnit.SECONDS);
                if (!Boolean.TRUE.equals(flag)) return obj("ok", false, "error", "held");
                value[0] = candidate;
                return obj("ok", true, "nodes", List.of(0));
            },
            "release", req -> {
                Boolean removed = redisTemplate.execute(new DefaultRedisScript<>(RELEASE, Boolean.class),
                                                        Collections.singletonList(req.get("key")), value[0]);
                return Boolean.TRUE.equals(removed) ? obj("ok", true, "removed_on", List.of(0))
                                                    : obj("ok", false, "error", "not ours (the compare-and-delete removed nothing)");
            }),
            // A reset (lockbench keeps the adapter for another repetition) first ends this run's connections.
            () -> factory.destroy(), true);
    }
}
