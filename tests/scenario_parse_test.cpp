// The scenario parser on its own, no Redis: values that wrap, overflow or outlast the run,
// distributions that would draw infinity, absurd nesting and sizes, a folder for a file. Each is
// one ScenarioError that names the file and the field and quotes at most a short excerpt.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/harness/compose.h"
#include "sim/harness/matrix_spec.h"
#include "sim/harness/matrix.h"
#include "sim/engine/case_file.h"
#include "sim/engine/scenario.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace lockbench;

namespace {

const char* const kFile = "case.json";

// Valid as it stands: 4 clients for 1000 ms, one setnx run.
Json base() {
    return Json::parse(R"({"name": "case", "workload": {"clients": 4, "duration_ms": 1000},
                           "runs": [{"algorithm": "setnx"}]})");
}

Json with_fault(const Json& fault) {
    Json s = base();
    s["faults"] = Json::array({fault});
    return s;
}

// The message parse_scenario refuses `j` with, or "" when it accepts it.
std::string refusal(const Json& j) {
    try {
        parse_scenario(j, kFile);
    } catch (const ScenarioError& e) {
        return e.what();
    }
    return "";
}

// Refused in one short line that names the file and `field` and contains each of `pieces`.
void expect_refused(const Json& j, const std::string& field, const std::vector<std::string>& pieces = {}) {
    const std::string m = refusal(j);
    ASSERT_FALSE(m.empty()) << "accepted: " << j.dump().substr(0, 400);
    EXPECT_EQ(m.rfind(std::string(kFile) + ": " + field, 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u) << m.substr(0, 400);
    for (const auto& p : pieces) EXPECT_NE(m.find(p), std::string::npos) << "no " << p << " in: " << m;
}

fs::path temp_dir(const std::string& name) {
    const fs::path d = fs::temp_directory_path() / ("lockbench-parse-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

// ---- item 3: every integer in its type and range --------------------------------------------

constexpr const char* kU64Max = "18446744073709551615";   // get<long long>() makes it -1
constexpr const char* kI64Max = "9223372036854775807";    // plus anything overflows
constexpr const char* k2To32 = "4294967296";              // get<int>() makes it 0

TEST(ScenarioParse, AnUnsignedValueIsNotReportedWrapped) {
    Json s = base();
    s["workload"]["clients"] = Json::parse(kU64Max);
    expect_refused(s, "workload.clients", {kU64Max, "from 1 to 64"});
    EXPECT_EQ(refusal(s).find("-1"), std::string::npos) << refusal(s);
}

TEST(ScenarioParse, ThePauseOfTheIssueEndsBeforeTheRun) {
    const Json pause = {{"fault", "pause"}, {"at_ms", 100}, {"client", 0}, {"duration_ms", Json::parse(kI64Max)}};
    expect_refused(with_fault(pause), "faults[0].duration_ms", {"after the run", kI64Max});
}

// Values that wrap or truncate into something that looked valid: each must be refused.
TEST(ScenarioParse, EveryIntegerFieldIsCheckedAsWritten) {
    struct Case { const char* pointer; const char* value; const char* field; };
    const std::vector<Case> cases = {
        {"/workload/clients", k2To32, "workload.clients"},
        {"/workload/duration_ms", kI64Max, "workload.duration_ms"},
        {"/workload/sections_per_client", kU64Max, "workload.sections_per_client"},
        {"/workload/start_stagger_ms", kI64Max, "workload.start_stagger_ms"},
        {"/seed", kU64Max, "seed"},
        {"/base_port", "4294968320", "base_port"},   // 2^32 + 1024: an int of 1024
        {"/client/command_timeout_ms", kI64Max, "client.command_timeout_ms"},
        {"/client/connect_timeout_ms", kU64Max, "client.connect_timeout_ms"},
        {"/runs/0/nodes", "4294967297", "runs[0].nodes"},   // an int of 1
        {"/runs/0/params/ttl_ms", kU64Max, "runs[0].params.ttl_ms"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.field);
        Json s = base();
        s[Json::json_pointer(c.pointer)] = Json::parse(c.value);
        expect_refused(s, c.field, {c.value});
    }
}

TEST(ScenarioParse, EveryFaultIntegerIsCheckedAsWritten) {
    const auto fault = [](const char* json) { return Json::parse(json); };
    struct Case { Json fault; const char* field; };
    const std::vector<Case> cases = {
        {fault(R"({"fault": "pause", "at_ms": 18446744073709551615, "client": 0, "duration_ms": 1})"), "at_ms"},
        {fault(R"({"fault": "pause", "at_ms": 0, "client": 4294967296, "duration_ms": 1})"), "client"},
        {fault(R"({"fault": "kill", "point": "after_acquire", "occurrence": 4294967297})"), "occurrence"},
        {fault(R"({"fault": "crash", "at_ms": 0, "node": 4294967296})"), "node"},
        {fault(R"({"fault": "crash", "at_ms": 10, "node": 0, "restart_after_ms": 9223372036854775807})"), "restart_after_ms"},
        {fault(R"({"fault": "clock", "at_ms": 0, "client": 0, "jump_ms": 9223372036854775807})"), "jump_ms"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "count": 4294967298})"), "count"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "stagger_ms": 9223372036854775807})"), "stagger_ms"},
        {fault(R"({"fault": "link", "at_ms": 0, "mode": "delay", "latency_ms": 9223372036854775807, "store": true})"), "latency_ms"},
        {fault(R"({"fault": "link", "at_ms": 0, "mode": "blackhole", "nodes": [4294967296]})"), "nodes"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.fault.dump());
        expect_refused(with_fault(c.fault), std::string("faults[0].") + c.field);
    }
}

// "until": "another-enters" ends a gate or a link fault once another client entered, at most
// max_ms; "until": "leader" a gate once a server leads: one line for each way to get it wrong.
TEST(ScenarioParse, UntilAnotherEntersIsAGateOrALinkWithAMaxMs) {
    const auto fault = [](const char* json) { return Json::parse(json); };
    struct Case { Json fault; const char* field; const char* says; };
    const std::vector<Case> cases = {
        {fault(R"({"fault": "kill", "point": "after_acquire", "until": "another-enters", "max_ms": 50})"), "until", "only a gate, a pause or a link fault lasts until another client enters"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "client": 0, "until": "later", "max_ms": 50})"), "until", "another-enters"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "client": 0, "until": "another-enters"})"), "max_ms", "required"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "until": "another-enters", "max_ms": 50})"), "client", "the client held"},
        {fault(R"({"fault": "link", "point": "before_acquire", "mode": "hold", "store": true, "duration_ms": 60, "until": "another-enters", "max_ms": 50})"), "max_ms", "at least duration_ms"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "count": 2, "max_ms": 50})"), "max_ms", "only a fault with"},
        {fault(R"({"fault": "pause", "point": "after_acquire", "duration_ms": 10, "until": "leader", "max_ms": 50})"), "until", "only a gate waits until a server leads"},
        {fault(R"({"fault": "gate", "point": "before_release", "until": "leader"})"), "max_ms", "required"},
        {fault(R"({"fault": "gate", "point": "before_release", "client": 1, "until": "leader", "max_ms": 50})"), "client", "whichever client reaches"},
        {fault(R"({"fault": "gate", "point": "before_release", "until": "leader", "max_ms": 1001})"), "max_ms", "workload.duration_ms"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "count": 2, "keep_holder_ms": 50})"), "keep_holder_ms", "one that lasts duration_ms once"},
        {fault(R"({"fault": "link", "point": "before_acquire", "mode": "hold", "store": true, "keep_holder_ms": 50})"), "keep_holder_ms", "one that lasts duration_ms once"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.fault.dump());
        expect_refused(with_fault(c.fault), std::string("faults[0].") + c.field, {c.says});
    }
    const Json link = fault(R"({"fault": "link", "point": "before_acquire", "client": 0, "mode": "hold", "store": true, "duration_ms": 40, "until": "another-enters", "max_ms": 90})");
    EXPECT_NO_THROW(parse_scenario(with_fault(link), kFile));
    // Without "until", a fault that lasts keeps the first to enter after its end.
    const Json kept = fault(R"({"fault": "pause", "point": "before_acquire", "client": 0, "duration_ms": 40, "keep_holder_ms": 90})");
    EXPECT_EQ(parse_scenario(with_fault(kept), kFile).runs.at(0).faults.at(0).keep_holder_ms, 90);
    const Json leader = fault(R"({"fault": "gate", "point": "before_release", "until": "leader", "max_ms": 900})");
    EXPECT_TRUE(parse_scenario(with_fault(leader), kFile).runs.at(0).faults.at(0).until_leader);
}

// ---- durations bounded by the run, parameters by an hour ------------------------------------

TEST(ScenarioParse, EveryDurationEndsWithinTheRun) {
    const auto fault = [](const char* json) { return Json::parse(json); };
    struct Case { Json fault; const char* field; };
    const std::vector<Case> cases = {
        {fault(R"({"fault": "pause", "point": "after_acquire", "duration_ms": 1001})"), "duration_ms"},
        {fault(R"({"fault": "link", "point": "after_acquire", "mode": "hold", "store": true, "duration_ms": 1001})"), "duration_ms"},
        {fault(R"({"fault": "link", "at_ms": 0, "mode": "delay", "jitter_ms": 1001, "store": true})"), "jitter_ms"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "stagger_ms": 1001})"), "stagger_ms"},
        {fault(R"({"fault": "gate", "point": "after_acquire", "client": 0, "until": "another-enters", "max_ms": 1001})"), "max_ms"},
        {fault(R"({"fault": "clock", "at_ms": 0, "client": 0, "rate": 1e300})"), "rate"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.fault.dump());
        expect_refused(with_fault(c.fault), std::string("faults[0].") + c.field);
    }
    Json s = base();
    s["workload"]["start_stagger_ms"] = 1001;
    expect_refused(s, "workload.start_stagger_ms", {"workload.duration_ms is 1000"});
    // The last of four clients starts 3 × the stagger after the first: that too within the run.
    s["workload"]["clients"] = 4;
    s["workload"]["start_stagger_ms"] = 334;
    expect_refused(s, "workload.start_stagger_ms", {"the last client must start within the run"});
    s["workload"]["start_stagger_ms"] = 333;
    EXPECT_EQ(refusal(s), "");
}

// "explore.fixed" names fields of the scenario's faults: an index past them names nothing the
// search could leave as written (before: accepted, and the search drew that fault anyway).
TEST(ScenarioParse, ExploreFixedNamesOnlyFaultsTheScenarioHas) {
    Json s = with_fault({{"fault", "pause"}, {"at_ms", 10}, {"client", 0}, {"duration_ms", 5}});
    s["explore"] = {{"fixed", {"faults.0.at_ms", "faults.*.client", "seed"}}};
    EXPECT_EQ(refusal(s), "");
    s["explore"]["fixed"] = {"faults.1.at_ms"};
    expect_refused(s, "explore.fixed", {"\"faults.1.at_ms\" names no fault: the runs have 1"});
    s["explore"]["fixed"] = {"faults.99999999999999999999999.at_ms"};
    expect_refused(s, "explore.fixed", {"names no fault"});
    Json none = base();
    none["explore"] = {{"fixed", {"faults.0.client"}}};
    expect_refused(none, "explore.fixed", {"the runs have 0"});
}

// "until_sections" is a count of sections, at least one.
TEST(ScenarioParse, UntilSectionsIsAPositiveCount) {
    Json s = base();
    s["workload"]["until_sections"] = 8;
    EXPECT_EQ(parse_scenario(s, kFile).workload.until_sections, 8);
    EXPECT_EQ(parse_scenario(s, kFile).workload.longest_ms(), 4000);
    EXPECT_EQ(parse_scenario(base(), kFile).workload.longest_ms(), 1000);
    s["workload"]["until_sections"] = 0;
    expect_refused(s, "workload.until_sections");
}

// A scenario file's empty runs are its "runs" field's fault, said so (before: "applies to none
// of the locks asked for", though none was asked for).
TEST(ScenarioParse, EmptyRunsNameTheField) {
    const fs::path dir = temp_dir("empty-runs");
    Json s = base();
    s["runs"] = Json::array();
    std::ofstream(dir / kFile) << s.dump();
    std::string m;
    try {
        scenario_for_file(dir / kFile, {}, LockChoice::catalog, nullptr);
    } catch (const ScenarioError& e) {
        m = e.what();
    }
    EXPECT_EQ(m, (dir / kFile).string() + ": runs: required, expected a non-empty array of runs");
    fs::remove_all(dir);
}

TEST(ScenarioParse, StartAfterNamesAClientAPointAndItsLongestWait) {
    Json s = base();
    s["workload"]["clients"] = 3;
    s["workload"]["start_after"] = Json::parse(R"({"client": 0, "point": "after_acquire", "max_ms": 500})");
    EXPECT_EQ(refusal(s), "");
    s["workload"]["start_after"]["client"] = 3;
    expect_refused(s, "workload.start_after.client", {"one of the workload's 3 clients"});
    s["workload"]["start_after"]["client"] = 1;
    s["workload"]["start_after"]["point"] = "after_lunch";
    expect_refused(s, "workload.start_after.point", {"after_lunch"});
    s["workload"]["start_after"]["point"] = "before_write";
    s["workload"]["start_after"]["max_ms"] = 1001;
    expect_refused(s, "workload.start_after.max_ms", {"workload.duration_ms is 1000"});
    s["workload"]["start_after"].erase("max_ms");
    expect_refused(s, "workload.start_after.max_ms", {"required"});
    s["workload"]["start_after"] = Json::parse(R"({"max_ms": 5, "when": 1})");
    expect_refused(s, "workload.start_after.when", {});
}

TEST(ScenarioParse, RunsTimeoutsAndParametersStayUnderAnHour) {
    for (const char* pointer : {"/workload/duration_ms", "/client/command_timeout_ms", "/runs/0/params/ttl_ms"}) {
        SCOPED_TRACE(pointer);
        Json s = base();
        s[Json::json_pointer(pointer)] = 3'600'001;
        EXPECT_NE(refusal(s), "");
        s[Json::json_pointer(pointer)] = 3'600'000;
        if (std::string(pointer) != "/workload/duration_ms") s["workload"]["duration_ms"] = 3'600'000;
        EXPECT_EQ(refusal(s), "");
    }
    Json s = base();
    s["runs"][0] = {{"algorithm", "redlock"}, {"params", {{"drift_ms", 1e300}}}};
    expect_refused(s, "runs[0].params.drift_ms", {"from 0 to 3600000"});
}

// ---- item 4: a distribution's values, bounds and mean finite and within the run -------------

TEST(ScenarioParse, ADistributionNeverDrawsInfinity) {
    const std::vector<Json> bad = {Json::parse(R"({"exponential": 1e308})"), Json::parse(R"({"fixed": 1e308})"),
                                   Json::parse(R"({"uniform": [0, 1e308]})"), Json::parse(R"({"exponential": 1001})")};
    for (const Json& d : bad) {
        SCOPED_TRACE(d.dump());
        Json s = base();
        s["workload"]["work_ms"] = d;
        expect_refused(s, "workload.work_ms", {"from 0 to 1000"});
        s = base();
        s["workload"]["slow"] = {{"probability", 0.5}, {"work_ms", d}};
        expect_refused(s, "workload.slow.work_ms");
    }
    Json s = base();
    s["workload"]["retry_ms"] = {{"exponential", 1000}};
    EXPECT_EQ(refusal(s), "") << "a mean of the whole run is allowed";
}

// ---- item 5 and the rest: nesting, a folder, absurd sizes -----------------------------------

TEST(ScenarioParse, DeepNestingIsRefusedInOneLineNamingTheFile) {
    const fs::path dir = temp_dir("deep");
    const fs::path file = dir / "deep.json";
    std::ofstream(file) << R"({"name": "deep", "description": )" << std::string(100, '[') << std::string(100, ']')
                        << R"(, "runs": [{"algorithm": "setnx"}]})";
    try {
        load_scenario(file);
        ADD_FAILURE() << "accepted";
    } catch (const ScenarioError& e) {
        EXPECT_EQ(std::string(e.what()), file.string() + ": nested more than 64 levels deep");
    }
    fs::remove_all(dir);
}

TEST(ScenarioParse, AFolderIsNotAScenarioFile) {
    const fs::path dir = temp_dir("folder");
    try {
        load_scenario(dir);
        ADD_FAILURE() << "accepted";
    } catch (const ScenarioError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(dir.string() + ": a folder", 0), 0u) << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a ScenarioError: " << e.what();
    }
    fs::remove_all(dir);
}

TEST(ScenarioParse, AMessageQuotesOnlyAnExcerptOfAValue) {
    const std::string huge(5'000'000, 'x');
    Json s = base();
    s["name"] = huge + "/";
    expect_refused(s, "name", {"xxx...", "5000003 characters"});
    s = base();
    s["workload"]["clients"] = Json::array();
    for (int i = 0; i < 100'000; ++i) s["workload"]["clients"].push_back(i);
    expect_refused(s, "workload.clients", {"[0,1,2"});
    s = base();
    s[huge] = 1;
    expect_refused(s, "xxxxxxxxxx", {"unknown field"});
    s = base();
    s["runs"][0]["params"] = {{"ttl_ms", huge}};
    expect_refused(s, "runs[0].params.ttl_ms", {"expected an integer from 1 to 3600000"});
}

// A name, a key or a value quoted in a message is shown as text, never acted on by the
// terminal: U+202E would print what follows backwards, an escape sequence would recolour or
// erase the line, a byte that is not UTF-8 would garble it.
TEST(ScenarioParse, AMessageEscapesControlAndBidiCharacters) {
    const std::string rlo = "\u202E";
    Json s = base();
    s["name"] = "report" + rlo + "fdp.exe";
    expect_refused(s, "name", {"report\\u202efdp.exe"});
    EXPECT_EQ(refusal(s).find(rlo), std::string::npos) << refusal(s);
    s = base();
    s["runs"][0]["\x1b[2K\x1b[31mnme"] = 1;  // an unknown field's own name
    expect_refused(s, "runs[0].\\u001b[2K\\u001b[31mnme", {"unknown field"});
    s = base();
    s["runs"][0]["algorithm"] = "set\u0085nx" + rlo;  // C1 NEL, which JSON text keeps as it is
    expect_refused(s, "runs[0].algorithm", {"\"set\\u0085nx\\u202e\""});
    s = base();
    s["lock\xff"] = 1;  // not UTF-8
    expect_refused(s, "lock\\xff", {"unknown field"});
}

TEST(ScenarioParse, AFileOfAbsurdSizeIsRefused) {
    const fs::path dir = temp_dir("size");
    const fs::path file = dir / "big.json";
    std::ofstream(file) << R"({"name": "big", "description": ")" << std::string(2 << 20, 'x')
                        << R"(", "runs": [{"algorithm": "setnx"}]})";
    try {
        load_scenario(file);
        ADD_FAILURE() << "accepted";
    } catch (const ScenarioError& e) {
        EXPECT_NE(std::string(e.what()).find("at most 1 MiB"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
}

// ---- a swept value goes through the same rules ----------------------------------------------

TEST(ScenarioParse, ASweptValueIsRefusedAsTheFileWouldBe) {
    const fs::path dir = temp_dir("sweep");
    const fs::path file = dir / "sweep.json";
    std::ofstream(file) << with_fault({{"fault", "pause"}, {"at_ms", 100}, {"client", 0}, {"duration_ms", 100}}).dump();
    try {
        sweep_spec(file, parse_sweep_param("faults.0.duration_ms=100..1000"), 2, {}, 1);
        ADD_FAILURE() << "a pause past the run's end was swept in";
    } catch (const std::exception& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.rfind(file.string() + ": faults[0].duration_ms: ", 0), 0u) << m;
        EXPECT_NE(m.find("--param faults.0.duration_ms=1000"), std::string::npos) << m;
    }
    try {
        sweep_spec(file, parse_sweep_param("faults.0.duration_ms=1..1e30"), 2, {}, 1);
        ADD_FAILURE() << "1e30 was swept into an integer";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
}

// A swept value that makes a case apply to none of the locks is refused, naming the value
// and the first lock's reason (the sweep would otherwise run a step of no cells).
TEST(ScenarioParse, ASweptValueThatLeavesNoCellIsRefused) {
    const fs::path dir = temp_dir("sweep-case");
    const fs::path file = dir / "case.json";
    std::ofstream(file) << R"({"name": "strike", "ttl_ms": 300, "workload": {"clients": 2, "duration_ms": 1000},
        "faults": [{"fault": "crash", "at_ms": 100, "node": 0}]})";
    const LockSelection locks = select_locks(fs::path(LOCKBENCH_SOURCE_DIR) / "locks", {"token-lua"});
    try {
        sweep_spec(file, parse_sweep_param("faults.0.node=0..3"), 2, {}, 1, &locks);
        ADD_FAILURE() << "a step of no cells was swept in";
    } catch (const std::exception& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("applies to none of the locks asked for (token-lua: strikes lock node 3"), std::string::npos) << m;
        EXPECT_NE(m.find("--param faults.0.node=3"), std::string::npos) << m;
    }
    fs::remove_all(dir);
}

// ---- the catalog stays valid ----------------------------------------------------------------
// Its files are cases, composed with locks into scenarios: compose_test parses every one.

}  // namespace

// ---- lock services: ZooKeeper and etcd (issue 15) --------------------------------------------

namespace services {

Json service_run(const char* service, int nodes, const Json& faults = Json::array()) {
    Json s = base();
    s["runs"] = Json::array({{{"algorithm", "external"}, {"name", "lib"}, {"command", {"/bin/true"}},
                              {"service", service}, {"nodes", nodes}}});
    if (!faults.empty()) s["runs"][0]["faults"] = faults;
    return s;
}

TEST(ScenarioParse, AServiceRunNamesItsServiceSizeAndFaultsByRole) {
    const Json faults = Json::parse(R"([
        {"fault": "crash", "point": "after_acquire", "node": "leader", "restart_after_ms": 100},
        {"fault": "pause", "at_ms": 10, "node": "follower", "duration_ms": 100},
        {"fault": "link", "at_ms": 10, "node": "leader", "peers": true, "mode": "blackhole", "duration_ms": 100}])");
    const Scenario s = parse_scenario(service_run("zookeeper", 3, faults), kFile);
    const RunSpec& r = s.runs.at(0);
    EXPECT_EQ(r.service, Service::zookeeper);
    EXPECT_EQ(r.nodes, 3);
    EXPECT_EQ(r.faults.at(0).node, kLeaderNode);
    EXPECT_EQ(r.faults.at(1).node, kFollowerNode);
    EXPECT_EQ(r.faults.at(1).kind, FaultSpec::Kind::pause);
    EXPECT_TRUE(r.faults.at(2).link_peers);
    EXPECT_EQ(r.faults.at(2).label(), "link blackhole peers of node leader for 100 ms at 10 ms");
    EXPECT_EQ(parse_scenario(base(), kFile).runs.at(0).service, Service::redis);  // the default
}

TEST(ScenarioParse, WhatAServiceCannotDoIsRefusedWithTheReason) {
    Json own = service_run("zookeeper", 1);
    own["runs"][0] = {{"algorithm", "token-lua"}, {"service", "zookeeper"}};
    expect_refused(own, "runs[0].service", {"external adapter"});
    expect_refused(service_run("mongodb", 1), "runs[0].service", {"\"redis\"", "\"postgresql\"", "\"mariadb\""});
    expect_refused(service_run("etcd", 2), "runs[0].nodes", {"1, 3 or 5"});
    Json sentinel = service_run("etcd", 1);
    sentinel["runs"][0]["topology"] = "sentinel";
    expect_refused(sentinel, "runs[0].topology", {"Redis nodes only"});
    const Json peers = Json::parse(R"([{"fault": "link", "at_ms": 10, "node": 0, "peers": true, "mode": "blackhole"}])");
    // What a kind cannot reach is its entry's (fault_kind.h), said of the fault as a cell that
    // does not apply says it.
    expect_refused(service_run("etcd", 3, peers), "runs[0].faults[0]", {"only ZooKeeper's go through lockbench's proxies", "etcd, 3 servers"});
    expect_refused(service_run("zookeeper", 1, peers), "runs[0].faults[0]", {"a single server does not have"});
    const Json clock = Json::parse(R"([{"fault": "clock", "at_ms": 10, "node": 0, "jump_ms": 1000}])");
    expect_refused(service_run("etcd", 1, clock), "runs[0].faults[0]", {"Go", "kernel's clock"});
    EXPECT_EQ(refusal(service_run("zookeeper", 1, clock)), "");  // the JVM reads time through libc
    // A disk stall: a node's, for a duration, on a server that flushes through libc.
    const Json stall = Json::parse(R"([{"fault": "disk-stall", "at_ms": 10, "node": 0, "duration_ms": 500}])");
    EXPECT_EQ(refusal(service_run("mariadb", 1, stall)), "");
    expect_refused(service_run("etcd", 1, stall), "runs[0].faults[0]", {"flushes to disk", "Go makes the fdatasync syscall itself"});
    expect_refused(service_run("zookeeper", 1, stall), "runs[0].faults[0]", {"forceSync=no"});
    expect_refused(service_run("postgresql", 1, stall), "runs[0].faults[0]", {"fsync=off"});
    // A Redis node flushes only with an append-only file: without one a stall would change nothing.
    expect_refused(service_run("redis", 1, stall), "runs[0].faults[0]", {"without \"persistence\" never flush"});
    for (const char* persistence : {"aof-always", "aof-everysec"}) {
        Json flushing = service_run("redis", 1, stall);
        flushing["runs"][0]["persistence"] = persistence;
        EXPECT_EQ(refusal(flushing), "") << persistence;
    }
    expect_refused(service_run("mariadb", 1, Json::parse(R"([{"fault": "disk-stall", "point": "before_acquire", "duration_ms": 500}])")),
                   "runs[0].faults[0].node", {"required for a disk stall"});
    expect_refused(service_run("mariadb", 1, Json::parse(R"([{"fault": "disk-stall", "at_ms": 10, "node": 0}])")),
                   "runs[0].faults[0].duration_ms", {"required for a disk stall"});
    // What lockbench gives a server itself (where it listens, how clients log in) a case cannot change.
    Json loud = service_run("mariadb", 1);
    loud["runs"][0]["server_settings"] = {{"bind_address", "0.0.0.0"}};
    expect_refused(loud, "runs[0].server_settings.bind_address", {"lockbench sets it itself"});
    loud = service_run("postgresql", 1);
    loud["runs"][0]["server_settings"] = {{"listen_addresses", "*"}};
    expect_refused(loud, "runs[0].server_settings.listen_addresses", {"lockbench sets it itself"});
    loud["runs"][0]["server_settings"] = {{"idle_session_timeout", "1s"}};
    EXPECT_EQ(refusal(loud), "");
    // "server", the program an etcd run's servers run: etcd only, an absolute path.
    Json program = service_run("etcd", 1);
    program["runs"][0]["server"] = "/opt/etcd-3.7/etcd";
    EXPECT_EQ(refusal(program), "");
    program["runs"][0]["server"] = "etcd-3.7";
    expect_refused(program, "runs[0].server", {"expected the absolute path"});
    program = service_run("postgresql", 1);
    program["runs"][0]["server"] = "/opt/etcd-3.7/etcd";
    expect_refused(program, "runs[0].server", {"applies to a \"etcd\" or \"hazelcast\" service only"});
    // Hazelcast has no program of lockbench's own: a run must name its members'.
    program = service_run("hazelcast", 3);
    expect_refused(program, "runs[0].service", {"a hazelcast run names the program its servers run"});
    program["runs"][0]["server"] = "/opt/hazelcast/member";
    EXPECT_EQ(refusal(program), "");
    const Json leader = Json::parse(R"([{"fault": "crash", "at_ms": 10, "node": "leader"}])");
    Json redis = base();
    redis["runs"][0]["faults"] = leader;
    expect_refused(redis, "runs[0].faults[0].node", {"no leader"});
    expect_refused(service_run("etcd", 3, Json::parse(R"([{"fault": "crash", "at_ms": 10, "node": "boss"}])")),
                   "runs[0].faults[0].node", {"\"leader\" or \"follower\""});
    expect_refused(service_run("etcd", 1, Json::parse(R"([{"fault": "pause", "at_ms": 10, "node": "follower", "duration_ms": 5}])")),
                   "runs[0].faults[0].node", {"no follower"});
    expect_refused(with_fault(Json::parse(R"({"fault": "link", "at_ms": 0, "mode": "blackhole", "node": 0, "store": true})")),
                   "faults[0].node", {"only with \"peers\""});
}

}  // namespace services

// ---- renewal (issue 16) ----------------------------------------------------------------------

namespace renewal {

Json with_renew(const Json& renew) {
    Json s = base();
    s["runs"][0]["renew"] = renew;
    return s;
}

TEST(ScenarioParse, ARenewalPolicyIsReadWithItsDefaults) {
    const Scenario s = parse_scenario(with_renew({{"fraction", 0.25}, {"ttl_ms", 400}}), kFile);
    ASSERT_TRUE(s.runs[0].renew);
    const RenewSpec& r = *s.runs[0].renew;
    EXPECT_EQ(r.period_ms(), 100);
    EXPECT_FALSE(r.replace) << "add is redis-py's default";
    EXPECT_FALSE(r.retry);
    EXPECT_FALSE(r.abandon);
    EXPECT_EQ(r.to_json(), Json::parse(R"({"fraction": 0.25, "ttl_ms": 400, "mode": "add", "on_failure": "stop",
                                           "abandon": false})"));
    const Scenario t = parse_scenario(with_renew({{"every_ms", 30}, {"ttl_ms", 50}, {"mode", "replace"},
                                                  {"on_failure", "retry"}, {"abandon", true}}), kFile);
    EXPECT_EQ(t.runs[0].renew->period_ms(), 30);
    EXPECT_TRUE(t.runs[0].renew->replace && t.runs[0].renew->retry && t.runs[0].renew->abandon);
    EXPECT_FALSE(parse_scenario(base(), kFile).runs[0].renew) << "no policy: no renewal";
}

TEST(ScenarioParse, ABadRenewalPolicyIsOneLineNamingTheField) {
    expect_refused(with_renew({{"every_ms", 100}}), "runs[0].renew.ttl_ms", {"required"});
    expect_refused(with_renew({{"ttl_ms", 100}}), "runs[0].renew.every_ms", {"exactly one"});
    expect_refused(with_renew({{"every_ms", 10}, {"fraction", 0.5}, {"ttl_ms", 100}}), "runs[0].renew.every_ms",
                   {"exactly one"});
    expect_refused(with_renew({{"every_ms", 0}, {"ttl_ms", 100}}), "runs[0].renew.every_ms", {"an integer from 1"});
    expect_refused(with_renew({{"fraction", 0.001}, {"ttl_ms", 100}}), "runs[0].renew.fraction");
    expect_refused(with_renew({{"fraction", 0.02}, {"ttl_ms", 10}}), "runs[0].renew.fraction", {"at least 1 ms"});
    expect_refused(with_renew({{"every_ms", 10}, {"ttl_ms", 100}, {"mode", "double"}}), "runs[0].renew.mode",
                   {"\"add\" or \"replace\"", "double"});
    expect_refused(with_renew({{"every_ms", 10}, {"ttl_ms", 100}, {"on_failure", "panic"}}), "runs[0].renew.on_failure");
    expect_refused(with_renew({{"every_ms", 10}, {"ttl_ms", 100}, {"abandon", "yes"}}), "runs[0].renew.abandon",
                   {"true or false"});
    expect_refused(with_renew({{"every_ms", 10}, {"ttl_ms", 100}, {"jitter", 1}}), "runs[0].renew.jitter",
                   {"unknown field"});
    expect_refused(with_renew(Json::array()), "runs[0].renew", {"expected an object"});
}

// A period is bounded as every_ms is, an hour: a fraction of an hour-long TTL may not make it
// a hundred hours.
TEST(ScenarioParse, ARenewalPeriodIsAtMostAnHour) {
    expect_refused(with_renew({{"fraction", 100}, {"ttl_ms", 3'600'000}}), "runs[0].renew.fraction",
                   {"at most 3600000 ms", "360000000"});
    expect_refused(with_renew({{"fraction", 1.5}, {"ttl_ms", 3'600'000}}), "runs[0].renew.fraction", {"at most 3600000 ms"});
    EXPECT_EQ(refusal(with_renew({{"fraction", 1}, {"ttl_ms", 3'600'000}})), "");
    EXPECT_EQ(refusal(with_renew({{"fraction", 100}, {"ttl_ms", 36'000}})), "");
}

}  // namespace renewal

// ---- the repeating nemesis (issue 16) ---------------------------------------------------------

namespace repeating {

TEST(ScenarioParse, ARepeatingFaultReadsItsIntervalTargetAndDrawnLength) {
    const Scenario s = parse_scenario(with_fault(Json::parse(R"(
        {"fault": "pause", "client": "holder", "every_ms": {"exponential": 400}, "duration_ms": {"uniform": [100, 300]},
         "until_ms": 900})")), kFile);
    const FaultSpec& f = s.runs.at(0).faults.at(0);
    ASSERT_TRUE(f.repeats());
    EXPECT_EQ(f.every_ms->kind, Distribution::Kind::exponential);
    EXPECT_EQ(f.target, FaultSpec::Target::holder);
    EXPECT_FALSE(f.client);
    EXPECT_FALSE(f.at_ms);  // the first occurrence comes one interval in
    EXPECT_EQ(f.until_ms, 900);
    ASSERT_TRUE(f.duration_drawn_ms);
    EXPECT_EQ(f.label(), "pause 100..300 ms on the holder every mean 400 ms");
    // A number is a fixed period; until_ms defaults to the clients' duration.
    const FaultSpec g = parse_scenario(with_fault(Json::parse(R"(
        {"fault": "link", "client": "random", "every_ms": 250, "at_ms": 0, "mode": "blackhole", "store": true, "duration_ms": 50})")),
                                       kFile).runs.at(0).faults.at(0);
    EXPECT_EQ(g.every_ms->kind, Distribution::Kind::fixed);
    EXPECT_EQ(g.every_ms->a, 250);
    EXPECT_EQ(g.until_ms, 1000);
    EXPECT_EQ(g.target, FaultSpec::Target::random);
    EXPECT_FALSE(g.all_clients) << "each occurrence cuts the paths of the client it drew";
    EXPECT_FALSE(g.ends_by_ms) << "a stated length is checked against the run when read";
    EXPECT_EQ(f.ends_by_ms, 1000) << "a drawn one is cut to end with the clients";
}

TEST(ScenarioParse, WhatCannotRepeatIsRefusedInOneLine) {
    struct Case { const char* fault; const char* field; const char* piece; };
    const std::vector<Case> cases = {
        {R"({"fault": "kill", "client": 0, "every_ms": 100})", "faults[0].every_ms", "only a pause, a link fault, a crash or a disk stall repeats (a kill happens once)"},
        {R"({"fault": "gate", "point": "after_acquire", "every_ms": 100})", "faults[0].point", "not at a point"},
        {R"({"fault": "pause", "point": "after_acquire", "every_ms": 100, "duration_ms": 5})", "faults[0].point", "not at a point"},
        {R"({"fault": "link", "client": 0, "every_ms": 100, "mode": "blackhole", "store": true})", "faults[0].duration_ms", "heals before the next"},
        {R"({"fault": "crash", "node": 0, "every_ms": 100})", "faults[0].restart_after_ms", "comes back before the next"},
        {R"({"fault": "crash", "node": 0, "client": "holder", "every_ms": 100, "restart_after_ms": 10})", "faults[0].client", "a fault on a node"},
        {R"({"fault": "pause", "client": "boss", "every_ms": 100, "duration_ms": 5})", "faults[0].client", "\"random\" or \"holder\""},
        {R"({"fault": "pause", "every_ms": 100, "duration_ms": 5})", "faults[0].client", "every_ms: which client"},
        {R"({"fault": "pause", "client": "holder", "at_ms": 10, "duration_ms": 5})", "faults[0].client", "give every_ms"},
        {R"({"fault": "pause", "client": 0, "at_ms": 10, "duration_ms": {"fixed": 5}})", "faults[0].duration_ms", "give every_ms"},
        {R"({"fault": "pause", "client": 0, "at_ms": 10, "duration_ms": 5, "until_ms": 50})", "faults[0].until_ms", "only a repeating fault"},
        {R"({"fault": "pause", "client": 0, "every_ms": 0, "duration_ms": 5})", "faults[0].every_ms", "from 1 to 1000"},
        {R"({"fault": "pause", "client": 0, "every_ms": {"exponential": 5000}, "duration_ms": 5})", "faults[0].every_ms", "each from 1 to 1000"},
        {R"({"fault": "pause", "client": 0, "every_ms": 100, "duration_ms": 5, "until_ms": 1001})", "faults[0].until_ms", "from 1 to 1000"},
        {R"({"fault": "pause", "client": 0, "every_ms": 100, "duration_ms": {"normal": 5}})", "faults[0].duration_ms", "{\"fixed\": MS}"},
        {R"({"fault": "clock", "client": 0, "every_ms": 100, "jump_ms": 50})", "faults[0].every_ms", "a jump never ends"},
        {R"({"fault": "pause", "client": 0, "every_ms": 100, "duration_ms": 5, "at_ms": 600, "until_ms": 600})", "faults[0].at_ms",
         "before until_ms (600)"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.fault);
        expect_refused(with_fault(Json::parse(c.fault)), c.field, {c.piece});
    }
}

// An interval of 0 would fire the fault again at the same instant, every time: each drawn
// interval is at least 1 ms, so a distribution that names less (a fixed 0, a mean of 0, a
// uniform from 0, which draws below 1 ms now and then) is refused, not floored quietly.
TEST(ScenarioParse, ARepeatingFaultsIntervalIsAtLeastOneMillisecond) {
    for (const char* every : {R"({"fixed": 0})", R"({"exponential": 0})", R"({"uniform": [0, 10]})",
                              R"({"uniform": [0.5, 10]})", R"({"fixed": 0.5})"}) {
        SCOPED_TRACE(every);
        const Json fault = Json::parse(R"({"fault": "pause", "client": 0, "duration_ms": 5, "every_ms": )" + std::string(every) + "}");
        expect_refused(with_fault(fault), "faults[0].every_ms", {"each from 1 to 1000", "at least 1 ms"});
    }
    for (const char* every : {R"({"fixed": 1})", R"({"exponential": 1})", R"({"uniform": [1, 10]})"}) {
        SCOPED_TRACE(every);
        const Json fault = Json::parse(R"({"fault": "pause", "client": 0, "duration_ms": 5, "every_ms": )" + std::string(every) + "}");
        EXPECT_EQ(refusal(with_fault(fault)), "");
    }
    // A work time may still be 0: only an interval between occurrences has the floor.
    Json s = base();
    s["workload"]["think_ms"] = {{"fixed", 0}};
    EXPECT_EQ(refusal(s), "");
}

}  // namespace repeating

// ---- issue 16: a pause of the client's background tasks alone ---------------------------------

// The one run of `j` as reentrant with its watchdog (its default): it runs a background task.
Json on_reentrant(Json j) {
    j["runs"][0]["algorithm"] = "reentrant";
    return j;
}

TEST(ScenarioParse, APauseTakesTheClientOrItsBackgroundTasks) {
    const Json fault = {{"fault", "pause"}, {"point", "after_acquire"}, {"duration_ms", 100}, {"task", "background"}};
    const Scenario s = parse_scenario(on_reentrant(with_fault(fault)), kFile);
    ASSERT_EQ(s.runs.front().faults.size(), 1u);
    EXPECT_TRUE(s.runs.front().faults.front().background);
    EXPECT_NE(s.runs.front().faults.front().label().find("background"), std::string::npos);
    Json client = fault;
    client["task"] = "client";
    EXPECT_FALSE(parse_scenario(with_fault(client), kFile).runs.front().faults.front().background);
}

TEST(ScenarioParse, ABackgroundTaskIsPausedOnlyByAClientPause) {
    const Json watchdog = {{"fault", "pause"}, {"point", "after_acquire"}, {"duration_ms", 100}, {"task", "watchdog"}};
    expect_refused(with_fault(watchdog), "faults[0].task", {"\"client\" or \"background\"", "watchdog"});
    const Json kill = {{"fault", "kill"}, {"point", "after_acquire"}, {"task", "background"}};
    expect_refused(with_fault(kill), "faults[0].task", {"only a pause"});
    const Json node = {{"fault", "pause"}, {"at_ms", 10}, {"node", 0}, {"duration_ms", 100}, {"task", "background"}};
    expect_refused(with_fault(node), "faults[0].task", {"node"});
    const Json number = {{"fault", "pause"}, {"point", "after_acquire"}, {"duration_ms", 100}, {"task", 1}};
    expect_refused(with_fault(number), "faults[0].task");
    Json library = with_fault({{"fault", "pause"}, {"point", "after_acquire"}, {"duration_ms", 100}, {"task", "background"}});
    library["runs"] = Json::parse(R"([{"algorithm": "external", "name": "redis-py", "command": ["/usr/bin/python3", "x.py"]}])");
    expect_refused(library, "faults[0].task", {"external library"});
}

// A run with no background task (no renew policy, no watchdog) would count the pause as
// injected while it did nothing: refused. A renew policy or reentrant's watchdog is one.
TEST(ScenarioParse, ABackgroundPauseNeedsABackgroundTaskToPause) {
    const Json fault = {{"fault", "pause"}, {"point", "after_acquire"}, {"duration_ms", 100}, {"task", "background"}};
    for (const char* algorithm : {"setnx", "token-lua", "getset", "redlock"}) {
        Json s = with_fault(fault);
        s["runs"][0]["algorithm"] = algorithm;
        SCOPED_TRACE(algorithm);
        expect_refused(s, "faults[0].task", {"no background task", "\"renew\""});
        s["runs"][0]["renew"] = {{"every_ms", 100}, {"ttl_ms", 300}};
        EXPECT_EQ(refusal(s), "");
    }
    Json without_watchdog = on_reentrant(with_fault(fault));
    without_watchdog["runs"][0]["params"] = {{"watchdog", false}};
    expect_refused(without_watchdog, "faults[0].task", {"no background task"});
    Json own = without_watchdog;
    own["runs"][0]["faults"] = Json::array({fault});
    expect_refused(own, "runs[0].faults[0].task", {"no background task"});
}

namespace {

// "resource_check": fence by default (today's store), none or token when asked; anything
// else, or a non-string, is one line naming the run's field.
TEST(ScenarioParse, AResourceCheckIsNoneFenceOrToken) {
    EXPECT_EQ(parse_scenario(base(), kFile).runs.at(0).resource_check, ResourceCheck::fence);
    for (const auto& [name, check] : {std::pair{"none", ResourceCheck::none}, {"fence", ResourceCheck::fence},
                                      {"token", ResourceCheck::token}}) {
        Json s = base();
        s["runs"][0]["resource_check"] = name;
        EXPECT_EQ(parse_scenario(s, kFile).runs.at(0).resource_check, check) << name;
    }
    Json bad = base();
    bad["runs"][0]["resource_check"] = "cas";
    expect_refused(bad, "runs[0].resource_check", {"\"none\", \"fence\" or \"token\"", "\"cas\""});
    bad["runs"][0]["resource_check"] = true;
    expect_refused(bad, "runs[0].resource_check", {"a string"});
}

// Reentrant's token is one per client, not per lease: check-and-set on it cannot see a stale
// lease of the same client, so the combination is refused; its fence is checked as any other.
TEST(ScenarioParse, TheTokenCheckRefusesReentrant) {
    Json s = on_reentrant(base());
    s["runs"][0]["resource_check"] = "token";
    expect_refused(s, "runs[0].resource_check", {"reentrant", "\"fence\""});
    s["runs"][0]["resource_check"] = "fence";
    EXPECT_EQ(refusal(s), "");
}

}  // namespace

// ---- an external library's own parameters (issue 17) -----------------------------------------

TEST(ScenarioParse, AnExternalRunKeepsTheLibrarysOwnParametersAsGiven) {
    Json s = base();
    s["runs"] = Json::parse(R"([{"algorithm": "external", "name": "lib", "command": ["/bin/true"],
        "params": {"ttl_ms": 700, "variant": "redlock-mutex", "refresh": false, "retry": {"count": 3}}}])");
    const Params p = parse_scenario(s, kFile).runs.at(0).params;
    EXPECT_EQ(p.integer("ttl_ms"), 700);
    EXPECT_FALSE(p.flag("fence"));  // lockbench's own still get their defaults
    EXPECT_EQ(p.json().at("variant"), "redlock-mutex");
    EXPECT_EQ(p.json().at("retry"), Json::parse(R"({"count": 3})"));
    // The ones lockbench reads itself are still checked; a built-in algorithm has no others.
    s["runs"][0]["params"]["fence"] = "yes";
    expect_refused(s, "runs[0].params.fence", {"true or false"});
    Json own = base();
    own["runs"] = Json::parse(R"([{"algorithm": "token-lua", "params": {"variant": "x"}}])");
    expect_refused(own, "runs[0].params.variant", {"unknown parameter"});
}

// ---- the verdict table's column (issue 17) ----------------------------------------------------

// "failure_class" is optional and names one of the table's columns; anything else is one line
// naming the field, the classes it may take and the value given.
TEST(ScenarioParse, AFailureClassIsOneOfTheTablesColumns) {
    EXPECT_FALSE(parse_scenario(base(), kFile).failure_class.has_value());
    for (const std::string& c : failure_classes()) {
        Json s = base();
        s["failure_class"] = c;
        EXPECT_EQ(parse_scenario(s, kFile).failure_class, c);
    }
    Json bad = base();
    bad["failure_class"] = "gc_pause";
    expect_refused(bad, "failure_class", {"gc-pause", "slow-holder", "\"gc_pause\""});
    bad["failure_class"] = 3;
    expect_refused(bad, "failure_class", {"a string"});
}

// "table_row": a case's variant of a library's run puts its verdicts in the library's row; it
// is a name like a run's own, checked the same way.
TEST(ScenarioParse, ARunsTableRowIsANameLikeItsOwn) {
    Json s = base();
    s["runs"] = Json::parse(R"([{"algorithm": "external", "name": "lib+variant", "table_row": "lib", "command": ["/bin/true"]}])");
    EXPECT_EQ(parse_scenario(s, kFile).runs.at(0).table_row, "lib");
    EXPECT_FALSE(parse_scenario(base(), kFile).runs.at(0).table_row.has_value());
    s["runs"][0]["table_row"] = "../lib";
    expect_refused(s, "runs[0].table_row", {"a name of at most 200"});
}

// Every column of the verdict table has a catalog file to fill it.
TEST(ScenarioParse, EveryFailureClassHasACatalogFile) {
    std::set<std::string> named;
    for (const char* sub : {"", "discovered"})
        for (const auto& e : fs::directory_iterator(fs::path(LOCKBENCH_SOURCE_DIR) / "scenarios" / sub))
            if (e.path().extension() == ".json")
                if (const auto c = load_case_file(e.path()).failure_class) named.insert(*c);
    for (const std::string& c : failure_classes()) EXPECT_TRUE(named.contains(c)) << c;
}

// ---- what reaches an adapter through execve (hardening) --------------------------------------

namespace adapter_launch {

Json external_run(const Json& command, const Json& params = Json::object()) {
    Json s = base();
    s["runs"] = Json::array({{{"algorithm", "external"}, {"name", "lib"}, {"command", command}, {"params", params}}});
    return s;
}

// A NUL would cut the argument short where execve reads it, and any other control character
// is no part of a program's name or argument that a message could show: refused, naming it.
TEST(ScenarioParse, ACommandWithAControlCharacterIsRefused) {
    expect_refused(external_run({std::string("pyth\0on", 7), "adapter.py"}), "runs[0].command[0]",
                   {"control", "\"pyth\\u0000on\""});
    expect_refused(external_run({"/usr/bin/python3", "a\x1b[2J.py"}), "runs[0].command[1]", {"control", "\\u001b"});
    expect_refused(external_run({"/usr/bin/python3", "a\u202Eyp.py"}), "runs[0].command[1]", {"\\u202e"});
    EXPECT_EQ(refusal(external_run({"/usr/bin/python3", "adapters/caf\u00e9.py", "--x=1 2"})), "");
}

// Linux refuses one argument or environment string over 128 KiB (E2BIG): the params go to
// the adapter as LOCKBENCH_PARAMS, each command element as an argument.
TEST(ScenarioParse, WhatExecveWouldRefuseIsRefusedAtParseTime) {
    expect_refused(external_run({"/bin/true"}, {{"blob", std::string(140'000, 'x')}}), "runs[0].params",
                   {"LOCKBENCH_PARAMS", "128 KiB"});
    EXPECT_EQ(refusal(external_run({"/bin/true"}, {{"blob", std::string(100'000, 'x')}})), "");
    expect_refused(external_run({"/bin/true", std::string(140'000, 'x')}), "runs[0].command[1]", {"128 KiB"});
}

}  // namespace adapter_launch

// ---- null is not "left out" (hardening) -------------------------------------------------------

namespace nulls {

// A field given null is refused wherever it is, in one line that says how to get the default:
// "service": null must not quietly mean Redis, nor "renew": null no renewal.
TEST(ScenarioParse, NullIsRefusedForEveryField) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {"/failure_class", "failure_class"},
        {"/description", "description"},
        {"/seed", "seed"},
        {"/base_port", "base_port"},
        {"/workload", "workload"},
        {"/workload/clients", "workload.clients"},
        {"/workload/sections_per_client", "workload.sections_per_client"},
        {"/workload/work_ms", "workload.work_ms"},
        {"/client", "client"},
        {"/client/command_timeout_ms", "client.command_timeout_ms"},
        {"/explore", "explore"},
        {"/faults", "faults"},
        {"/runs/0/service", "runs[0].service"},
        {"/runs/0/resource_check", "runs[0].resource_check"},
        {"/runs/0/table_row", "runs[0].table_row"},
        {"/runs/0/renew", "runs[0].renew"},
        {"/runs/0/nodes", "runs[0].nodes"},
        {"/runs/0/name", "runs[0].name"},
        {"/runs/0/params", "runs[0].params"},
        {"/runs/0/params/ttl_ms", "runs[0].params.ttl_ms"},
        {"/runs/0/expect", "runs[0].expect"},
        {"/runs/0/expect/sections_completed", "runs[0].expect.sections_completed"},
        {"/runs/0/faults", "runs[0].faults"},
        {"/runs/0/check_lease_before_write", "runs[0].check_lease_before_write"},
    };
    for (const auto& [pointer, field] : cases) {
        SCOPED_TRACE(field);
        Json s = base();
        s[Json::json_pointer(pointer)] = nullptr;
        expect_refused(s, field, {"got null; leave the field out for its default"});
    }
    // In a fault, a renewal policy and an external run's own parameters alike.
    const Json fault = {{"fault", "pause"}, {"at_ms", 10}, {"client", nullptr}, {"duration_ms", 5}};
    expect_refused(with_fault(fault), "faults[0].client", {"got null; leave the field out"});
    const Json point = {{"fault", "pause"}, {"point", nullptr}, {"at_ms", 10}, {"client", 0}, {"duration_ms", 5}};
    expect_refused(with_fault(point), "faults[0].point", {"got null; leave the field out"});
    Json renew = base();
    renew["runs"][0]["renew"] = {{"every_ms", 100}, {"ttl_ms", 300}, {"mode", nullptr}};
    expect_refused(renew, "runs[0].renew.mode", {"got null; leave the field out"});
    Json probe = base();
    probe["runs"] = Json::parse(R"([{"algorithm": "external", "name": "lib", "command": ["/bin/true"],
                                     "params": {"probe_key_ttl": null}}])");
    expect_refused(probe, "runs[0].params.probe_key_ttl", {"got null; leave the field out for its default"});
    Json service = base();
    service["runs"] = Json::parse(R"([{"algorithm": "external", "name": "lib", "command": ["/bin/true"], "service": null}])");
    expect_refused(service, "runs[0].service", {"got null; leave the field out for its default"});
}

}  // namespace nulls

// ---- the file itself (hardening) --------------------------------------------------------------

namespace file {

std::string load_refusal(const fs::path& file) {
    try {
        load_scenario(file);
    } catch (const ScenarioError& e) {
        return e.what();
    }
    return "";
}

// JSON leaves duplicate keys to the reader, and nlohmann keeps the last: a second "ttl_ms"
// would quietly win over the first. Refused, naming the key's place.
TEST(ScenarioParse, ADuplicateKeyIsRefusedNamingItsPath) {
    const fs::path dir = temp_dir("duplicate");
    const auto write = [&](const std::string& text) {
        const fs::path f = dir / "dup.json";
        std::ofstream(f) << text;
        return f;
    };
    fs::path f = write(R"({"name": "a", "name": "b", "runs": [{"algorithm": "setnx"}]})");
    EXPECT_EQ(load_refusal(f), f.string() + ": name: duplicate key (each key may appear once in an object)");
    f = write(R"({"name": "a", "runs": [{"algorithm": "setnx"}, {"algorithm": "token-lua", "params": {"ttl_ms": 100, "fence": true, "ttl_ms": 200}}]})");
    EXPECT_EQ(load_refusal(f), f.string() + ": runs[1].params.ttl_ms: duplicate key (each key may appear once in an object)");
    f = write(R"({"name": "a", "faults": [[], {"fault": "kill", "point": "after_acquire", "fault": "kill"}], "runs": [{"algorithm": "setnx"}]})");
    EXPECT_EQ(load_refusal(f), f.string() + ": faults[1].fault: duplicate key (each key may appear once in an object)");
    // The same key in two objects is no duplicate.
    f = write(R"({"name": "a", "runs": [{"algorithm": "setnx", "params": {"ttl_ms": 100}}, {"algorithm": "getset", "params": {"ttl_ms": 100}}]})");
    EXPECT_EQ(load_refusal(f), "");
    fs::remove_all(dir);
}

// A FIFO would block the reader until someone writes to it: refused before it is opened.
// (Should the reader open it all the same, the test writes nothing to it and closes it, so that
// the load ends and fails rather than hang.)
TEST(ScenarioParse, AFifoIsNotAScenarioFile) {
    const fs::path dir = temp_dir("fifo");
    const fs::path fifo = dir / "scenario.json";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto loading = std::async(std::launch::async, [&] { return load_refusal(fifo); });
    if (loading.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
        ADD_FAILURE() << "the reader blocked on the FIFO";
        ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK));
    }
    const std::string m = loading.get();
    EXPECT_EQ(m.rfind(fifo.string() + ": not a regular file", 0), 0u) << m;
    fs::remove_all(dir);
}

}  // namespace file
