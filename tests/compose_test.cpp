// The catalog as cases × locks (sim/harness/compose.h), no Redis: lock and case files parsed
// strictly, a lock joining every case it meets and no other, a case scaled to a lock's time,
// the lock's record standing over the case's prediction, and each missing cell's reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/fault_kind.h"
#include "sim/harness/compose.h"
#include "sim/harness/matrix_spec.h"
#include "sim/harness/verdict.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace lockbench;

namespace {

const fs::path kSource = LOCKBENCH_SOURCE_DIR;

std::vector<CaseFile> catalog_cases() {
    std::vector<CaseFile> out;
    for (const fs::path& d : {kSource / "scenarios", kSource / "scenarios" / "discovered"})
        if (fs::is_directory(d))
            for (const auto& e : fs::directory_iterator(d))
                if (e.path().extension() == ".json") out.push_back(load_case_file(e.path()));
    std::ranges::sort(out, {}, &CaseFile::name);
    return out;
}

const CaseFile& case_named(const std::vector<CaseFile>& cases, const std::string& name) {
    return *std::ranges::find(cases, name, &CaseFile::name);
}

LockFile lock_named(const std::string& name) { return load_lock_file(kSource / "locks" / (name + ".json")); }

// A folder of its own for a test's files, gone at the end.
struct TempDir {
    fs::path path = fs::temp_directory_path() / ("lockbench-compose-" + std::to_string(::getpid()) + "-" +
                                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
    fs::path write(const std::string& name, const Json& j) const {
        std::ofstream(path / name) << j.dump(2);
        return path / name;
    }
};

// The (case, variant) pairs a lock meets in the catalog.
std::set<std::string> met_by(const LockFile& lock, const std::vector<CaseFile>& cases, LockChoice choice) {
    std::set<std::string> out;
    for (const CaseFile& c : cases)
        for (const CaseVariant& v : c.variants)
            if (!why_not(c, v, lock, choice)) out.insert(c.name + "+" + v.name);
    return out;
}

// The one run a case makes for a lock (its base variant).
Json run_for(const CaseFile& c, const LockFile& lock, const std::string& variant = "") {
    const Composed k = compose(c, {lock}, LockChoice::asked);
    for (const Json& r : k.scenario.source.at("runs"))
        if (r.value("variant", std::string()) == variant) return r;
    ADD_FAILURE() << c.name << " makes no run for " << lock.name;
    return Json::object();
}

// The message parse_lock_file refuses `j` with, or "".
std::string lock_refusal(const Json& j, const std::string& name = "mine.json") {
    try {
        parse_lock_file(j, fs::path("/tmp") / name);
    } catch (const ScenarioError& e) {
        return e.what();
    }
    return "";
}

std::string case_refusal(const Json& j) {
    try {
        parse_case_file(j, "case.json");
    } catch (const ScenarioError& e) {
        return e.what();
    }
    return "";
}

Json a_lock() {
    return Json::parse(R"({"description": "mine", "algorithm": "external", "command": ["/usr/bin/python3", "adapter.py"],
                          "sentinel": true, "offers": {"extend": ["replace"]}})");
}

}  // namespace

TEST(Catalog, EveryLockAndCaseFileParsesAndEveryRecordNamesACaseOrClass) {
    const std::vector<CaseFile> cases = catalog_cases();
    const std::vector<LockFile> locks = load_lock_folder(kSource / "locks");
    EXPECT_GE(cases.size(), 25u);
    EXPECT_GE(locks.size(), 30u);
    EXPECT_NO_THROW(check_recorded_keys(locks, cases));
    for (const LockFile& l : locks) EXPECT_EQ(l.path, (kSource / "locks" / (l.name + ".json")).string());
}

// The one case every lock meets: each lock of locks/ that joins the catalog (joins "all") has
// a run in the baseline, and every composed case parses as a scenario lockbench can run.
TEST(Catalog, EveryLockThatJoinsTheCatalogRacesInTheBaseline) {
    const std::vector<CaseFile> cases = catalog_cases();
    const std::vector<LockFile> locks = load_lock_folder(kSource / "locks");
    const Composed baseline = compose(case_named(cases, "baseline"), locks, LockChoice::catalog);
    std::set<std::string> ran;
    for (const Json& r : baseline.scenario.source.at("runs")) ran.insert(r.at("lock").get<std::string>());
    std::size_t joining = 0;
    for (const LockFile& l : locks) {
        if (l.joins != Joins::all) continue;
        ++joining;
        EXPECT_TRUE(ran.contains(l.name)) << l.name << " has no baseline run";
    }
    EXPECT_GE(joining, 20u);
    for (const CaseFile& c : cases) {
        const Composed k = compose(c, locks, LockChoice::catalog);
        if (!k.empty()) {
            EXPECT_EQ(k.scenario.runs.size(), k.scenario.source.at("runs").size()) << c.name;  // composed, then parsed once
        }
    }
}

// The point of lock files: a team's lock is one file anywhere, and it meets every case its
// twin in locks/ meets, its adapter run from its own folder.
TEST(Catalog, ANewLockFileJoinsEveryCaseThatAppliesToIt) {
    const TempDir dir;
    const std::vector<CaseFile> cases = catalog_cases();
    Json j = read_input_json(kSource / "locks" / "redis-py.json", "lock file");
    j["command"] = {"/usr/bin/python3", "their_adapter.py"};
    const LockFile mine = load_lock_file(dir.write("team-lock.json", j));
    const LockFile twin = lock_named("redis-py");
    EXPECT_EQ(mine.name, "team-lock");
    const std::set<std::string> met = met_by(mine, cases, LockChoice::catalog);
    EXPECT_EQ(met, met_by(twin, cases, LockChoice::catalog));
    EXPECT_GE(met.size(), 10u);
    // In the composed catalog it is a run of every case it meets, named by its file.
    std::size_t runs = 0;
    for (const CaseFile& c : cases) {
        const Composed k = compose(c, {mine, twin}, LockChoice::catalog);
        for (const Json& r : k.scenario.source.at("runs")) {
            if (r.at("lock") != "team-lock") continue;
            ++runs;
            EXPECT_EQ(r.at("cwd"), dir.path.string()) << c.name;
            EXPECT_EQ(r.at("command").at(1), "their_adapter.py");
        }
        // Parsed as an explicit scenario (compose throws otherwise): a run lockbench can start.
        if (!k.empty()) {
            EXPECT_EQ(k.scenario.runs.size(), k.scenario.source.at("runs").size()) << c.name;  // composed, then parsed once
        }
    }
    EXPECT_EQ(runs, met.size());
}

// A case is written at one TTL; a lock that takes whole seconds gets the next whole second and,
// unless the case says its timing does not depend on it, every duration scaled alike.
TEST(Catalog, ACaseRunsInTheTimeOfAWholeSecondLock) {
    const std::vector<CaseFile> cases = catalog_cases();
    const LockFile tooz = lock_named("tooz"), token = lock_named("token-lua");
    const Json gc = run_for(case_named(cases, "gc-pause"), tooz);
    EXPECT_EQ(gc.at("params").at("ttl_ms"), 1000);
    EXPECT_EQ(gc.at("workload").at("duration_ms"), 5000);              // 1500 at 300 ms
    EXPECT_EQ(gc.at("faults").at(0).at("duration_ms"), 3000);          // 900 at 300 ms
    EXPECT_EQ(gc.at("client").at("command_timeout_ms"), 500);          // 150 at 300 ms
    const Json native = run_for(case_named(cases, "gc-pause"), token);
    EXPECT_EQ(native.at("params").at("ttl_ms"), 300);
    EXPECT_FALSE(native.contains("workload"));                         // the case's own
    // "scale": "ttl" (baseline): only the TTL moves.
    const Json base = run_for(case_named(cases, "baseline"), lock_named("etcd"));
    EXPECT_EQ(base.at("params").at("ttl_ms"), 2000);
    EXPECT_FALSE(base.contains("workload"));
    EXPECT_EQ(base.at("nodes"), 3);                                    // the case's ensemble
    // An expectation in milliseconds scales with the rest.
    const Json killed = run_for(case_named(cases, "holder-killed"), tooz);
    EXPECT_EQ(killed.at("expect").at("longest_unavailable_ms"), "<= 2000");
}

// A cell's verdict: the lock's own record for the case (or its class) over the case's
// prediction, and with it over that prediction's figures (they describe its verdict); "any"
// checks no verdict and none of them. The case's own figures always apply.
TEST(Catalog, TheLocksRecordStandsOverTheCasesPrediction) {
    const TempDir dir;
    const CaseFile gc = case_named(catalog_cases(), "gc-pause");
    Json j = a_lock();
    const Json predicted = run_for(gc, parse_lock_file(j, dir.path / "a.json")).at("expect");
    EXPECT_EQ(predicted.at("verdict"), "2 holders");
    EXPECT_EQ(predicted.at("stale_writes_accepted"), ">= 1");
    j["expected"] = {{"gc-pause", "2 holders"}};  // as predicted: the prediction's figures stay
    EXPECT_EQ(run_for(gc, parse_lock_file(j, dir.path / "a.json")).at("expect").at("stale_writes_accepted"), ">= 1");
    j["expected"] = {{"gc-pause", "safe"}};
    const Json safe = run_for(gc, parse_lock_file(j, dir.path / "a.json")).at("expect");
    EXPECT_EQ(safe.at("verdict"), "safe");
    EXPECT_FALSE(safe.contains("stale_writes_accepted")) << safe.dump();
    j["expected"] = {{"gc-pause", "any: its timer runs late on a loaded machine"}};
    const Json any = run_for(gc, parse_lock_file(j, dir.path / "a.json")).at("expect");
    EXPECT_FALSE(any.contains("verdict"));
    EXPECT_FALSE(any.contains("stale_writes_accepted")) << any.dump();
    EXPECT_EQ(any.at("faults_injected"), "== 1");
    // A verdict asks only for the case's own checks and the record.
    j.erase("expected");
    const Composed only = compose(gc, {parse_lock_file(j, dir.path / "a.json")}, LockChoice::asked, Expectations::record_only);
    EXPECT_EQ(only.scenario.source.at("runs").at(0).at("expect"), (Json{{"faults_injected", "== 1"}}));
}

TEST(Catalog, EachMissingCellSaysWhyInOneLine) {
    const std::vector<CaseFile> cases = catalog_cases();
    const auto why = [&](const std::string& c, const std::string& lock) {
        const CaseFile& cf = case_named(cases, c);
        return why_not(cf, cf.variants.front(), lock_named(lock), LockChoice::catalog).value_or("");
    };
    EXPECT_NE(why("consensus-clock-jump", "etcd").find("clock shim cannot move"), std::string::npos);
    EXPECT_NE(why("failover-lost-lock", "laravel").find("Sentinel"), std::string::npos);
    EXPECT_NE(why("failover-lost-lock", "token-lua+wait").find("grants alone"), std::string::npos);
    EXPECT_EQ(why("failover-lost-lock", "token-lua"), "");
    EXPECT_EQ(why("failover-ttl-kept", "token-lua+wait"), "");
    EXPECT_NE(why("acquire-pause", "redis-py").find("during_acquire"), std::string::npos);
    EXPECT_NE(why("redlock-clock-jump", "token-lua").find("needs 5 lock nodes"), std::string::npos);
    EXPECT_NE(why("redis-semaphore-refresh", "redis-py").find("about redis-semaphore-5.3.0"), std::string::npos);
    EXPECT_NE(why("renewal", "redis-semaphore").find("about "), std::string::npos);
    EXPECT_EQ(why("gc-pause", "etcd"), "");
    // A lock that joins only the cases naming it stays out of the catalog's others, but a
    // verdict of it (asked for by name) runs every case that applies.
    const CaseFile& gc = case_named(cases, "gc-pause");
    const LockFile old = lock_named("redis-semaphore-5.3.0");
    EXPECT_NE(why_not(gc, gc.variants.front(), old, LockChoice::catalog).value_or("").find("joins only"), std::string::npos);
    EXPECT_FALSE(why_not(gc, gc.variants.front(), old, LockChoice::asked));
    // One that joins none stays out of the catalog even where a case names it (CURATOR-604's
    // case, about curator+wait), and its verdict still runs that case.
    const CaseFile& expiry = case_named(cases, "curator-session-expiry-reconnect");
    const LockFile waiting = lock_named("curator+wait");
    ASSERT_EQ(waiting.joins, Joins::none);
    EXPECT_NE(why_not(expiry, expiry.variants.front(), waiting, LockChoice::catalog).value_or("").find("joins no case"),
              std::string::npos);
    EXPECT_FALSE(why_not(expiry, expiry.variants.front(), waiting, LockChoice::asked));
    for (const CaseFile& c : cases)
        for (const CaseVariant& v : c.variants)
            for (const LockFile& l : load_lock_folder(kSource / "locks"))
                if (const auto w = why_not(c, v, l, LockChoice::catalog)) {
                    EXPECT_EQ(w->find('\n'), std::string::npos) << *w;
                    EXPECT_LT(w->size(), 300u) << *w;
                }
}

TEST(LockFile, BadInputIsOneLineNamingTheFileAndField) {
    const auto refused = [](const Json& j, const std::string& field, const std::string& piece, const std::string& name = "mine.json") {
        const std::string m = lock_refusal(j, name);
        EXPECT_EQ(m.rfind("/tmp/" + name + ": " + field, 0), 0u) << m;
        EXPECT_NE(m.find(piece), std::string::npos) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    };
    EXPECT_EQ(lock_refusal(a_lock()), "");
    Json j = a_lock();
    j["params"] = {{"ttl_ms", 300}};
    refused(j, "params.ttl_ms", "the case sets the TTL");
    j = a_lock();
    j["colour"] = "red";
    refused(j, "colour", "unknown field");
    j = a_lock();
    j.erase("command");
    refused(j, "command", "required");
    j = {{"algorithm", "token-lua"}, {"command", {"x"}}};
    refused(j, "command", "only an \"external\" lock");
    j = a_lock();
    j["expected"] = {{"gc-pause", "2 holder"}};
    refused(j, "expected.gc-pause", "\"2 holders\"");
    j["expected"] = {{"gc-pause", "any"}};
    refused(j, "expected.gc-pause", "any: <why");
    j = {{"algorithm", "token-lua"}, {"params", {{"fence", true}}}};
    refused(j, "offers.fencing", "fence");
    j = a_lock();
    j["service"] = "etcd";
    j["sentinel"] = true;
    refused(j, "sentinel", "Sentinel watches one Redis master");
    j = a_lock();
    j["offers"]["release"] = "whenever";
    refused(j, "offers.release", "\"client-clock\"");
    j = a_lock();
    j["ttl_unit"] = nullptr;
    refused(j, "ttl_unit", "null");
    refused(a_lock(), "", "a lock's name is its file's name", "-bad.json");
    j = a_lock();
    j["server"] = "../adapters/etcd-go/etcd-3.7";
    refused(j, "server", "only the servers of \"etcd\" or \"hazelcast\" run a program a lock names");
    j.erase("sentinel");
    j.erase("server");
    j["service"] = "hazelcast";
    j["nodes"] = 3;
    refused(j, "service", "a hazelcast lock names the program its servers run (\"server\"");
    j["nodes"] = 1;
    refused(j, "nodes", "at least three CP members");
    j.erase("sentinel");
    j["service"] = "etcd";
    j["server"] = "";
    refused(j, "server", "expected the path of the servers' program");
}

// "server" names the program an etcd lock's servers run, relative to the lock file's folder:
// the cell's run carries it, absolute, to the service (sim/live/etcd.cpp starts it).
TEST(LockFile, AnEtcdLockMayNameItsServersProgram) {
    Json j = a_lock();
    j.erase("sentinel");
    j["service"] = "etcd";
    j["server"] = "../servers/etcd-9";
    const LockFile lock = parse_lock_file(j, fs::path("/tmp/team/locks/mine.json"));
    EXPECT_EQ(lock.server, fs::path("/tmp/team/servers/etcd-9"));
    const CaseFile baseline = load_case_file(kSource / "scenarios" / "baseline.json");
    EXPECT_EQ(run_for(baseline, lock).at("server"), "/tmp/team/servers/etcd-9");
    j.erase("server");
    EXPECT_FALSE(run_for(baseline, parse_lock_file(j, fs::path("/tmp/team/locks/mine.json"))).contains("server"));
}

// "resource_check": "token" in a lock file: the store checks the lock's random token by
// check-and-set in every run of it (a library with no fencing token, bsm-redislock+token), a
// case's own check standing over it; the "fence" fact says the store checks a token of its,
// "resource_check" which one.
TEST(LockFile, ALockMayHaveTheStoreCheckItsRandomToken) {
    const CaseFile gc = case_named(catalog_cases(), "gc-pause");
    Json j = a_lock();
    const LockFile plain = parse_lock_file(j, fs::path("/tmp/mine.json"));
    EXPECT_FALSE(run_for(gc, plain).contains("resource_check"));
    EXPECT_EQ(lock_facts(plain).at("fence"), false);
    EXPECT_EQ(run_for(gc, plain).at("expect").at("verdict"), "2 holders");
    j["resource_check"] = "token";
    const LockFile checked = parse_lock_file(j, fs::path("/tmp/mine.json"));
    EXPECT_EQ(run_for(gc, checked).at("resource_check"), "token");
    EXPECT_EQ(lock_facts(checked).at("fence"), true);
    EXPECT_EQ(lock_facts(checked).at("resource_check"), "token");
    EXPECT_EQ(run_for(gc, checked).at("expect").at("verdict"), "stale write refused");
    // A fencing counter's prediction is not a random token's: a node restarted empty restarts
    // the counter, not the token.
    const CaseFile restart = case_named(catalog_cases(), "node-restart-empty");
    EXPECT_EQ(run_for(restart, checked).at("expect").at("verdict"), "stale write refused");
    EXPECT_EQ(run_for(restart, lock_named("token-lua+fence")).at("expect").at("verdict"), "unsafe");
    // The case's check stands over the lock's.
    Json own = gc.source;
    own["variants"] = Json::array({{{"name", "unchecked"}, {"resource_check", "none"}}});
    const Json unchecked = run_for(parse_case_file(own, "own.json"), checked, "unchecked");
    EXPECT_EQ(unchecked.at("resource_check"), "none");
    // and its predictions are those of a lock whose token nothing checks
    EXPECT_EQ(unchecked.at("expect").at("verdict"), "2 holders") << unchecked.dump();
    // Refused: a check no store has, two tokens, and a lock whose token is its client's.
    Json unknown = j;
    unknown["resource_check"] = "tokens";
    EXPECT_NE(lock_refusal(unknown).find("/tmp/mine.json: resource_check"), std::string::npos) << lock_refusal(unknown);
    Json both = j;
    both["params"] = {{"fence", true}};
    both["offers"]["fencing"] = true;
    EXPECT_NE(lock_refusal(both).find("resource_check: the store checks one token"), std::string::npos) << lock_refusal(both);
    const Json reentrant = {{"algorithm", "reentrant"}, {"resource_check", "token"}, {"offers", {{"renews", true}}}};
    EXPECT_NE(lock_refusal(reentrant).find("resource_check: \"token\" cannot check reentrant"), std::string::npos)
        << lock_refusal(reentrant);
}

TEST(CaseFile, BadInputIsOneLineNamingTheFileAndField) {
    const Json ok = Json::parse(R"({"name": "c", "ttl_ms": 300, "faults": [{"fault": "pause", "point": "before_write", "duration_ms": 100}],
                                    "predict": [{"when": {"fence": false}, "verdict": "2 holders"}]})");
    EXPECT_EQ(case_refusal(ok), "");
    const auto refused = [](const Json& j, const std::string& field, const std::string& piece) {
        const std::string m = case_refusal(j);
        EXPECT_EQ(m.rfind("case.json: " + field, 0), 0u) << m;
        EXPECT_NE(m.find(piece), std::string::npos) << m;
    };
    Json j = ok;
    j.erase("ttl_ms");
    refused(j, "ttl_ms", "required");
    j = ok;
    j["predict"][0]["when"] = {{"colour", "red"}};
    refused(j, "predict[0].when.colour", "not a fact of a lock");
    j = ok;
    j["predict"][0]["when"] = {{"lock", "redis-py"}};
    refused(j, "predict[0].when.lock", "about");
    j = ok;
    j["predict"][0]["when"] = {{"release", "sometimes"}};
    refused(j, "predict[0].when.release", "no lock has release");
    j = ok;
    j["params"] = {{"fence", true}};
    refused(j, "params.fence", "only durations");
    j = ok;
    j["variants"] = {{{"name", "v"}}, {{"name", "v"}}};
    refused(j, "variants[1].name", "earlier variant");
    j = ok;
    j["predict"][0].erase("verdict");
    refused(j, "predict[0].verdict", "a verdict, figures");
}

// Two predictions that match one lock and disagree on a figure are the case file's mistake,
// named when the cell is made.
TEST(CaseFile, PredictionsThatDisagreeForALockAreRefused) {
    const TempDir dir;
    const CaseFile c = parse_case_file(Json::parse(R"({"name": "c", "ttl_ms": 300,
        "expect": {"lost_updates": "== 0"},
        "predict": [{"when": {"fence": false}, "expect": {"lost_updates": ">= 1"}}]})"), "case.json");
    try {
        compose(c, {parse_lock_file(a_lock(), dir.path / "a.json")}, LockChoice::asked);
        ADD_FAILURE() << "accepted";
    } catch (const ScenarioError& e) {
        EXPECT_NE(std::string(e.what()).find("lost_updates"), std::string::npos) << e.what();
    }
}

// A kind's own durations move with the lease as the common ones do: each field of a kind's
// that ends in _ms is one its entry scales (fault_kind.h), and scaling a case's faults doubles
// every one of them at twice the TTL, and no count, node or point.
TEST(FaultKinds, EveryDurationOfEveryKindScalesWithTheLease) {
    for (const FaultKind* kind : fault_kinds()) {
        SCOPED_TRACE(kind->name);
        Json f = {{"fault", kind->name}, {"at_ms", 100}, {"duration_ms", 100}, {"max_ms", 100}, {"keep_holder_ms", 100},
                  {"every_ms", 100}, {"until_ms", 100}, {"occurrence", 2}, {"node", 1}, {"count", 2}};
        std::vector<std::string> durations{"at_ms", "duration_ms", "max_ms", "keep_holder_ms", "every_ms", "until_ms"};
        for (const char* own : kind->own_fields) {
            if (!std::string(own).ends_with("_ms")) continue;
            EXPECT_TRUE(std::ranges::any_of(kind->lease_scaled, [&](const char* s) { return std::string(s) == own; }))
                << own << " is a duration of " << kind->name << "'s that does not scale with the lease";
            f[own] = 100;
            durations.emplace_back(own);
        }
        const Json scaled = scaled_faults(Json::array({f}), 2.0).at(0);
        for (const std::string& d : durations) EXPECT_EQ(scaled.at(d), 200) << d;
        EXPECT_EQ(scaled.at("occurrence"), 2);
        EXPECT_EQ(scaled.at("node"), 1);
        EXPECT_EQ(scaled.at("count"), 2);
    }
}

// Each kind has one entry, which the parser takes by its name and which names its kind; a
// fault given a field of another kind's is refused naming the kinds that read it.
TEST(FaultKinds, EachKindIsOneEntryAndItsFieldsAreItsOwn) {
    std::set<std::string> names;
    for (const FaultKind* kind : fault_kinds()) {
        EXPECT_TRUE(names.insert(kind->name).second) << kind->name << " twice";
        EXPECT_EQ(&fault_kind(kind->kind), kind);
        EXPECT_EQ(std::string(fault_kind_name(kind->kind)), kind->name);
        EXPECT_EQ(find_fault_kind(kind->name), kind);
        EXPECT_TRUE(kind->fire) << kind->name << " does nothing when it fires";
        EXPECT_TRUE(kind->words) << kind->name << " has no words for the search";
        // The search runs in the simulator: it draws every kind but one the model has no world for.
        WorldNeeds needs;
        if (kind->needs) kind->needs(FaultSpec{}, needs);
        EXPECT_EQ(kind->shapes.empty(), needs.stalls_disk) << "the search never draws " << kind->name;
    }
    EXPECT_EQ(find_fault_kind("fsync"), nullptr);
    // One wording for the search's classes and its coverage: a blackhole and a reset are one
    // class ("cut"), and two entries of its coverage.
    const FaultKind& link = fault_kind(FaultSpec::Kind::link);
    const Json blackhole = {{"fault", "link"}, {"mode", "blackhole"}, {"direction", "upstream"}, {"store", true}};
    Json reset = blackhole;
    reset["mode"] = "reset";
    EXPECT_EQ(link.words(blackhole, {}), link.words(reset, {}));
    EXPECT_EQ(link.words(blackhole, {}), "link cut from every client to the store");
    EXPECT_EQ(link.words(blackhole, {.exact = true}), "link blackhole upstream from every client to the store");
    EXPECT_NE(link.words(blackhole, {.exact = true}), link.words(reset, {.exact = true}));
    const Json base = Json::parse(R"({"name": "c", "workload": {"clients": 2, "duration_ms": 1000}, "runs": [{"algorithm": "setnx"}]})");
    for (const FaultKind* kind : fault_kinds()) {
        for (const FaultKind* other : fault_kinds()) {
            for (const char* field : other->own_fields) {
                if (std::ranges::any_of(kind->own_fields, [&](const char* x) { return std::string(x) == field; })) continue;
                Json s = base;
                s["faults"] = Json::array({{{"fault", kind->name}, {"point", "after_acquire"}, {field, 1}}});
                std::string message;
                try {
                    parse_scenario(s, "c.json");
                } catch (const ScenarioError& e) {
                    message = e.what();
                }
                EXPECT_NE(message.find(std::string("faults[0].") + field + ": only"), std::string::npos) << kind->name << " + " << field << ": " << message;
                EXPECT_NE(message.find(other->noun), std::string::npos) << message;
            }
        }
    }
}

// Each service has one entry (service.h), which the parsers, compose and the fault kinds ask:
// its name, how many servers it may have, and the facts a case is matched against.
TEST(Services, EachServiceIsOneEntryThatSaysWhatItCanMeet) {
    std::set<std::string> names;
    for (Service s : services()) {
        const ServiceInfo& info = service_info(s);
        EXPECT_EQ(info.service, s);
        EXPECT_TRUE(names.insert(info.name).second) << info.name;
        EXPECT_EQ(parse_service(info.name), s);
        const int least = info.sizes.empty() ? 1 : info.sizes.front();
        EXPECT_EQ(servers_refused(info, least), std::nullopt) << info.name << " cannot run its least size";
        EXPECT_EQ(servers_refused(info, 1).has_value(), least > 1 && *info.why_sizes) << info.name << ": one server, or why not";
        EXPECT_EQ(info.has_leader, info.consensus) << info.name << ": a leader is what servers that agree elect";
    }
    EXPECT_EQ(servers_refused(service_info(Service::redis), 7), std::nullopt);
    EXPECT_NE(servers_refused(service_info(Service::zookeeper), 2).value_or("").find("1, 3 or 5"), std::string::npos);
    EXPECT_NE(servers_refused(service_info(Service::postgresql), 3).value_or("").find("is one server"), std::string::npos);
    EXPECT_NE(servers_refused(service_info(Service::hazelcast), 1).value_or("").find("unsafe mode"), std::string::npos);
    EXPECT_EQ(services_with(&ServiceInfo::has_leader), "\"zookeeper\", \"etcd\" or \"hazelcast\"");
    // What a case meets follows the entry: a server's clock, its peer links.
    const FaultSpec server_clock{.kind = FaultSpec::Kind::clock, .node = 0};
    FaultSpec peers{.kind = FaultSpec::Kind::link, .node = 0};
    peers.link_peers = true;
    for (Service s : services()) {
        const ServiceInfo& info = service_info(s);
        const FaultLanding at{.service = s, .nodes = 3};
        EXPECT_EQ(fault_kind(FaultSpec::Kind::clock).why_not(server_clock, at).has_value(), !info.clock_shim_reaches) << info.name;
        EXPECT_EQ(fault_kind(FaultSpec::Kind::link).why_not(peers, at).has_value(), !info.peers_proxied) << info.name;
    }
    // A disk stall: a server that flushes through libc; a Redis node only with an append-only file.
    const FaultSpec stall{.kind = FaultSpec::Kind::disk_stall, .node = 0};
    for (Service s : services()) {
        const ServiceInfo& info = service_info(s);
        const FaultKind& k = fault_kind(FaultSpec::Kind::disk_stall);
        EXPECT_EQ(k.why_not(stall, {.service = s, .persistence = Persistence::aof_always}).has_value(), !info.disk_shim_reaches)
            << info.name;
        EXPECT_EQ(k.why_not(stall, {.service = s}).has_value(), !info.disk_shim_reaches || info.node_options) << info.name;
    }
}

// `verdict --versus`'s comparison (verdict.h: versus) on two verdicts written here: a class
// differs by its words, not its counts; a case one side did not run says why (it does not
// apply, or no repetition could be forced), and "same" is false only when a class differs or a
// case both ran (a known bug's, which has no class) differs; cases_same counts those that agree.
TEST(Versus, EachClassBesideTheOtherAndEachCaseOnOneSideSaysWhy) {
    const auto entry = [](const std::string& klass, const Json& counts, int reps) {
        Json worst = counts.begin().key();
        return Json{{"class", klass}, {"verdict", worst}, {"counts", counts}, {"repetitions", reps}};
    };
    Json mine = {{"lock", "new"}, {"library", {{"library", "lib 2"}}},
                 {"classes", {entry("baseline", {{"safe", 3}}, 3), entry("gc-pause", {{"2 holders", 1}, {"safe", 2}}, 3),
                              {{"class", "failover"}, {"verdict", "not applicable"}, {"why", Json::array()}}}},
                 {"cases", {{{"case", "baseline"}, {"variant", ""}, {"class", "baseline"}, {"verdict", "safe"},
                             {"counts", {{"safe", 3}}}, {"repetitions", 3}},
                            {{"case", "gc-pause"}, {"variant", ""}, {"class", "gc-pause"}, {"verdict", "2 holders"},
                             {"counts", {{"2 holders", 1}, {"safe", 2}}}, {"repetitions", 3}},
                            {{"case", "only-new"}, {"variant", ""}, {"class", nullptr}, {"verdict", "safe"},
                             {"counts", {{"safe", 3}}}, {"repetitions", 3}}}},
                 {"not_applicable", {{{"case", "only-old"}, {"variant", ""}, {"class", nullptr}, {"why", "about old only"}}}}};
    Json theirs = {{"lock", "old"}, {"library", {{"library", "lib 1"}}},
                   {"classes", {entry("baseline", {{"safe", 3}}, 3), entry("gc-pause", {{"2 holders", 3}}, 3),
                                {{"class", "failover"}, {"verdict", "not applicable"}, {"why", Json::array()}}}},
                   {"cases", {{{"case", "baseline"}, {"variant", ""}, {"class", "baseline"}, {"verdict", "safe"},
                               {"counts", {{"safe", 3}}}, {"repetitions", 3}},
                              {{"case", "gc-pause"}, {"variant", ""}, {"class", "gc-pause"}, {"verdict", "2 holders"},
                               {"counts", {{"2 holders", 3}}}, {"repetitions", 3}},
                              {{"case", "only-old"}, {"variant", ""}, {"class", nullptr}, {"verdict", "safe"},
                               {"counts", {{"safe", 3}}}, {"repetitions", 3}}}},
                   {"not_applicable", Json::array()}};
    Json vs = versus(mine, theirs, "/x/verdict.json");
    EXPECT_EQ(vs.at("lock"), "old");
    EXPECT_EQ(vs.at("library"), "lib 1");
    ASSERT_EQ(vs.at("classes").size(), 2u) << vs.dump();  // failover runs on neither side
    EXPECT_EQ(vs.at("classes").at(1), (Json{{"class", "gc-pause"}, {"here", "2 holders 1/3, safe 2/3"},
                                            {"there", "2 holders 3/3"}, {"differs", false}}));
    EXPECT_TRUE(vs.at("same").get<bool>());
    EXPECT_EQ(vs.at("cases_same"), 2) << vs.dump();  // baseline, gc-pause: one word each side
    ASSERT_EQ(vs.at("cases").size(), 2u) << vs.dump();
    EXPECT_EQ(vs.at("cases").at(0).at("case"), "only-new");
    EXPECT_EQ(vs.at("cases").at(0).at("there"), "could not force");  // old lists it nowhere
    EXPECT_EQ(vs.at("cases").at(1).at("case"), "only-old");
    EXPECT_EQ(vs.at("cases").at(1).at("here"), "not applicable");
    // A case with no class that both ran, its verdict differing: not the same, though every
    // class is.
    Json bug = {{"case", "known-bug"}, {"variant", ""}, {"class", nullptr}, {"verdict", "2 holders"},
                {"counts", {{"2 holders", 3}}}, {"repetitions", 3}};
    mine["cases"].push_back(bug);
    bug["verdict"] = "safe", bug["counts"] = {{"safe", 3}};
    theirs["cases"].push_back(bug);
    vs = versus(mine, theirs, "/x/verdict.json");
    EXPECT_FALSE(vs.at("same").get<bool>());
    EXPECT_EQ(vs.at("cases_same"), 2) << vs.dump();
    ASSERT_EQ(vs.at("cases").size(), 3u) << vs.dump();
    EXPECT_EQ(vs.at("cases").at(1).at("case"), "known-bug");
    EXPECT_EQ(vs.at("cases").at(1).at("there"), "safe 3/3");
    // The known bug the same again, and gc-pause's class and case both safe on the other side.
    theirs["cases"].back() = mine["cases"].back();
    theirs["classes"][1] = entry("gc-pause", {{"safe", 3}}, 3);
    theirs["cases"][1]["verdict"] = "safe", theirs["cases"][1]["counts"] = {{"safe", 3}};
    vs = versus(mine, theirs, "/x/verdict.json");
    EXPECT_FALSE(vs.at("same").get<bool>());
    EXPECT_TRUE(vs.at("classes").at(1).at("differs").get<bool>());
    EXPECT_EQ(vs.at("cases_same"), 2) << vs.dump();  // baseline, known-bug
    ASSERT_EQ(vs.at("cases").size(), 3u) << vs.dump();
    EXPECT_EQ(vs.at("cases").at(0).at("case"), "gc-pause");
}
