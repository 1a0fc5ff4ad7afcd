// End-to-end tests of the lockbench command line: the real binary (LOCKBENCH_BINARY) is run as
// a subprocess, with stdout and stderr captured to files, each test in its own temp folder.
//
//   bad input ........ exit 2, one line on stderr naming the file, the field and what was
//                      expected, and nothing written to --out
//   run / check ...... exit 0 when every expectation holds, 1 when one does not; summary.json
//   list ............. the five algorithms and their parameters
//   help ............. every subcommand's --help short and naming its page of docs/; `help`
//                      naming every page there, `help TOPIC` its path and sections
//   lifetime ......... SIGKILL or SIGINT to lockbench leaves no redis-server or client behind
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "cli_util.h"

namespace {

// A small valid scenario: `clients` clients for `duration_ms`, the given runs.
std::string scenario(int clients, int duration_ms, const std::string& runs) {
    return R"({"name": "cli-test", "seed": 7, "workload": {"clients": )" + std::to_string(clients) +
           R"(, "duration_ms": )" + std::to_string(duration_ms) +
           R"(, "work_ms": {"uniform": [0.5, 2]}, "retry_ms": {"uniform": [1, 3]}}, "runs": )" + runs + "}";
}

const std::string tiny_token_lua =
    scenario(2, 300, R"([{"algorithm": "token-lua", "name": "tiny-token-lua", "expect": {"sections_completed": ">= 1"}}])");

// ---- 1. Bad scenario input ------------------------------------------------------------------

TEST_F(CliTest, RejectsUnknownTopLevelField) {
    expect_rejected(R"({"name": "x", "worklaod": {"clients": 2}, "runs": [{"algorithm": "setnx"}]})",
                    {"worklaod", "unknown field"});
}

TEST_F(CliTest, RejectsUnknownNestedField) {
    expect_rejected(R"({"name": "x", "workload": {"clinets": 2}, "runs": [{"algorithm": "setnx"}]})",
                    {"workload.clinets", "unknown field"});
}

TEST_F(CliTest, RejectsWrongType) {
    expect_rejected(R"({"name": "x", "workload": {"clients": "8"}, "runs": [{"algorithm": "setnx"}]})",
                    {"workload.clients", "expected an integer", "\"8\""});
}

TEST_F(CliTest, RejectsUnknownAlgorithm) {
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "setnxx"}]})",
                    {"runs[0].algorithm", "setnxx", "setnx", "getset", "token-lua", "redlock", "reentrant"});
}

TEST_F(CliTest, RejectsUnknownAlgorithmParameter) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx"}, {"algorithm": "token-lua", "params": {"tll_ms": 100}}]})",
        {"runs[1].params.tll_ms", "unknown parameter", "ttl_ms"});
}

TEST_F(CliTest, RejectsBadExpectation) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx", "expect": {"sections_completed": "== zero"}}]})",
        {"runs[0].expect.sections_completed", "expected a comparison", "== zero"});
}

TEST_F(CliTest, RejectsDuplicateRunName) {
    expect_rejected(R"({"name": "x", "runs": [{"algorithm": "setnx"}, {"algorithm": "setnx"}]})",
                    {"runs[1].name", "\"setnx\"", "earlier run"});
}

TEST_F(CliTest, RejectsDuplicateExplicitRunName) {
    expect_rejected(
        R"({"name": "x", "runs": [{"algorithm": "setnx", "name": "a"}, {"algorithm": "token-lua", "name": "a"}]})",
        {"runs[1].name", "\"a\"", "earlier run"});
}

TEST_F(CliTest, RejectsAFaultAimedAtAClientThatDoesNotExist) {
    expect_rejected(
        R"({"name": "x", "workload": {"clients": 2, "duration_ms": 1000},
            "faults": [{"fault": "pause", "at_ms": 100, "client": 5, "duration_ms": 100}],
            "runs": [{"algorithm": "setnx"}]})",
        {"faults[0].client", "no such client"});
}

TEST_F(CliTest, RejectsAScheduleThatEndsAfterTheRun) {
    expect_rejected(
        R"({"name": "x", "workload": {"clients": 2, "duration_ms": 1000},
            "runs": [{"algorithm": "setnx", "faults": [{"fault": "pause", "at_ms": 800, "client": 0, "duration_ms": 500}]}]})",
        {"runs[0].faults[0].duration_ms", "after the run"});
}

TEST_F(CliTest, RejectsAnUnknownPoint) {
    expect_rejected(
        R"({"name": "x", "faults": [{"fault": "kill", "point": "after_aquire"}], "runs": [{"algorithm": "setnx"}]})",
        {"faults[0].point", "after_aquire", "after_acquire"});
}

TEST_F(CliTest, RejectsFileThatIsNotJson) {
    expect_rejected("this is { not json\n", {"not valid JSON"});
}

TEST_F(CliTest, RejectsMissingFile) {
    expect_rejected("", {"cannot open"}, /*write=*/false);
}

// Issue 13, items 3 to 5: values that wrapped, drew infinity or crashed the parser.
TEST_F(CliTest, RejectsAnIntegerThatWouldWrapToMinusOne) {
    expect_rejected(R"({"name": "x", "workload": {"clients": 18446744073709551615}, "runs": [{"algorithm": "setnx"}]})",
                    {"workload.clients", "18446744073709551615", "from 1 to 64"});
}

TEST_F(CliTest, RejectsADistributionThatWouldDrawInfinity) {
    expect_rejected(R"({"name": "x", "workload": {"clients": 2, "duration_ms": 300, "work_ms": {"exponential": 1e308}},
                        "runs": [{"algorithm": "setnx"}]})",
                    {"workload.work_ms", "from 0 to 300"});
}

TEST_F(CliTest, RejectsDeepNestingWithoutCrashing) {
    expect_rejected(std::string(200'000, '[') + std::string(200'000, ']'), {"nested more than 64 levels deep"});
}

TEST_F(CliTest, RejectsAFolderGivenAsTheScenario) {
    const fs::path folder = dir() / "scenarios";
    fs::create_directories(folder);
    const fs::path out = dir() / "out";
    const Result r = run({"run", folder.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_EQ(r.err.rfind("lockbench: " + folder.string() + ": a folder", 0), 0u) << r.describe();
    EXPECT_FALSE(fs::exists(out)) << r.describe();
}

// ---- 2. --algorithm naming no run -----------------------------------------------------------

TEST_F(CliTest, RunWithAlgorithmNamingNoRun) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string(), "--algorithm", "redlock"});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("redlock"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
}

// A scenario's base_port that another process holds: the file and its field named, so the user
// knows what to change (before: "port N ... is already in use (node lock0)" naming neither).
TEST_F(CliTest, APortInUseAtBasePortNamesTheFileAndTheField) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    const int port = ntohs(addr.sin_port);
    std::string text = tiny_token_lua;
    text.insert(1, R"("base_port": )" + std::to_string(port) + ", ");
    const fs::path file = write_file("ported.json", text);
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string()});
    ::close(fd);
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    ASSERT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find(file.string() + ": base_port " + std::to_string(port) + ": port " + std::to_string(port) +
                         " on 127.0.0.1 is already in use"),
              std::string::npos)
        << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
}

// ---- 3. Missing redis-server ----------------------------------------------------------------

// What must hold: exit 2, no summary.json, and the error line names redis-server.
void expect_no_redis(const Result& r, const fs::path& out, const std::string& must_mention) {
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    const auto lines = lines_of(r.err);
    ASSERT_FALSE(lines.empty()) << r.describe();
    EXPECT_NE(lines.back().find("redis-server"), std::string::npos) << r.describe();
    EXPECT_NE(lines.back().find(must_mention), std::string::npos) << r.describe();
    EXPECT_FALSE(fs::exists(out / "summary.json")) << r.describe();
}

TEST_F(CliTest, MissingRedisServerFromEnvironmentExits2WithoutSummary) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["LOCKBENCH_REDIS_SERVER"] = "/nonexistent/redis-server";
    expect_no_redis(run({"run", file.string(), "--out", out.string()}, o), out, "/nonexistent/redis-server");
}

TEST_F(CliTest, MissingRedisServerOnPathExits2WithoutSummary) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["PATH"] = (dir() / "empty-path").string();
    o.unset_env.push_back("LOCKBENCH_REDIS_SERVER");
    expect_no_redis(run({"run", file.string(), "--out", out.string()}, o), out, "PATH");
}

// The brief: "one clear line". Today the progress line of the run that failed
// ("lockbench: [1/1] ... failed") comes first, so stderr has two lines.
TEST_F(CliTest, MissingRedisServerStderrIsExactlyOneLine) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ToolOptions o;
    o.set_env["LOCKBENCH_REDIS_SERVER"] = "/nonexistent/redis-server";
    const Result r = run({"run", file.string(), "--out", out.string()}, o);
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
}

// ---- 4. check -------------------------------------------------------------------------------

TEST_F(CliTest, CheckOnEmptyFolder) {
    fs::create_directories(dir() / "empty");
    const Result r = run({"check", (dir() / "empty").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("empty"), std::string::npos) << r.describe();
}

TEST_F(CliTest, CheckOnMissingFolder) {
    const Result r = run({"check", (dir() / "no-such-folder").string()});
    EXPECT_EQ(r.exit_code(), 2) << r.describe();
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.describe();
    EXPECT_NE(r.err.find("no-such-folder"), std::string::npos) << r.describe();
}

// A bad command line is bad input like a bad scenario: one line, exit 2, nothing written.
TEST_F(CliTest, ABadCommandLineIsOneLineAndExit2) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    expect_one_line_error(run({"run", file.string(), "--out", out.string(), "--no-such-option"}), "--no-such-option");
    expect_one_line_error(run({"run"}), "scenario");
    expect_one_line_error(run({"matrix", "--repeat", "many"}), "--repeat");
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(run({"run", "--help"}).exit_code(), 0);
}

// A seed is a non-negative number: "-3" was taken as 18446744073709551613.
TEST_F(CliTest, ANegativeSeedIsRefused) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    expect_one_line_error(run({"run", file.string(), "--out", out.string(), "--backend", "sim", "--seed", "-3"}),
                          "--seed");
    expect_one_line_error(run({"explore", file.string(), "--out", out.string(), "--seed", "-1"}), "--seed");
    expect_one_line_error(run({"explore", file.string(), "--out", out.string(), "--replay", "-1"}), "--replay");
    // 2^64 was saturated to 2^64 - 1 and run.
    expect_one_line_error(run({"run", file.string(), "--out", out.string(), "--backend", "sim", "--seed",
                               "18446744073709551616"}), "--seed");
    EXPECT_FALSE(fs::exists(out));
}

// A word lockbench does not know, before any subcommand, is named with the choices (before: "A
// subcommand is required", naming neither); an empty --out is named as such (before: the
// filesystem's "cannot create directories: Invalid argument []").
TEST_F(CliTest, AnUnknownSubcommandOrOptionOrAnEmptyOutIsNamed) {
    const Result word = run({"frobnicate"});
    expect_one_line_error(word, "no subcommand frobnicate");
    EXPECT_NE(word.err.find("run, check, matrix"), std::string::npos) << word.err;
    expect_one_line_error(run({"--frobnicate"}), "unknown option --frobnicate before the subcommand");
    expect_one_line_error(run({"fr\u202eob"}), "fr\\u202eob");  // shown escaped, never raw
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    expect_one_line_error(run({"run", file.string(), "--out", ""}), "--out: an empty path");
    expect_one_line_error(run({"matrix", file.string(), "--out", ""}), "--out: an empty path");
    EXPECT_EQ(run({"--help"}).exit_code(), 0);
}

TEST_F(CliTest, CheckSaysWhichFiguresDifferFromSummaryJson) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ASSERT_EQ(run({"run", file.string(), "--out", out.string(), "--backend", "sim"}).exit_code(), 0);
    const Result clean = run({"check", out.string()});
    EXPECT_EQ(clean.exit_code(), 0) << clean.describe();
    EXPECT_EQ(clean.out.find("differs"), std::string::npos) << clean.describe();

    // Cut client 0's history at a line boundary right after its last write: what it did
    // after (its last release) is gone, and nothing left contradicts the store's log.
    const fs::path history = out / "runs" / "tiny-token-lua" / "history" / "client-0.jsonl";
    const auto lines = lines_of(read_text(history));
    size_t last_write = 0;
    for (size_t i = 0; i < lines.size(); ++i)
        if (lines[i].find(R"("op":"write")") != std::string::npos) last_write = i;
    ASSERT_GT(last_write, 0u);
    ASSERT_LT(last_write + 1, lines.size()) << "nothing after the last write to cut";
    std::string cut;
    for (size_t i = 0; i <= last_write; ++i) cut += lines[i] + "\n";
    write_text(history, cut);

    const Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 1) << c.describe();
    EXPECT_NE(c.out.find("differs: " + (out / "summary.json").string() + ": run tiny-token-lua: ops.released: "
                         "summary.json has "),
              std::string::npos)
        << c.describe();
}

// A run writes what the report draws (sections.json) beside its histories; plain `check`
// leaves it alone, `check --write` writes the same bytes again from the histories, and not
// where a figure differs.
TEST_F(CliTest, CheckWriteRebuildsTheRunsSectionsJson) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ASSERT_EQ(run({"run", file.string(), "--out", out.string(), "--backend", "sim"}).exit_code(), 0);
    const fs::path sections = out / "runs" / "tiny-token-lua" / "sections.json";
    ASSERT_TRUE(fs::is_regular_file(sections));
    const std::string written = read_text(sections);
    const nlohmann::json j = nlohmann::json::parse(written);
    EXPECT_EQ(j.at("format"), "lockbench-sections");
    EXPECT_FALSE(j.at("sections").empty());
    EXPECT_FALSE(j.at("clock").at("offset_ns").is_null());

    fs::remove(sections);
    EXPECT_EQ(run({"check", out.string()}).exit_code(), 0);
    EXPECT_FALSE(fs::exists(sections));  // check alone writes nothing
    const Result w = run({"check", out.string(), "--write"});
    EXPECT_EQ(w.exit_code(), 0) << w.describe();
    EXPECT_EQ(read_text(sections), written);

    fs::remove(sections);
    nlohmann::json summary = nlohmann::json::parse(read_text(out / "summary.json"));
    summary["runs"][0]["safety"]["lost_updates"] = 99;
    write_text(out / "summary.json", summary.dump());
    const Result differs = run({"check", out.string(), "--write"});
    EXPECT_EQ(differs.exit_code(), 1) << differs.describe();
    EXPECT_NE(differs.out.find("nothing written"), std::string::npos) << differs.describe();
    EXPECT_FALSE(fs::exists(sections));
}

TEST_F(CliTest, CheckRefusesADamagedStoreLogNamingTheLine) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    ASSERT_EQ(run({"run", file.string(), "--out", out.string(), "--backend", "sim"}).exit_code(), 0);
    const fs::path store = out / "runs" / "tiny-token-lua" / "store.jsonl";
    const std::string good = read_text(store);
    auto lines = lines_of(good);
    ASSERT_GE(lines.size(), 6u);

    lines.erase(lines.begin() + 4);  // a gap: seq 5 is missing
    std::string gap;
    for (const auto& l : lines) gap += l + "\n";
    write_text(store, gap);
    Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 2) << c.describe();
    EXPECT_EQ(lines_of(c.err).size(), 1u) << c.describe();
    EXPECT_NE(c.err.find(store.string() + ":5: seq 6 where 5 was due"), std::string::npos) << c.describe();

    write_text(store, "");  // emptied: the histories say the store answered their reads
    c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 2) << c.describe();
    EXPECT_EQ(lines_of(c.err).size(), 1u) << c.describe();
    EXPECT_NE(c.err.find(store.string() + " has no enter of it"), std::string::npos) << c.describe();

    write_text(store, good);
    const fs::path record = out / "runs" / "tiny-token-lua" / "run.json";
    const std::string good_record = read_text(record);
    write_text(record, "garbage");
    c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 2) << c.describe();
    EXPECT_NE(c.err.find("run.json"), std::string::npos) << c.describe();

    // A record the histories load from (final counter, clients) that lacks a field the summary needs.
    nlohmann::json nameless = nlohmann::json::parse(good_record);
    nameless.erase("name");
    write_text(record, nameless.dump());
    c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 2) << c.describe();
    EXPECT_EQ(lines_of(c.err).size(), 1u) << c.describe();
    EXPECT_NE(c.err.find(record.string() + ": not a lockbench run record"), std::string::npos) << c.describe();
    EXPECT_NE(c.err.find("'name'"), std::string::npos) << c.describe();
}

void expect_member(const nlohmann::json& j, const std::string& path, const std::string& key) {
    EXPECT_TRUE(j.is_object() && j.contains(key)) << "summary.json: " << path << "." << key << " missing";
}

void expect_percentiles(const nlohmann::json& j, const std::string& path) {
    ASSERT_TRUE(j.is_object()) << path;
    for (const char* k : {"p50", "p90", "p99", "p999", "max"}) {
        expect_member(j, path, k);
        if (j.contains(k)) {
            EXPECT_TRUE(j.at(k).is_number()) << path << "." << k;
        }
    }
}

TEST_F(CliTest, RunThenCheckRealResults) {
    const fs::path file = write_file("tiny.json", tiny_token_lua);
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string()});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_NE(r.out.find("tiny-token-lua"), std::string::npos) << r.describe();
    ASSERT_TRUE(fs::exists(out / "summary.json")) << r.describe();

    const nlohmann::json summary = nlohmann::json::parse(read_text(out / "summary.json"), nullptr, false);
    ASSERT_FALSE(summary.is_discarded()) << "summary.json is not JSON";
    ASSERT_TRUE(summary.contains("runs") && summary["runs"].is_array() && summary["runs"].size() == 1) << summary.dump(2);
    const nlohmann::json& run0 = summary["runs"][0];
    EXPECT_EQ(run0.value("name", ""), "tiny-token-lua");
    EXPECT_EQ(run0.value("algorithm", ""), "token-lua");
    expect_member(run0, "runs[0]", "params");
    EXPECT_TRUE(run0.contains("params") && run0["params"].is_object() && run0["params"].contains("ttl_ms"));
    expect_member(run0, "runs[0]", "seed");
    EXPECT_TRUE(run0.contains("seed") && run0["seed"].is_number_integer());
    for (const auto& [group, keys] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"ops", {"acquire_attempts", "acquired", "released", "sections_completed"}},
             {"safety", {"mutual_exclusion_violations", "lost_updates", "lost_update_share", "stale_writes_accepted",
                         "stale_writes_rejected", "foreign_releases"}},
             {"availability", {"unavailable_ms", "longest_unavailable_ms"}}}) {
        expect_member(run0, "runs[0]", group);
        if (!run0.contains(group)) continue;
        for (const auto& k : keys) {
            expect_member(run0[group], "runs[0]." + group, k);
            if (run0[group].contains(k)) {
                EXPECT_TRUE(run0[group][k].is_number()) << group << "." << k;
            }
        }
    }
    EXPECT_GE(run0["ops"].value("sections_completed", 0), 1);
    expect_member(run0, "runs[0]", "latency_ms");
    if (run0.contains("latency_ms")) {
        for (const char* k : {"acquire", "release"}) {
            expect_member(run0["latency_ms"], "runs[0].latency_ms", k);
            if (run0["latency_ms"].contains(k)) expect_percentiles(run0["latency_ms"][k], std::string("latency_ms.") + k);
        }
    }
    expect_member(run0, "runs[0]", "witnesses");
    EXPECT_TRUE(run0.contains("witnesses") && run0["witnesses"].is_array());

    const Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 0) << c.describe();
    EXPECT_NE(c.out.find("tiny-token-lua"), std::string::npos) << c.describe();
    EXPECT_NE(c.out.find("held"), std::string::npos) << c.describe();
    EXPECT_EQ(c.out.find("NOT HELD"), std::string::npos) << c.describe();
}

TEST_F(CliTest, ExpectationNotHeldExits1) {
    const fs::path file = write_file(
        "greedy.json",
        scenario(2, 300,
                 R"([{"algorithm": "token-lua", "name": "greedy", "expect": {"sections_completed": ">= 1000000"}}])"));
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code(), 1) << r.describe();
    EXPECT_NE(r.out.find("greedy"), std::string::npos) << r.describe();
    EXPECT_NE(r.out.find("NOT HELD"), std::string::npos) << r.describe();
    EXPECT_TRUE(fs::exists(out / "summary.json")) << "a result that misses its expectation is still a result";

    const Result c = run({"check", out.string()});
    EXPECT_EQ(c.exit_code(), 1) << c.describe();
    EXPECT_NE(c.out.find("NOT HELD"), std::string::npos) << c.describe();
}

// The row's verdict word stands apart from whether the expectations held: a lease shorter than
// the section gives two holders, which this run expects (simulated: the same every time).
TEST_F(CliTest, TheRowSaysTheVerdictWordBesideTheExpectations) {
    const fs::path file = write_file(
        "short-lease.json",
        R"({"name": "cli-test", "seed": 7, "workload": {"clients": 2, "duration_ms": 300, "work_ms": {"uniform": [20, 30]},
            "retry_ms": {"uniform": [1, 3]}}, "runs": [{"algorithm": "setnx", "name": "short-lease",
            "params": {"ttl_ms": 5}, "expect": {"mutual_exclusion_violations": ">= 1"}}]})");
    const fs::path out = dir() / "out";
    const Result r = run({"run", file.string(), "--out", out.string(), "--backend", "sim"});
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    const auto lines = lines_of(r.out);
    ASSERT_GE(lines.size(), 2u) << r.describe();
    EXPECT_NE(lines[0].find("  verdict "), std::string::npos) << r.describe();
    const std::regex row(R"(^short-lease .*  2 holders +  held$)");
    EXPECT_TRUE(std::regex_search(lines[1], row)) << r.describe();
}

// ---- 5. list --------------------------------------------------------------------------------

TEST_F(CliTest, ListShowsAlgorithmsAndParameters) {
    const Result r = run({"list", "--all"});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const std::map<std::string, std::vector<std::string>> expected = {
        {"setnx", {"ttl_ms", "expiry", "value", "release"}},
        {"getset", {"ttl_ms"}},
        {"token-lua", {"ttl_ms", "fence", "wait_replicas", "wait_timeout_ms"}},
        {"redlock", {"ttl_ms", "node_timeout_ms", "drift_factor", "drift_ms", "check_validity"}},
        {"reentrant", {"lease_ms", "watchdog", "depth"}},
    };
    // Under "algorithms", each algorithm starts a line indented by two; its parameters follow,
    // indented further, until the next. The section ends at the next unindented line ("locks").
    std::map<std::string, std::string> section;
    std::string current;
    bool in_algorithms = false;
    for (const auto& line : lines_of(r.out)) {
        if (!line.empty() && line[0] != ' ') {
            in_algorithms = line.rfind("algorithms", 0) == 0;
            current.clear();
            continue;
        }
        if (!in_algorithms) continue;
        if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
            current.clear();
            for (const auto& [name, _] : expected)
                if (line.rfind("  " + name + " ", 0) == 0) current = name;
            continue;
        }
        if (!current.empty()) section[current] += line + "\n";
    }
    for (const auto& [name, params] : expected) {
        ASSERT_TRUE(section.contains(name)) << "no line for " << name << "\n" << r.describe();
        for (const auto& p : params)
            EXPECT_NE(section[name].find("      " + p + " = "), std::string::npos)
                << name << ": parameter " << p << " not listed\n" << r.describe();
    }
}

// Without --all, the whole catalog on one screen: every lock file's and every case file's name,
// within 50 lines.
TEST_F(CliTest, ListNamesEveryLockAndCaseOnOneScreen) {
    const Result r = run({"list"});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    const auto lines = lines_of(r.out);
    EXPECT_LE(lines.size(), 50u) << r.describe();
    std::set<std::string> words;  // the names after the algorithms (some locks are named as one)
    bool named = false;
    for (const auto& line : lines) {
        named = named || line.rfind("locks (", 0) == 0;
        if (!named) continue;
        std::istringstream in(line);
        for (std::string w; in >> w;) words.insert(w.back() == ',' ? w.substr(0, w.size() - 1) : w);
    }
    int files = 0;
    for (const char* folder : {"locks", "scenarios"})
        for (const auto& e : fs::directory_iterator(fs::path(LOCKBENCH_SOURCE_DIR) / folder)) {
            if (e.path().extension() != ".json") continue;
            ++files;
            EXPECT_TRUE(words.contains(e.path().stem().string())) << e.path().stem() << " not named\n" << r.describe();
        }
    EXPECT_GT(files, 50);
    EXPECT_EQ(r.out.find("ttl_ms = "), std::string::npos) << "parameters are --all's\n" << r.describe();
}

// ---- 6. help: the manual's pages, and every --help naming its page --------------------------

const fs::path kSourceDir = LOCKBENCH_SOURCE_DIR;
constexpr std::size_t kTerminalLines = 50;  // a --help longer than this scrolls off a terminal
constexpr std::size_t kTerminalColumns = 100;  // and a line wider than this wraps in one

std::size_t widest_line(const std::string& text) {
    std::size_t widest = 0;
    for (const auto& line : lines_of(text)) widest = std::max(widest, line.size());
    return widest;
}

// The subcommands `lockbench --help` lists: under "Subcommands:", each line a name (indented by
// two) and its description.
std::vector<std::string> listed_subcommands(const std::string& help) {
    std::vector<std::string> subs;
    bool in_list = false;
    for (const auto& line : lines_of(help)) {
        if (line == "Subcommands:") {
            in_list = true;
            continue;
        }
        if (!in_list) continue;
        if (!line.starts_with("  ")) break;
        if (line.size() > 2 && line[2] != ' ') subs.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
    return subs;
}

// The pages of the manual in the source tree: docs/*.md.
std::vector<fs::path> manual_pages() {
    std::vector<fs::path> pages;
    for (const auto& e : fs::directory_iterator(kSourceDir / "docs"))
        if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back(e.path());
    std::ranges::sort(pages);
    return pages;
}

std::string last_nonempty_line(const std::string& text) {
    const auto lines = lines_of(text);
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (!it->empty()) return *it;
    return "";
}

TEST_F(CliTest, EveryListedSubcommandsHelpFitsATerminalAndNamesItsPage) {
    const Result top = run({"--help"});
    ASSERT_EQ(top.exit_code(), 0) << top.describe();
    EXPECT_LE(lines_of(top.out).size(), kTerminalLines) << top.describe();
    EXPECT_LE(widest_line(top.out), kTerminalColumns) << top.describe();
    EXPECT_NE(lines_of(top.out).at(0).find("ZooKeeper"), std::string::npos) << "the description names all services\n"
                                                                           << top.describe();
    EXPECT_NE(last_nonempty_line(top.out).find("lockbench help"), std::string::npos) << top.describe();
    const std::vector<std::string> subs = listed_subcommands(top.out);
    ASSERT_GE(subs.size(), 10u) << top.describe();
    EXPECT_NE(std::ranges::find(subs, "help"), subs.end()) << top.describe();
    for (const std::string& sub : subs) {
        SCOPED_TRACE("lockbench " + sub + " --help");
        const Result r = run({sub, "--help"});
        EXPECT_EQ(r.exit_code(), 0) << r.describe();
        EXPECT_LE(lines_of(r.out).size(), kTerminalLines) << r.describe();
        EXPECT_LE(widest_line(r.out), kTerminalColumns) << r.describe();
        // It ends naming its page, which exists; `help SUB` points at the same page.
        std::smatch m;
        const std::string footer = last_nonempty_line(r.out);
        ASSERT_TRUE(std::regex_match(footer, m, std::regex(R"(Manual: (docs/[A-Za-z0-9_-]+\.md) \(lockbench help )" + sub + R"(\))")))
            << "no footer naming its page\n" << r.describe();
        const fs::path page = kSourceDir / m[1].str();
        EXPECT_TRUE(fs::is_regular_file(page)) << page << " does not exist\n" << r.describe();
        const Result h = run({"help", sub});
        EXPECT_EQ(h.exit_code(), 0) << h.describe();
        EXPECT_NE(h.out.find(page.string()), std::string::npos) << "should name " << page << "\n" << h.describe();
    }
}

TEST_F(CliTest, HelpNamesEveryPageOfTheManualAndItsSections) {
    const Result r = run({"help"});
    ASSERT_EQ(r.exit_code(), 0) << r.describe();
    EXPECT_LE(lines_of(r.out).size(), kTerminalLines) << r.describe();
    // Every page it names exists ...
    const std::regex named(R"(docs/[A-Za-z0-9_-]+\.md)");
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), named); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(fs::is_regular_file(kSourceDir / it->str())) << it->str() << " does not exist\n" << r.describe();
    // ... and every page there has a topic, its stem: a line of its own naming the page.
    const auto pages = manual_pages();
    ASSERT_FALSE(pages.empty()) << kSourceDir / "docs";
    const auto lines = lines_of(r.out);
    for (const fs::path& page : pages) {
        const std::string topic = page.stem().string();
        SCOPED_TRACE("topic " + topic);
        const std::string file = "docs/" + page.filename().string();
        EXPECT_TRUE(std::ranges::any_of(lines, [&](const std::string& l) {
            return l.starts_with("  " + topic + " ") && l.find(" " + file + " ") != std::string::npos;
        })) << "no line for " << file << "\n" << r.describe();
        // `help TOPIC`: the page's path and its headings, not the page.
        const Result h = run({"help", topic});
        EXPECT_EQ(h.exit_code(), 0) << h.describe();
        EXPECT_TRUE(h.err.empty()) << h.describe();
        EXPECT_NE(h.out.find(page.string()), std::string::npos) << h.describe();
        const std::string text = read_text(page);
        const auto page_lines = lines_of(text);
        const auto hashes = std::ranges::count_if(page_lines, [](const std::string& l) { return l.starts_with("#"); });
        EXPECT_LE(lines_of(h.out).size(), static_cast<std::size_t>(hashes) + 2) << "more than the headings\n" << h.describe();
        if (!page_lines.empty() && page_lines.front().starts_with("# ")) {
            EXPECT_NE(h.out.find(page_lines.front()), std::string::npos) << "no title\n" << h.describe();
        }
    }
}

TEST_F(CliTest, AnUnknownHelpTopicIsOneLineNamingTheTopicsAndExit2) {
    const Result r = run({"help", "no-such-topic"});
    expect_one_line_error(r, "no-such-topic");
    EXPECT_TRUE(r.out.empty()) << r.describe();
    for (const fs::path& page : manual_pages())
        EXPECT_NE(r.err.find(page.stem().string()), std::string::npos) << "should name " << page.stem() << "\n"
                                                                       << r.describe();
}

// ---- 7. Nothing outlives the tool -----------------------------------------------------------

class LifetimeTest : public CliTest {
protected:
    void SetUp() override {
        CliTest::SetUp();
        // Orphans of a killed lockbench come to us, so we can reap them instead of leaving
        // zombies to a PID 1 that may not.
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    }
    void TearDown() override {
        // Whatever the verdict, leave nothing running.
        for (const auto& p : seen_)
            if (!gone(p)) ::kill(p.pid, SIGKILL);
        for (int i = 0; i < 50; ++i) {
            reap_children();
            if (std::all_of(seen_.begin(), seen_.end(), gone)) break;
            std::this_thread::sleep_for(20ms);
        }
        reap_children();
        prctl(PR_SET_CHILD_SUBREAPER, 0);
        CliTest::TearDown();
    }

    // Starts a 5 s redlock run (5 lock nodes + store, 2 clients) and waits (up to 10 s) until
    // all its redis-server children and its client processes exist.
    std::unique_ptr<Tool> start_busy_run(const std::string& runs = R"([{"algorithm": "redlock", "name": "busy-redlock"}])") {
        const fs::path file = write_file("busy.json", scenario(2, 5000, runs));
        auto tool = start({"run", file.string(), "--out", (dir() / "out").string()});
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        std::vector<ProcInfo> kids;
        for (;;) {
            kids = children_of(tool->pid());
            const auto redis = std::count_if(kids.begin(), kids.end(),
                                             [](const ProcInfo& p) { return p.comm.starts_with("redis-server"); });
            const auto clients =
                std::count_if(kids.begin(), kids.end(), [](const ProcInfo& p) { return p.comm == "lockbench"; });
            if (redis >= 6 && clients >= 2) break;
            if (!tool->running() || std::chrono::steady_clock::now() >= deadline) {
                ADD_FAILURE() << "lockbench never had 6 redis-server and 2 client children; it had:\n"
                              << describe(kids) << tool->finish(1s).describe();
                return nullptr;
            }
            std::this_thread::sleep_for(20ms);
        }
        for (const auto& p : kids)
            if (p.comm.starts_with("redis-server") || p.comm == "lockbench") seen_.push_back(p);
        return tool;
    }

    // Starts a 10 s run of `service`'s lock on three servers (2 clients) and waits (up to 30
    // s: three JVMs start slowly on two cores) until its servers (`server_comm` processes),
    // the store, both clients and their adapters exist.
    std::unique_ptr<Tool> start_service_run(const std::string& service, const std::string& adapter,
                                            const std::string& server_comm) {
        const std::string runs = R"([{"algorithm": "external", "name": "busy", "service": ")" + service +
                                 R"(", "nodes": 3, "command": ["/usr/bin/python3", ")" + adapter +
                                 R"("], "params": {"ttl_ms": 2000}}])";
        const fs::path file = write_file("busy.json", scenario(2, 10000, runs));
        auto tool = start({"run", file.string(), "--out", (dir() / "out").string()});
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        const auto count = [](const std::vector<ProcInfo>& kids, const std::string& comm) {
            return std::count_if(kids.begin(), kids.end(), [&](const ProcInfo& p) { return p.comm.starts_with(comm); });
        };
        std::vector<ProcInfo> kids;
        for (;;) {
            kids = children_of(tool->pid());
            long adapters = 0;
            for (const auto& k : kids)
                if (k.comm == "lockbench") adapters += static_cast<long>(children_of(k.pid).size());
            if (count(kids, server_comm) >= 3 && count(kids, "redis-server") >= 1 && count(kids, "lockbench") >= 2 &&
                adapters >= 2)
                break;
            if (!tool->running() || std::chrono::steady_clock::now() >= deadline) {
                ADD_FAILURE() << "lockbench never had 3 " << server_comm << ", the store and 2 clients; it had:\n"
                              << describe(kids) << tool->finish(1s).describe();
                return nullptr;
            }
            std::this_thread::sleep_for(20ms);
        }
        for (const auto& p : kids) seen_.push_back(p);
        for (const auto& client : kids)  // each client's adapter too
            for (const auto& p : children_of(client.pid)) seen_.push_back(p);
        return tool;
    }

    // Polls (up to 5 s) until every process seen is gone; fails listing the survivors.
    void expect_all_gone() {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        std::vector<ProcInfo> alive;
        for (;;) {
            reap_children();
            alive.clear();
            for (const auto& p : seen_)
                if (!gone(p)) alive.push_back(read_proc(p.pid).value_or(p));
            if (alive.empty() || std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(20ms);
        }
        EXPECT_TRUE(alive.empty()) << "still running 5 s after lockbench ended:\n" << describe(alive);
    }

    std::vector<ProcInfo> seen_;
};

TEST_F(LifetimeTest, SigkillLeavesNoRedisServerOrClient) {
    auto tool = start_busy_run();
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json"));
}

// `matrix --jobs 2`: two repetitions side by side, each a lockbench of its own with its
// servers and clients. A SIGKILL of the matrix takes them all: the repetitions die with it,
// and what they started with them.
// A command that ends well reaps its cgroup's guard itself: nothing of it is left to whoever
// adopts orphans (this test, a subreaper here; before, the guard came to it as a zombie).
TEST_F(LifetimeTest, ACommandThatEndsWellLeavesNoGuardBehind) {
    // A guard already here is an earlier test's, whose lockbench was killed: its guard is
    // orphaned by design (and comes here, this process being the subreaper). Only a new one counts.
    const auto guards = [] {
        std::set<pid_t> pids;
        for (const auto& p : children_of(::getpid()))
            if (p.comm == "lockbench-cg") pids.insert(p.pid);
        return pids;
    };
    const std::set<pid_t> before = guards();
    const Result r = start({"list"})->finish(30s);
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    const auto guard_left = [&] {
        return std::ranges::any_of(guards(), [&](pid_t pid) { return !before.contains(pid); });
    };
    // An orphaned guard comes here the moment lockbench ends; half a second is ample to see one.
    const auto until = std::chrono::steady_clock::now() + 500ms;
    bool left = false;
    while (!(left = guard_left()) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(left) << "a lockbench-cg, alive or a zombie, came to this process";
}

TEST_F(LifetimeTest, SigkillOfAMatrixRunningRepetitionsSideBySideLeavesNothing) {
    const fs::path file = write_file("busy.json", scenario(2, 5000, R"([{"algorithm": "redlock", "name": "busy-redlock"},
        {"algorithm": "token-lua", "name": "busy-token"}])"));
    auto tool = start({"matrix", file.string(), "--jobs", "2", "--out", (dir() / "out").string()});
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::vector<ProcInfo> all;
    for (;;) {
        all.clear();
        size_t redis = 0, clients = 0;
        std::vector<ProcInfo> reps = children_of(tool->pid());
        std::erase_if(reps, [](const ProcInfo& p) { return p.comm == "lockbench-cg"; });  // its cgroup's guard
        for (const auto& rep : reps) {
            all.push_back(rep);
            for (const auto& p : children_of(rep.pid)) {
                all.push_back(p);
                redis += p.comm.starts_with("redis-server") ? 1 : 0;
                clients += p.comm == "lockbench" ? 1 : 0;
            }
        }
        // redlock: 5 nodes and the store; token-lua: a node and the store; two clients each.
        if (reps.size() == 2 && redis >= 8 && clients >= 4) break;
        if (!tool->running() || std::chrono::steady_clock::now() >= deadline) {
            ADD_FAILURE() << "the matrix never ran both repetitions at once; it had:\n" << describe(all) << tool->finish(1s).describe();
            return;
        }
        std::this_thread::sleep_for(20ms);
    }
    seen_ = all;
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    tool->finish(10s);
    expect_all_gone();
}

TEST_F(LifetimeTest, SigintInTheMiddleOfFaultsLeavesNothingStoppedOrRunning) {
    // Client 0 is stopped (SIGSTOP) from the start; client 1's links to two nodes are held.
    auto tool = start_busy_run(R"([{"algorithm": "redlock", "name": "busy-redlock", "faults": [
        {"fault": "pause", "at_ms": 0, "client": 0, "duration_ms": 4500},
        {"fault": "link", "at_ms": 0, "client": 1, "mode": "hold", "nodes": [0, 1]}]}])");
    ASSERT_TRUE(tool);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    bool stopped = false;
    while (!stopped && std::chrono::steady_clock::now() < deadline) {
        for (const auto& p : children_of(tool->pid()))
            if (p.comm == "lockbench" && p.state == 'T') stopped = true;
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(stopped) << "client 0 should be stopped by the pause fault";
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) || (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0)) << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json")) << r.describe();
}

TEST_F(LifetimeTest, SigkillLeavesNoZooKeeperJvmNorAdapter) {
    auto tool = start_service_run("zookeeper", "adapters/kazoo-lock/adapter.py", "java");
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    tool->finish(10s);
    expect_all_gone();
}

TEST_F(LifetimeTest, SigintLeavesNoEtcdMemberNorAdapter) {
    auto tool = start_service_run("etcd", "adapters/etcd-lock/adapter.py", "etcd");
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) || (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0)) << r.describe();
    expect_all_gone();
}

TEST_F(LifetimeTest, SigintLeavesNoRedisServerOrClient) {
    auto tool = start_busy_run();
    ASSERT_TRUE(tool);
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    const Result r = tool->finish(10s);
    EXPECT_TRUE(WIFSIGNALED(r.status) || (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0))
        << "Ctrl-C should not end in success\n" << r.describe();
    expect_all_gone();
    EXPECT_FALSE(fs::exists(dir() / "out" / "summary.json")) << r.describe();
}

// An adapter that starts a program of its own, as a `java` or `go` launcher does: here a
// shell that starts `sleep 1000`, then becomes the redis-py adapter (or a broken one). The
// sleep is in its client's process group, which no parent-death signal reaches: it must die
// with the run all the same, however the run or the adapter ends.
class AdapterChildTest : public LifetimeTest {
protected:
    // Every process lockbench starts inherits this, the sleeps too: they are told apart from
    // other tests' by it.
    std::string marker() const { return "LOCKBENCH_TEST_MARKER=" + dir().string(); }

    // `child`: how the shell starts its sleep ("setsid sleep 1000 &": a daemon, out of the group).
    std::unique_ptr<Tool> start_run(int duration_ms, const std::string& adapter = "adapters/redis_py_lock.py",
                                    const std::string& faults = "[]", const std::string& child = "sleep 1000 &") {
        const std::string runs = R"([{"algorithm": "external", "name": "launcher", "command": ["/bin/sh", "-c",
            ")" + child + R"( exec /usr/bin/python3 )" + adapter + R"("], "faults": )" + faults + "}]";
        const fs::path file = write_file("launcher.json", scenario(2, duration_ms, runs));
        ToolOptions opts;
        opts.set_env.emplace("LOCKBENCH_TEST_MARKER", dir().string());
        return start({"run", file.string(), "--out", (dir() / "out").string()}, opts);
    }

    // The live processes named `comm` that carry our marker (and `also`, if given).
    std::vector<ProcInfo> marked(const std::string& comm, const std::string& also = "") {
        std::vector<ProcInfo> found;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator("/proc", ec)) {
            const std::string name = e.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos) continue;
            const auto p = read_proc(static_cast<pid_t>(std::stol(name)));
            if (!p || p->comm != comm || gone(*p)) continue;
            std::string env = read_text(e.path() / "environ");
            std::replace(env.begin(), env.end(), '\0', '\n');
            const std::vector<std::string> vars = lines_of(env);
            const auto has = [&](const std::string& v) { return std::find(vars.begin(), vars.end(), v) != vars.end(); };
            if (has(marker()) && (also.empty() || has(also))) found.push_back(*p);
        }
        return found;
    }

    // Waits (up to 20 s) until both clients' adapters are up, with their sleeps.
    bool wait_for_both_adapters(Tool& tool) {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (tool.running() && std::chrono::steady_clock::now() < deadline) {
            if (!marked("python3", "LOCKBENCH_CLIENT=0").empty() && !marked("python3", "LOCKBENCH_CLIENT=1").empty() &&
                !marked("sleep", "LOCKBENCH_CLIENT=0").empty() && !marked("sleep", "LOCKBENCH_CLIENT=1").empty())
                return true;
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }

    // No sleep of ours left, 5 s after lockbench ended (TearDown kills any left).
    void expect_no_sleep_left() {
        std::vector<ProcInfo> left;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        for (;;) {
            reap_children();
            left = marked("sleep");
            if (left.empty() || std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(20ms);
        }
        seen_.insert(seen_.end(), left.begin(), left.end());
        EXPECT_TRUE(left.empty()) << "an adapter's own child outlived the run:\n" << describe(left);
    }
};

TEST_F(AdapterChildTest, ARunThatEndsWellLeavesNoAdaptersChildBehind) {
    const Result r = start_run(500)->finish();
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    expect_no_sleep_left();
}

// A daemon (setsid: out of its client's group, which no group kill reaches) is found all the
// same, lockbench being the subreaper of everything it starts: none left after the run ends,
// nor after SIGTERM (before, 3 of 3 were left running).
TEST_F(AdapterChildTest, AnAdaptersDaemonThatLeftItsGroupDoesNotOutliveTheRun) {
    const Result r = start_run(500, "adapters/redis_py_lock.py", "[]", "setsid sleep 1000 &")->finish();
    EXPECT_EQ(r.exit_code(), 0) << r.describe();
    expect_no_sleep_left();
    auto tool = start_run(10000, "adapters/redis_py_lock.py", "[]", "setsid sleep 1000 &");
    ASSERT_TRUE(wait_for_both_adapters(*tool)) << tool->finish(1s).describe();
    ASSERT_EQ(::kill(tool->pid(), SIGTERM), 0);
    tool->finish(10s);
    expect_no_sleep_left();
}

// Even SIGKILL of lockbench, which no handler sees, leaves no daemon running: lockbench and all
// it starts are in a cgroup of their own, whose guard ends what is left once lockbench is gone
// (before: the daemon, re-parented away from the killed subreaper, ran on; 1 of 1 left).
TEST_F(AdapterChildTest, SigkillOfLockbenchLeavesNoDaemonBehind) {
    auto tool = start_run(10000, "adapters/redis_py_lock.py", "[]", "setsid sleep 1000 &");
    ASSERT_TRUE(wait_for_both_adapters(*tool)) << tool->finish(1s).describe();
    const std::string cgroup = read_text("/proc/" + std::to_string(tool->pid()) + "/cgroup");
    const std::string own = "/lockbench-" + std::to_string(tool->pid()) + "\n";
    if (cgroup.find(own) == std::string::npos) {
        ::kill(tool->pid(), SIGKILL);
        tool->finish(10s);
        GTEST_SKIP() << "no cgroup v2 lockbench may write here (its cgroups: " << cgroup
                     << "): a daemon outlives a SIGKILL of lockbench on such a machine";
    }
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    tool->finish(10s);
    expect_no_sleep_left();
    std::string mount;  // where cgroup2 is mounted, to find the folder "0::/..." names
    std::istringstream mounts(read_text("/proc/self/mounts"));
    for (std::string device, point, type, rest; mounts >> device >> point >> type && std::getline(mounts, rest);)
        if (type == "cgroup2") mount = point;
    const std::string line = cgroup.substr(cgroup.find("0::/") + 3);
    const fs::path dir = mount + line.substr(0, line.find('\n'));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (fs::exists(dir) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(fs::exists(dir)) << "the guard removes its cgroup";
}

TEST_F(AdapterChildTest, AnAdapterThatFailsLeavesNoChildBehind) {
    const std::string bad = (fs::path(LOCKBENCH_SOURCE_DIR) / "tests" / "data" / "bad_adapter.py").string();
    const Result r = start_run(500, bad + " crash")->finish();
    EXPECT_EQ(r.exit_code(), 1) << "its clients failed\n" << r.describe();
    expect_no_sleep_left();
}

// Client 0 is paused (its group stopped, its adapter's sleep with it) when lockbench is killed.
TEST_F(AdapterChildTest, SigkillOfLockbenchLeavesNoAdaptersChildBehindEvenPaused) {
    auto tool = start_run(10000, "adapters/redis_py_lock.py",
                          R"([{"fault": "pause", "at_ms": 100, "client": 0, "duration_ms": 9000}])");
    ASSERT_TRUE(wait_for_both_adapters(*tool)) << tool->finish(1s).describe();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    std::vector<ProcInfo> paused;
    while (paused.empty() && std::chrono::steady_clock::now() < deadline) {
        for (const auto& p : marked("sleep", "LOCKBENCH_CLIENT=0"))
            if (p.state == 'T') paused.push_back(p);
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_FALSE(paused.empty()) << "client 0's adapter's sleep was never seen stopped";
    ASSERT_EQ(::kill(tool->pid(), SIGKILL), 0);
    tool->finish(10s);
    expect_no_sleep_left();
}

TEST_F(AdapterChildTest, SigintOfLockbenchLeavesNoAdaptersChildBehind) {
    auto tool = start_run(10000);
    ASSERT_TRUE(wait_for_both_adapters(*tool)) << tool->finish(1s).describe();
    ASSERT_EQ(::kill(tool->pid(), SIGINT), 0);
    tool->finish(10s);
    expect_no_sleep_left();
}

}  // namespace
