/*
 * lockbench's adapter protocol for a Java lock library (docs/adapters.md). The JDK, and
 * jackson-core for JSON (Debian: libjackson2-core-java).
 *
 * The protocol: lockbench starts the adapter with its settings in LOCKBENCH_* variables; the
 * adapter's first stdout line is {"ready": true, "library": ..., "algorithm": ..., "fencing": ...}
 * (or {"ready": false, "error": ...} and exit 1); then it reads one JSON request a line on stdin
 * (acquire, release, extend), one at a time, and answers each with one line {"ok": ..., ...};
 * {"event": "lost", "detail": ...} may come at any time, unasked. It exits when stdin closes.
 * stdout carries only those lines; logs and stack traces go to stderr.
 *
 * This class does all of that, as static methods: env() (the settings, parsed), ready, notReady,
 * missing, serve (the request loop: a handler's return value is its answer; one that throws
 * answers {"ok": false, "error": "<Type>: <message>"}, as does an unknown op or a line that is
 * not JSON, and the loop goes on; stdin closed: onClose, then exit 0), lost/event/say (one lock
 * around every stdout write: a thread's event never interleaves with an answer), and obj (a map
 * in the order its keys are written, for answers). When it is first used it sends System.out
 * (a library's stray printing) to stderr, and logs exceptions of other threads (a library's
 * timer or heartbeat) to stderr, never ending the adapter; an exception out of main before the
 * ready line becomes the not-ready line. The exit is Runtime.halt: a library's threads that are
 * not daemons must not keep the adapter alive. Use the kit first thing in main, before the
 * library can print.
 *
 * JSON: the JDK has no parser, and requests carry LOCKBENCH_PARAMS (any JSON object, nested)
 * besides their flat fields, so the kit reads and writes JSON with jackson-core's streaming API
 * (objects become LinkedHashMap, arrays ArrayList, integers Long, other numbers Double). It is
 * the JSON library Debian's Java packages already depend on (ZooKeeper and Curator pull it in),
 * and loads in a few milliseconds (jackson-databind would cost a JVM's start-up more). Without
 * it on the class path the not-ready line says what installs it.
 *
 * An adapter is one class in the default package that imports this one; it finds this file
 * through LOCKBENCH_KIT (the folder lockbench gives every adapter), else by its own path, and
 * compiles with it (javac -d classes $LOCKBENCH_KIT/LockbenchAdapter.java MyLockAdapter.java;
 * adapters/curator/build.sh does that), and its lock file runs
 * ["java", "-cp", "classes:/usr/share/java/jackson-core.jar:...", "MyLockAdapter"]:
 *
 *     import static lockbench.LockbenchAdapter.*;
 *     import java.util.Map;
 *
 *     public final class MyLockAdapter {
 *         public static void main(String[] args) throws Exception {
 *             Env env = env();
 *             if (!present("com.example.mylock.Client")) missing("mylock", "apt-get install libmylock-java");
 *             Client client = new Client(env.nodes.get(0).host, env.nodes.get(0).port, env.commandTimeoutMs);
 *             ready("mylock " + Client.VERSION, "SET NX PX with a random token, Lua release", false);
 *             serve(Map.of(
 *                 "acquire", req -> obj("ok", true, "token", client.lock((String) req.get("key"), number(req, "ttl_ms"))),
 *                 "release", req -> obj("ok", client.unlock())), null);
 *         }
 *     }
 */
package lockbench;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

public final class LockbenchAdapter {
    private LockbenchAdapter() {}

    /** A request's handler: the request as a map, its answer as a map with a boolean "ok". */
    @FunctionalInterface
    public interface Handler {
        Map<String, Object> handle(Map<String, Object> request) throws Exception;
    }

    /** One server or node: LOCKBENCH_NODES' "host:port". */
    public static final class Address {
        public final String host;
        public final int port;

        Address(String host, int port) {
            this.host = host;
            this.port = port;
        }

        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    /** The settings lockbench gives every adapter. An absent number is null. */
    public static final class Env {
        public final List<Address> nodes;             // node 0 first
        public final String key;
        public final Integer client;                  // -1: the start-up check
        public final Integer ttlMs;
        public final Map<String, Object> params;     // the run's parameters, as written
        public final Integer commandTimeoutMs;
        public final Integer opTimeoutMs;
        public final Integer connectTimeoutMs;
        // Under Sentinel: where to ask for the master, and this client's own path to each
        // address the Sentinels may name ("host:port" -> Address).
        public final List<Address> sentinels;
        public final String masterName;
        public final Map<String, Address> addressMap;

        Env(Map<String, String> environ) throws IOException {
            nodes = addresses(environ.get("LOCKBENCH_NODES"));
            key = environ.get("LOCKBENCH_KEY");
            client = number(environ.get("LOCKBENCH_CLIENT"));
            ttlMs = number(environ.get("LOCKBENCH_TTL_MS"));
            Object p = parse(orEmpty(environ.get("LOCKBENCH_PARAMS"), "{}"));
            if (!(p instanceof Map)) throw new IllegalArgumentException("LOCKBENCH_PARAMS is not an object: " + p);
            params = Collections.unmodifiableMap(castMap(p));
            commandTimeoutMs = number(environ.get("LOCKBENCH_COMMAND_TIMEOUT_MS"));
            opTimeoutMs = number(environ.get("LOCKBENCH_OP_TIMEOUT_MS"));
            connectTimeoutMs = number(environ.get("LOCKBENCH_CONNECT_TIMEOUT_MS"));
            sentinels = addresses(environ.get("LOCKBENCH_SENTINELS"));
            masterName = environ.get("LOCKBENCH_MASTER_NAME");
            Object m = parse(orEmpty(environ.get("LOCKBENCH_ADDRESS_MAP"), "{}"));
            if (!(m instanceof Map)) throw new IllegalArgumentException("LOCKBENCH_ADDRESS_MAP is not an object: " + m);
            Map<String, Address> map = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : castMap(m).entrySet()) map.put(e.getKey(), address(String.valueOf(e.getValue())));
            addressMap = Collections.unmodifiableMap(map);
        }

        /** This client's own path to an address a Sentinel named. */
        public Address ownPath(String host, int port) {
            Address mapped = addressMap.get(host + ":" + port);
            return mapped != null ? mapped : new Address(host, port);
        }

        /** The nodes as a connect string: "host:port,host:port". */
        public String connectString() {
            StringBuilder s = new StringBuilder();
            for (Address a : nodes) s.append(s.length() > 0 ? "," : "").append(a);
            return s.toString();
        }

        private static String orEmpty(String text, String empty) {
            return text == null || text.isEmpty() ? empty : text;
        }

        private static Integer number(String text) {
            return text == null || text.isEmpty() ? null : Integer.valueOf(text.strip());
        }

        private static List<Address> addresses(String text) {
            List<Address> out = new ArrayList<>();
            if (text != null) for (String a : text.split(",")) if (!a.isEmpty()) out.add(address(a));
            return Collections.unmodifiableList(out);
        }
    }

    // ---- stdout: the protocol's, one lock around every line ------------------------------------

    private static final OutputStream OUT = new FileOutputStream(FileDescriptor.out);  // the protocol's stream
    private static final Object OUT_LOCK = new Object();
    private static final Thread MAIN = Thread.currentThread();  // the kit is first used on main
    private static volatile boolean readySaid = false;
    private static final JsonFactory JSON;
    private static volatile Env ENV;  // a reset gives it the next run's settings

    static {
        System.setOut(System.err);  // a library's stray printing: logs, never protocol
        Thread.setDefaultUncaughtExceptionHandler(LockbenchAdapter::uncaught);
        JsonFactory json = null;
        try {
            json = new JsonFactory();
        } catch (LinkageError e) {  // jackson-core is not on the class path: say so in the protocol's words
            writeRaw("{\"ready\": false, \"error\": \"jackson-core is missing: apt-get install libjackson2-core-java"
                     + " (and /usr/share/java/jackson-core.jar on the class path)\"}\n");
            exit(1);
        }
        JSON = json;
        Env env = null;
        try {
            env = new Env(System.getenv());
        } catch (Exception e) {  // a malformed setting: nothing can run
            notReady("lockbench's environment: " + describe(e));
        }
        ENV = env;
    }

    /** The settings, parsed (the first call sets the kit up: use it first thing in main). */
    public static Env env() {
        return ENV;
    }

    /** Writes one protocol line, whole, from any thread. */
    public static void say(Map<String, ?> obj) {
        writeRaw(toJson(obj) + "\n");
    }

    private static void writeRaw(String line) {
        byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
        synchronized (OUT_LOCK) {
            try {
                OUT.write(bytes);  // unbuffered: one write, flushed
            } catch (IOException e) {  // lockbench has gone: nobody is left to answer
                System.err.println("lockbench adapter: stdout: " + e);
                exit(1);
            }
        }
    }

    /** An exception as an answer's error text: "<Type>: <message>". */
    public static String describe(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }

    /** Ends the adapter at once: a library's threads must not keep it alive. */
    public static void exit(int status) {
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }

    /** The first line says why the adapter cannot run; exit 1. */
    public static void notReady(String error) {
        say(obj("ready", false, "error", error));
        exit(1);
    }

    /** A library that is not installed: "<what> is missing: <how>" (how installs it). */
    public static void missing(String what, String how) {
        notReady(what + " is missing: " + how);
    }

    /** Whether a class can be loaded: the library is on the class path. */
    public static boolean present(String className) {
        try {
            Class.forName(className, false, LockbenchAdapter.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * The version of a jar Maven built, as its pom.properties records it
     * (META-INF/maven/GROUP/ARTIFACT/pom.properties), "?" when the class path has none: the
     * library's own record, for the ready line, where its manifest names no version.
     */
    public static String mavenVersion(String group, String artifact) {
        String resource = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (java.io.InputStream in = LockbenchAdapter.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) return versionInJarName(artifact);
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (IOException e) {
            return "?";
        }
    }

    // A jar without Maven's pom.properties (Spring's): the version in its file name on the class
    // path, ARTIFACT-VERSION.jar, as Maven names what it resolves (maven-build.sh's lib/).
    private static String versionInJarName(String artifact) {
        java.util.regex.Pattern name = java.util.regex.Pattern.compile(
            java.util.regex.Pattern.quote(artifact) + "-([0-9][^/]*)\\.jar");
        for (String entry : System.getProperty("java.class.path", "").split(java.io.File.pathSeparator)) {
            java.util.regex.Matcher m = name.matcher(new java.io.File(entry).getName());
            if (m.matches()) return m.group(1);
        }
        return "?";
    }

    /** The ready line: library "NAME VERSION" (read from the package), algorithm in one line. */
    public static void ready(String library, String algorithm, boolean fencing) {
        ready(library, algorithm, fencing, Map.of());
    }

    public static void ready(String library, String algorithm, boolean fencing, Map<String, ?> extra) {
        Map<String, Object> line = obj("ready", true, "library", library, "algorithm", algorithm, "fencing", fencing);
        line.putAll(extra);
        if (resetting) {  // main run again by a reset: this is the reset's answer
            line.remove("ready");
            resetDescribed = line;
            return;
        }
        say(line);
        readySaid = true;
    }

    /** An unsolicited line, {"event": kind, ...}, at any time, from any thread. */
    public static void event(String kind, Map<String, ?> fields) {
        Map<String, Object> line = obj("event", kind);
        line.putAll(fields);
        say(line);
    }

    /** The library says the lock is lost. */
    public static void lost(String detail) {
        event("lost", obj("detail", detail));
    }

    /** A map of the keys and values given in turn, in that order: obj("ok", true, "token", t). */
    public static Map<String, Object> obj(Object... keysAndValues) {
        if (keysAndValues.length % 2 != 0) throw new IllegalArgumentException("obj: a key without a value");
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        return map;
    }

    /** A request's number field as a long (JSON integers are Long, others Double). */
    public static long number(Map<String, Object> request, String field) {
        Object v = request.get(field);
        if (!(v instanceof Number)) throw new IllegalArgumentException("\"" + field + "\" is not a number: " + v);
        return ((Number) v).longValue();
    }

    // ---- the request loop ----------------------------------------------------------------------

    // The settings a run gives, which the next run's reset replaces (the others stay as started).
    private static final List<String> SETTINGS = List.of("NODES", "KEY", "CLIENT", "TTL_MS", "PARAMS", "COMMAND_TIMEOUT_MS",
        "OP_TIMEOUT_MS", "CONNECT_TIMEOUT_MS", "SENTINELS", "MASTER_NAME", "ADDRESS_MAP", "USER", "PASSWORD", "DATABASE");
    private static volatile boolean resetting = false;  // main runs again: ready and serve are the reset's
    private static Map<String, Object> resetDescribed;
    private static Object[] resetServed;                // {handlers, onClose}

    /**
     * Answers requests in order, one at a time, until stdin closes; then onClose (may be null),
     * exit 0. handlers: op name -> handler.
     *
     * kept (the three-argument serve) says the adapter may be kept across repetitions
     * (lockbench's matrix keeps it rather than start a JVM for every client of every run):
     * onClose drops everything its library holds (connections, threads, state), and running main
     * again builds everything anew. Then {"op": "reset"} at a run's end has onClose drop the
     * library's connections and state, and the adapter waits, holding nothing;
     * {"op": "reset", "env": {LOCKBENCH_*: ...}} readies it for another run: env() returns the
     * new settings and the adapter's main runs again, with no arguments (the classes it loaded
     * stay loaded and compiled: that is the start-up saved), its ready and serve making the
     * reset's answer {"ok": true, "library": ..., ...} and the handlers from then on. Its static
     * initialisers do not run again: keep a run's state in what main builds. Without kept (or
     * onClose), a reset answers {"ok": false, ...}, and lockbench starts a new adapter for each run.
     */
    public static void serve(Map<String, Handler> handlers, Runnable onClose) throws IOException {
        serve(handlers, onClose, false);
    }

    /** The same; kept: the adapter may be kept across repetitions (above). */
    public static void serve(Map<String, Handler> handlers, Runnable onClose, boolean kept) throws IOException {
        if (resetting) {
            resetServed = new Object[] {handlers, onClose, kept};
            return;
        }
        // The adapter's class: the one whose main is at the bottom of the stack.
        Class<?> adapter = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE).walk(frames -> frames
            .filter(f -> f.getMethodName().equals("main")).reduce((a, b) -> b).map(StackWalker.StackFrame::getDeclaringClass)
            .orElse(null));
        Map<String, Handler> current = handlers;
        Runnable close = onClose;
        boolean keep = kept;
        boolean closed = false;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            Map<String, Object> reset = resetRequest(line);
            Map<String, Object> answer;
            if (reset == null) {
                answer = answer(current, line);
            } else if (!keep || close == null || adapter == null) {
                answer = obj("ok", false, "error", "reset is not supported: the adapter does not serve(handlers, onClose, true)");
            } else {
                try {
                    if (!closed) close.run();
                    closed = true;
                    if (!reset.containsKey("env")) {
                        answer = obj("ok", true);  // the run's end: nothing held until the next
                    } else if (!(reset.get("env") instanceof Map)) {
                        answer = obj("ok", false, "error", "reset: env is not an object");
                    } else {
                        Map<String, String> vars = new java.util.HashMap<>(System.getenv());
                        for (String name : SETTINGS) vars.remove("LOCKBENCH_" + name);
                        for (Map.Entry<String, Object> e : castMap(reset.get("env")).entrySet()) vars.put(e.getKey(), String.valueOf(e.getValue()));
                        ENV = new Env(vars);
                        resetDescribed = null;
                        resetServed = null;
                        resetting = true;
                        try {
                            adapter.getMethod("main", String[].class).invoke(null, (Object) new String[0]);
                        } finally {
                            resetting = false;
                        }
                        if (resetDescribed == null || resetServed == null) {
                            answer = obj("ok", false, "error", "reset: the adapter did not say ready and serve");
                        } else {
                            @SuppressWarnings("unchecked")
                            Map<String, Handler> served = (Map<String, Handler>) resetServed[0];
                            current = served;
                            close = (Runnable) resetServed[1];
                            keep = (Boolean) resetServed[2];
                            closed = false;
                            answer = obj("ok", true);
                            answer.putAll(resetDescribed);
                        }
                    }
                } catch (Throwable e) {  // the reset failed: lockbench ends this adapter
                    Throwable why = e instanceof java.lang.reflect.InvocationTargetException && e.getCause() != null ? e.getCause() : e;
                    answer = obj("ok", false, "error", "reset: " + describe(why));
                }
            }
            String text;
            try {
                text = toJson(answer);
            } catch (IllegalArgumentException e) {  // an answer JSON cannot carry
                text = toJson(obj("ok", false, "error", describe(e)));
            }
            writeRaw(text + "\n");
        }
        if (close != null && !closed) {
            try {
                close.run();
            } catch (Throwable e) {  // the answers are all given; the exit stays clean
                e.printStackTrace();
            }
        }
        exit(0);
    }

    /** The request if the line is a reset, else null. */
    private static Map<String, Object> resetRequest(String line) {
        try {
            Object parsed = parse(line);
            if (parsed instanceof Map && "reset".equals(castMap(parsed).get("op"))) return castMap(parsed);
        } catch (IOException e) {  // not JSON: answer() says so
        }
        return null;
    }

    private static Map<String, Object> answer(Map<String, Handler> handlers, String line) {
        Object parsed;
        try {
            parsed = parse(line);
        } catch (IOException e) {
            return obj("ok", false, "error", "not JSON: " + clip(line.strip()));
        }
        if (!(parsed instanceof Map) || !(castMap(parsed).get("op") instanceof String))
            return obj("ok", false, "error", "not a request (no op): " + clip(line.strip()));
        Map<String, Object> req = castMap(parsed);
        String op = (String) req.get("op");
        Handler handler = handlers.get(op);
        if (handler == null) return obj("ok", false, "error", op + " is not supported");
        Map<String, Object> answer;
        try {
            answer = handler.handle(req);
        } catch (Exception | LinkageError | AssertionError e) {  // a request that fails fails alone
            return obj("ok", false, "error", describe(e));
        }
        if (answer == null || !(answer.get("ok") instanceof Boolean)) {
            String shown;
            try {
                shown = answer == null ? "null" : toJson(answer);
            } catch (IllegalArgumentException e) {
                shown = String.valueOf(answer);
            }
            return obj("ok", false, "error", op + " answered " + shown + ", not {\"ok\": true|false, ...}");
        }
        return answer;
    }

    private static String clip(String text) {
        return text.length() <= 200 ? text : text.substring(0, 200);
    }

    private static void uncaught(Thread thread, Throwable e) {
        if (thread == MAIN) {
            e.printStackTrace();
            if (!readySaid) say(obj("ready", false, "error", describe(e)));
            exit(1);
        }
        System.err.println("lockbench adapter: exception in thread " + thread.getName() + " (the adapter goes on):");
        e.printStackTrace();
    }

    // ---- JSON, through jackson-core's streaming parser and generator ---------------------------

    /** One JSON value (an object: a LinkedHashMap; integers Long, other numbers Double). */
    public static Object parse(String text) throws IOException {
        try (JsonParser p = JSON.createParser(text)) {
            if (p.nextToken() == null) throw new IOException("no JSON value");
            Object value = read(p);
            if (p.nextToken() != null) throw new IOException("more after the JSON value");
            return value;
        } catch (RuntimeException e) {  // a number too large for a double, and its kin
            throw new IOException(e);
        }
    }

    private static Object read(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case START_OBJECT: {
                Map<String, Object> map = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    p.nextToken();
                    map.put(name, read(p));
                }
                return map;
            }
            case START_ARRAY: {
                List<Object> list = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) list.add(read(p));
                return list;
            }
            case VALUE_STRING:
                return p.getText();
            case VALUE_NUMBER_INT:
                return p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? (Object) p.getDoubleValue() : (Object) p.getLongValue();
            case VALUE_NUMBER_FLOAT:
                return p.getDoubleValue();
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NULL:
                return null;
            default:
                throw new IOException("unexpected " + t);
        }
    }

    /** One JSON line's text: maps, collections, arrays of objects, strings, numbers, booleans, null. */
    public static String toJson(Object value) {
        StringWriter s = new StringWriter();
        try (JsonGenerator g = JSON.createGenerator(s)) {
            write(g, value);
        } catch (IOException e) {  // a StringWriter does not fail
            throw new IllegalStateException(e);
        }
        return s.toString();
    }

    private static void write(JsonGenerator g, Object v) throws IOException {
        if (v == null) {
            g.writeNull();
        } else if (v instanceof String) {
            g.writeString((String) v);
        } else if (v instanceof Boolean) {
            g.writeBoolean((Boolean) v);
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            g.writeNumber(((Number) v).longValue());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) throw new IllegalArgumentException("not a JSON number: " + d);
            g.writeNumber(d);
        } else if (v instanceof java.math.BigInteger) {
            g.writeNumber((java.math.BigInteger) v);
        } else if (v instanceof java.math.BigDecimal) {
            g.writeNumber((java.math.BigDecimal) v);
        } else if (v instanceof Map) {
            g.writeStartObject();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!(e.getKey() instanceof String)) throw new IllegalArgumentException("a JSON key must be a string: " + e.getKey());
                g.writeFieldName((String) e.getKey());
                write(g, e.getValue());
            }
            g.writeEndObject();
        } else if (v instanceof Collection) {
            g.writeStartArray();
            for (Object o : (Collection<?>) v) write(g, o);
            g.writeEndArray();
        } else if (v instanceof Object[]) {
            g.writeStartArray();
            for (Object o : (Object[]) v) write(g, o);
            g.writeEndArray();
        } else if (v instanceof Address) {
            Address a = (Address) v;
            write(g, List.of(a.host, a.port));
        } else {
            throw new IllegalArgumentException("not JSON: a " + v.getClass().getName() + " (" + v + ")");
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Object o) {
        return (Map<String, Object>) o;
    }

    private static Address address(String text) {
        int at = text.lastIndexOf(':');
        if (at < 0) throw new IllegalArgumentException("not host:port: " + text);
        return new Address(text.substring(0, at), Integer.parseInt(text.substring(at + 1).strip()));
    }
}
