/*
 * Build time only (adapters/curator/build.sh): one session of the adapter against a ZooKeeper
 * server embedded here, so that the adapter's JVM, started with -XX:ArchiveClassesAtExit, writes
 * the classes a run loads (Curator's, ZooKeeper's client, Guava's, the kit's) into a CDS archive.
 * The lock files' java loads them from that archive, which halves its start-up (see build.sh).
 *
 * Usage: java -cp CLASSPATH CdsTraining java ARGS... CuratorAdapter. The command is run with a
 * lockbench-like environment (one server, a 1 s session) and asked what a run asks: acquire,
 * acquire again (held), release, release again (not held), extend (refused), a line that is not
 * JSON, an unknown op; then its stdin is closed and it must exit 0. Exits 1, saying why on
 * stderr, when the adapter does not answer as expected; the server and the adapter end with it.
 */
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

public final class CdsTraining {
    private CdsTraining() {}

    public static void main(String[] args) throws Exception {
        System.setProperty("zookeeper.admin.enableServer", "false");
        File dir = Files.createTempDirectory("lockbench-cds-zk").toFile();
        ZooKeeperServer server = new ZooKeeperServer(dir, dir, 100);
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 16);
        factory.startup(server);
        int status = 1;
        try {
            status = session(args, factory.getLocalPort()) ? 0 : 1;
        } finally {
            factory.shutdown();
            server.shutdown();
            try (var files = Files.walk(dir.toPath())) {
                files.sorted(Comparator.reverseOrder()).map(java.nio.file.Path::toFile).forEach(File::delete);
            }
        }
        System.exit(status);
    }

    private static boolean session(String[] command, int port) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        Map<String, String> env = pb.environment();
        env.put("LOCKBENCH_NODES", "127.0.0.1:" + port);
        env.put("LOCKBENCH_KEY", "lockbench:lock");
        env.put("LOCKBENCH_CLIENT", "0");
        env.put("LOCKBENCH_TTL_MS", "1000");
        env.put("LOCKBENCH_PARAMS", "{\"listener\": true}");
        env.put("LOCKBENCH_COMMAND_TIMEOUT_MS", "200");
        env.put("LOCKBENCH_OP_TIMEOUT_MS", "2000");
        env.put("LOCKBENCH_CONNECT_TIMEOUT_MS", "200");
        Process adapter = pb.start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(adapter.getInputStream(), StandardCharsets.UTF_8));
             OutputStream in = adapter.getOutputStream()) {
            if (!expect(out.readLine(), "{\"ready\":true")) return false;
            String acquire = "{\"op\": \"acquire\", \"key\": \"lockbench:lock\", \"ttl_ms\": 1000, \"wait_ms\": 0}";
            String release = "{\"op\": \"release\", \"key\": \"lockbench:lock\"}";
            String[][] asked = {
                {acquire, "{\"ok\":true,\"token\":"},
                {acquire, "{\"ok\":false,\"error\":\"held\"}"},
                {release, "{\"ok\":true,\"removed_on\":[0]}"},
                {release, "{\"ok\":false,\"error\":\"not held\"}"},
                {"{\"op\": \"extend\", \"key\": \"lockbench:lock\", \"ttl_ms\": 1000, \"replace\": true}", "{\"ok\":false,"},
                {"not JSON", "{\"ok\":false,\"error\":\"not JSON"},
                {"{\"op\": \"unknown\"}", "{\"ok\":false,\"error\":\"unknown is not supported\"}"},
                {acquire, "{\"ok\":true,\"token\":"},
                {release, "{\"ok\":true,\"removed_on\":[0]}"},
            };
            for (String[] request : asked) {
                in.write((request[0] + "\n").getBytes(StandardCharsets.UTF_8));
                in.flush();
                if (!expect(out.readLine(), request[1])) return false;
            }
        }
        if (!adapter.waitFor(30, TimeUnit.SECONDS)) {
            System.err.println("CdsTraining: the adapter did not exit within 30 s of its stdin closing");
            adapter.destroyForcibly();
            return false;
        }
        if (adapter.exitValue() != 0) {
            System.err.println("CdsTraining: the adapter exited " + adapter.exitValue() + ": " + Arrays.toString(command));
            return false;
        }
        return true;
    }

    private static boolean expect(String line, String start) {
        if (line != null && line.startsWith(start)) return true;
        System.err.println("CdsTraining: expected a line starting " + start + ", got " + line);
        return false;
    }
}
