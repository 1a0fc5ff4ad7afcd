// `lockbench verdict` and `lockbench adapter-check` as a team meets them, through the real
// binary and live servers: a lock file that is not in the catalog (a shipped adapter under
// another name, in a folder of its own) gets its whole verdict, and adapters that break the
// protocol are named in one line per failure.
#include <set>

#include "cli_util.h"

namespace {

const fs::path kSource = LOCKBENCH_SOURCE_DIR;

class VerdictTest : public CliTest {
protected:
    // warlock's lock file as a team would write it for their own lock: another name, in a
    // folder of its own, its adapter's path absolute.
    fs::path team_lock(nlohmann::json extra = nlohmann::json::object()) {
        nlohmann::json j = nlohmann::json::parse(std::ifstream(kSource / "locks" / "warlock.json"));
        j["command"] = {"node", (kSource / "adapters" / "node-redis-warlock" / "adapter.js").string()};
        j.update(extra);
        fs::create_directories(dir() / "team");
        return write_file("team/team-lock.json", j.dump(2));
    }

    nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }
};

// The whole row of a lock nobody recorded: every class with its verdict or why it does not
// apply, the report beside it, exit 0 (no record to differ from).
TEST_F(VerdictTest, ALockFileOutsideTheCatalogGetsItsWholeVerdict) {
    const fs::path lock = team_lock(), out = dir() / "verdict";
    const Result r = run({"verdict", lock.string(), "--repeat", "1", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: team-lock: speaks the protocol"), std::string::npos) << r.out;
    const nlohmann::json v = read_json(out / "verdict.json");
    EXPECT_EQ(v.at("lock"), "team-lock");
    EXPECT_EQ(v.at("library").at("library").get<std::string>().rfind("node-redis-warlock ", 0), 0u) << v.at("library");
    std::map<std::string, std::string> row;
    for (const auto& c : v.at("classes")) row[c.at("class")] = c.at("verdict");
    EXPECT_EQ(row.size(), 10u);  // every column of the table, "discovered" included
    // What the literature predicts of a token lock on one node, and what it cannot be put through.
    EXPECT_EQ(row["baseline"], "safe");
    EXPECT_EQ(row["gc-pause"], "2 holders");
    EXPECT_EQ(row["node-clock-jump"], "2 holders");
    EXPECT_EQ(row["failover"], "2 holders");
    EXPECT_EQ(row["discovered"], "not applicable");  // the kept discovered case needs a point only the GETSET lock passes
    for (const auto& c : v.at("classes")) {
        if (c.at("verdict") != "not applicable") continue;
        EXPECT_FALSE(c.at("why").empty()) << c;
        for (const auto& why : c.at("why"))  // the matrix's reason, read back from its summary
            EXPECT_EQ(why.get<std::string>().find(": not run"), std::string::npos) << c;
    }
    for (const auto& c : v.at("cases")) {
        EXPECT_EQ(c.at("repetitions"), 1) << c;
        if (c.at("verdict") == "2 holders") {
            EXPECT_TRUE(c.contains("witness")) << c;
            EXPECT_NE(c.value("replay", std::string()).find("lockbench run "), std::string::npos) << c;
        }
    }
    EXPECT_TRUE(v.at("differences").empty()) << v.at("differences");
    // The rows beside it: the lock files that say "reference": true, in the folder's order.
    std::vector<std::string> reference;
    for (const auto& ref : v.at("reference")) reference.push_back(ref.at("lock"));
    EXPECT_EQ(reference, (std::vector<std::string>{"etcd", "etcd+fence", "redlock", "token-lua", "token-lua+fence",
                                                   "zookeeper", "zookeeper+fence"}));
    EXPECT_TRUE(fs::exists(out / "report.html")) << r.describe();
    EXPECT_TRUE(fs::exists(out / "report.md")) << r.describe();
}

// No shell between lockbench and its report: an --out with a space and a ';' is a folder's name
// (before, `verdict --out "D;touch X"` created X and a space lost the report).
TEST_F(VerdictTest, AnOutWithASpaceOrASemicolonIsAFolderNotAShellCommand) {
    const fs::path x = dir() / "x", out = dir() / ("a verdict;touch " + x.string());
    const Result r = run({"verdict", "token-lua", "--case", "baseline", "--repeat", "1", "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_TRUE(fs::exists(out / "report.html")) << r.describe();
    EXPECT_FALSE(fs::exists(x)) << "a shell ran part of --out";
    EXPECT_FALSE(fs::exists(dir() / "a verdict")) << "a shell split --out";
}

// README's demo: one case asked for prints its class's verdict alone (no line for the classes
// it was not asked about) and where the report drew its timeline.
TEST_F(VerdictTest, OneCasePrintsItsVerdictAndWhereItsTimelineIs) {
    const fs::path out = dir() / "demo";
    const Result r = run({"verdict", "token-lua", "--case", "gc-pause", "--repeat", "1", "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("token-lua (built-in):\n  gc-pause: 2 holders (2 holders 1/1)\nverdict: "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("not applicable"), std::string::npos) << r.out;
    const fs::path timeline = out / "report-images" / "witness-gc-pause.png";
    EXPECT_NE(r.out.find("\ntimeline: " + timeline.string() + "\n"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(timeline));
}

// A lock whose record says otherwise: exit 1, one line naming the case that differs.
TEST_F(VerdictTest, AVerdictThatDiffersFromTheRecordExitsOneNamingTheCase) {
    const fs::path lock = team_lock({{"expected", {{"gc-pause", "safe"}}}}), out = dir() / "verdict";
    const Result r = run({"verdict", lock.string(), "--case", "gc-pause", "--case", "baseline", "--repeat", "1",
                          "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.out.find("differs: gc-pause: the lock file records safe; got 2 holders 1/1"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("differs: baseline"), std::string::npos) << r.out;
}

// README's steps 5 and 6 in turn, into the same folder: the row read, then recorded in the
// lock file. The record is part of the runs' expectations, so the folder holds other settings
// now; the verdict is made afresh (saying so), not refused, and a record that differs exits 1.
// Another lock's tree in that folder is still refused, and nothing of it is removed.
TEST_F(VerdictTest, RecordingTheRowThenAskingAgainMakesTheVerdictAfresh) {
    const fs::path lock = team_lock({{"expected", nlohmann::json::object()}}), out = dir() / "verdict";  // no row yet
    const std::vector<std::string> ask{"verdict", lock.string(), "--case", "gc-pause", "--repeat", "1", "--out", out.string()};
    Result r = run(ask);
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    team_lock({{"expected", {{"gc-pause", "2 holders"}}}});
    r = run(ask);
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.err.find(out.string() + " holds a verdict of team-lock made with other settings"), std::string::npos) << r.err;
    team_lock({{"expected", {{"gc-pause", "safe"}}}});
    r = run(ask);
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.out.find("differs: gc-pause: the lock file records safe; got 2 holders 1/1"), std::string::npos) << r.out;
    // The same settings again resume: nothing is made afresh.
    r = run(ask);
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_EQ(r.err.find("made afresh"), std::string::npos) << r.err;
    // Another lock's verdict there is not this one's to replace.
    r = run({"verdict", "token-lua", "--case", "gc-pause", "--repeat", "1", "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.err.find("holds results of another matrix"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(out / "verdict.json"));
    // Nor is a matrix's tree of this lock alone (it has no verdict.json).
    const fs::path tree = dir() / "matrix";
    r = run({"matrix", (kSource / "scenarios" / "baseline.json").string(), "--lock", lock.string(), "--repeat", "1",
             "--out", tree.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    r = run({"verdict", lock.string(), "--case", "baseline", "--repeat", "1", "--out", tree.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.err.find("holds results of another matrix"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(tree / "summary.json"));
}

// Two versions of one library side by side (here two locks, for speed): the other's verdict
// in OUT/versus-<name>, then each class that runs here beside there, the differing ones marked,
// and verdict.json's "versus" saying the same.
TEST_F(VerdictTest, VersusAnotherLockSetsEachClassBesideItAndMarksWhereTheyDiffer) {
    const fs::path lock = team_lock(), out = dir() / "verdict";
    const Result r = run({"verdict", lock.string(), "--case", "gc-pause", "--case", "baseline", "--repeat", "1",
                          "--versus", "token-lua+fence", "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("team-lock versus token-lua+fence (built-in), class by class (team-lock | token-lua+fence):"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n  baseline: safe 1/1 | safe 1/1\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n* gc-pause: 2 holders 1/1 | stale write refused 1/1\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n  the classes marked * differ: gc-pause; the cases listed differ or ran on one side only; "
                         "the one case both ran has the same word\n"),
              std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(out / "versus-token-lua+fence" / "verdict.json"));
    const nlohmann::json vs = read_json(out / "verdict.json").at("versus");
    EXPECT_EQ(vs.at("lock"), "token-lua+fence");
    EXPECT_FALSE(vs.at("same").get<bool>());
    EXPECT_EQ(vs.at("cases_same"), 1) << vs.dump();  // baseline
    ASSERT_EQ(vs.at("cases").size(), 1u) << vs.dump();
    EXPECT_EQ(vs.at("cases").at(0).at("case"), "gc-pause");
    EXPECT_EQ(vs.at("cases").at(0).at("there"), "stale write refused 1/1");
}

// The live search, with no case written for it: on a one-node lease lock without fencing it
// finds the GC-pause class and the held-replies class, each with a witness that replays, and
// says what it tried. Asserted: the classes found, not when.
TEST_F(VerdictTest, TheLiveSearchFindsTheGcPauseAndHeldRepliesClassesWithoutACase) {
    const fs::path out = dir() / "verdict";
    const Result r = run({"verdict", "token-lua", "--case", "baseline", "--repeat", "1", "--discover", "60", "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const nlohmann::json v = read_json(out / "verdict.json");
    EXPECT_EQ(v.at("version"), 2);
    std::map<std::string, nlohmann::json> found;
    for (const auto& d : v.at("discovered")) found.emplace(d.at("failure_class").get<std::string>(), d);
    for (const char* klass : {"gc-pause", "held-replies"}) {
        ASSERT_TRUE(found.contains(klass)) << klass << " not found: " << v.at("discovered").dump(2);
        const nlohmann::json& d = found.at(klass);
        EXPECT_GE(d.at("repetitions_violating").get<int>(), 1) << d;
        EXPECT_FALSE(d.at("faults").empty()) << d;
        EXPECT_TRUE(fs::exists(out / d.at("witness").get<std::string>())) << d;
    }
    // The GC pause's witness replays live as it is: two holders again.
    const Result replay = run({"run", (out / found.at("gc-pause").at("witness").get<std::string>()).string(), "--out",
                               (dir() / "replay").string()});
    ASSERT_TRUE(fs::exists(dir() / "replay" / "summary.json")) << replay.describe();
    const nlohmann::json summary = read_json(dir() / "replay" / "summary.json");
    EXPECT_EQ(summary.at("runs").at(0).at("verdict"), "2 holders") << summary.dump(2);
    // Coverage: what was tried, every entry tried at least once and violated no more often.
    const nlohmann::json& d = v.at("discover");
    EXPECT_EQ(d.at("model"), "token-lua");
    EXPECT_GE(d.at("schedules_tried").get<int>(), 2);
    ASSERT_FALSE(d.at("coverage").empty());
    long long tried = 0;
    for (const auto& c : d.at("coverage")) {
        EXPECT_GE(c.at("tried").get<int>(), 1) << c;
        EXPECT_LE(c.at("violated").get<int>(), c.at("tried").get<int>()) << c;
        tried += c.at("tried").get<int>();
    }
    EXPECT_GE(tried, d.at("schedules_tried").get<long long>());
    EXPECT_NE(r.out.find("discovered, in "), std::string::npos) << r.out;
}

TEST_F(VerdictTest, BadInputIsOneLine) {
    expect_one_line_error(run({"verdict", "no-such-lock"}), "no lock of that name");
    expect_one_line_error(run({"verdict", "token-lua", "--case", "no-such-case"}), "no case of that name");
    const fs::path bad = write_file("bad.json", R"({"algorithm": "token-lua", "params": {"ttl_ms": 300}})");
    expect_one_line_error(run({"verdict", bad.string()}), "the case sets the TTL");
    expect_one_line_error(run({"verdict", "token-lua", "--versus", "no-such-lock"}), "no lock of that name");
    expect_one_line_error(run({"verdict", "token-lua", "--versus", "token-lua"}), "--versus token-lua: that is the lock itself");
}

// An adapter that grants every acquire, and one that dies on a request it does not know: each
// failure is one line naming the step and what came back, and nothing is run (exit 2).
TEST_F(VerdictTest, AdapterCheckNamesEachWayAnAdapterBreaksTheProtocol) {
    const std::string kit = "import os, sys\nsys.path.insert(0, os.environ['LOCKBENCH_KIT'])\n"
                            "from lockbench_adapter import ready, serve\n";
    write_file("grants.py", kit + "ready('grants 1.0', 'says yes to everyone')\n"
                                  "serve(acquire=lambda r: {'ok': True, 'token': 't'}, release=lambda r: {'ok': True})\n");
    Result r = run({"adapter-check", "--name", "grants", "--command", "/usr/bin/python3 " + (dir() / "grants.py").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: grants: acquire (client 1, while client 0 holds the lock): expected {\"ok\": false"),
              std::string::npos) << r.out;
    write_file("dies.py", "import json, sys\nprint(json.dumps({'ready': True, 'library': 'dies 1', 'algorithm': 'x', 'fencing': False}), flush=True)\n"
                          "for line in sys.stdin:\n    req = json.loads(line)\n"
                          "    if req['op'] not in ('acquire', 'release'): sys.exit(3)\n"
                          "    print(json.dumps({'ok': req['op'] == 'release' or req.get('n') is None}), flush=True)\n");
    r = run({"adapter-check", "--name", "dies", "--command", "/usr/bin/python3 " + (dir() / "dies.py").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.out.find("an unknown op: adapter dies"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("exited with status 3"), std::string::npos) << r.out;
    // A key the library stored that is not a name (the TTL probe would read lockbench's own).
    write_file("badkey.py", kit + "ready('badkey 1.0', 'names its key by a number')\n"
                                  "serve(acquire=lambda r: {'ok': True, 'token': 't', 'key': 7}, release=lambda r: {'ok': True})\n");
    r = run({"adapter-check", "--name", "badkey", "--command", "/usr/bin/python3 " + (dir() / "badkey.py").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: badkey: acquire (client 0, the lock free): \"key\" is not a non-empty string in {"),
              std::string::npos) << r.out;
    // A library that keeps its lock under a prefix of its own: an answer that does not name
    // that key would have lockbench read an empty one (the TTL probe, and after a refused write
    // the lock server's word on the holder: "not held" for the lock's own holder).
    const std::string prefixed =
        kit + "import redis, uuid\n"
              "host, port = os.environ['LOCKBENCH_NODES'].split(',')[0].split(':')\n"
              "client = redis.Redis(host=host, port=int(port))\n"
              "ready('prefixed 1.0', 'SET mine:<key> NX PX')\n"
              "def acquire(r):\n"
              "    token = uuid.uuid4().hex\n"
              "    if not client.set('mine:' + r['key'], token, nx=True, px=r['ttl_ms']):\n"
              "        return {'ok': False, 'error': 'held'}\n"
              "    return {'ok': True, 'token': token, 'nodes': [0]NAMED}\n"
              "serve(acquire=acquire, release=lambda r: {'ok': client.delete('mine:' + r['key']) == 1})\n";
    const auto with = [&](const std::string& named) {
        std::string text = prefixed;
        return text.replace(text.find("NAMED"), 5, named);
    };
    write_file("silent.py", with(""));
    r = run({"adapter-check", "--name", "silent", "--command", "/usr/bin/python3 " + (dir() / "silent.py").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: silent: acquire (client 0, the lock free): its token \""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("is not at the key lockbench:lock on a majority of the nodes"), std::string::npos) << r.out;
    write_file("named.py", with(", 'key': 'mine:' + r['key']"));
    r = run({"adapter-check", "--name", "named", "--command", "/usr/bin/python3 " + (dir() / "named.py").string()});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: named: speaks the protocol"), std::string::npos) << r.out;
    r = run({"adapter-check", "redis-py"});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("adapter-check: redis-py: speaks the protocol"), std::string::npos) << r.out;
}

// Every lock file of locks/ whose adapter is built or installed by scripts/setup (Go from its
// sources, npm from its lockfile, Python and PHP from Debian) speaks the protocol on its own
// service: a fresh clone's adapters are whole. One adapter per command and parameters.
TEST_F(VerdictTest, EveryShippedAdapterSpeaksTheProtocol) {
    std::set<std::string> seen;
    for (const auto& e : fs::directory_iterator(kSource / "locks")) {
        const nlohmann::json j = nlohmann::json::parse(std::ifstream(e.path()));
        if (j.value("algorithm", "") != "external") continue;
        // A library's own retries (node-redlock's +retries) keep a refused acquire going past
        // the check's answer time: by design, not one attempt.
        if (j.value("params", nlohmann::json::object()).contains("retry_count")) continue;
        const std::string what = j.at("command").dump() + j.value("params", nlohmann::json::object()).dump() +
                                 j.value("service", "redis") + j.value("pgbouncer", "");
        if (!seen.insert(what).second) continue;
        const Result r = run({"adapter-check", e.path().string()});
        EXPECT_EQ(r.exit_code(), 0) << e.path().filename() << ": " << r.describe();
        EXPECT_NE(r.out.find("speaks the protocol"), std::string::npos) << r.out;
    }
    EXPECT_GE(seen.size(), 25u);
}

// A Maven adapter is built from the jars its jars.sha256 records or not at all: with one jar's
// recorded hash changed, adapters/kit/maven-build.sh fails naming that jar and leaves neither
// lib/ nor classes/ behind; built, a jar altered in lib/ fails the next build. (Maven resolves
// from ~/.m2, which scripts/setup filled.)
TEST_F(VerdictTest, AMavenAdapterWhoseJarIsNotTheRecordedOneIsNotBuilt) {
    const fs::path shipped = kSource / "adapters" / "jedis", copy = dir() / "jedis";
    fs::create_directories(copy);
    for (const char* f : {"pom.xml", "JedisAdapter.java"}) fs::copy_file(shipped / f, copy / f);
    std::string hashes = read_text(shipped / "jars.sha256");
    const auto jar = hashes.find("  jedis-");
    ASSERT_NE(jar, std::string::npos) << hashes;
    const auto line = hashes.rfind('\n', jar) == std::string::npos ? 0 : hashes.rfind('\n', jar) + 1;
    const std::string jar_name = hashes.substr(jar + 2, hashes.find('\n', jar) - jar - 2);
    hashes.replace(line, 64, std::string(64, '0'));
    write_text(copy / "jars.sha256", hashes);
    const std::vector<std::string> build{(kSource / "adapters" / "kit" / "maven-build.sh").string(), copy.string()};
    Result r = run(build, {.program = "/bin/bash"});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.err.find("not the ones jars.sha256 records"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(jar_name), std::string::npos) << jar_name << "\n" << r.describe();
    EXPECT_FALSE(fs::exists(copy / "lib")) << r.describe();
    EXPECT_FALSE(fs::exists(copy / "classes")) << r.describe();

    // With the recorded hashes it builds; then one jar altered in place is refused by the quick
    // path too, which resolves nothing.
    fs::copy_file(shipped / "jars.sha256", copy / "jars.sha256", fs::copy_options::overwrite_existing);
    r = run(build, {.program = "/bin/bash"});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    ASSERT_TRUE(fs::exists(copy / "lib" / jar_name)) << r.describe();
    ASSERT_TRUE(fs::exists(copy / "classes" / "adapter.jar")) << r.describe();
    std::ofstream(copy / "lib" / jar_name, std::ios::app) << "altered";
    r = run(build, {.program = "/bin/bash"});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.err.find(jar_name), std::string::npos) << jar_name << "\n" << r.describe();
}

}  // namespace
