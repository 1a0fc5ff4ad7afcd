// The typed records at the file boundaries and the metric table: each record survives its
// trip through JSON unchanged, and the metric table reads the checker's figures it names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "analysis/checker.h"
#include "analysis/metrics.h"
#include "analysis/run_summary.h"
#include "sim/engine/run_record.h"
#include "sim/engine/scenario.h"
#include "sim/harness/matrix_spec.h"
#include "sim/harness/recheck.h"
#include "sim/harness/runner.h"
#include "sim/live/client_spec.h"

using Json = nlohmann::json;
using namespace lockbench;
namespace fs = std::filesystem;

namespace {

const std::string kTinyPause = LOCKBENCH_SOURCE_DIR "/tests/data/tiny-pause.json";

// A CheckResult whose every figure differs from every other, so a row that reads the wrong
// field shows.
CheckResult distinct_figures() {
    CheckResult r;
    r.ops = {10, 4, 3, 2};
    r.safety = {11, 12, 13, 14, 15, 16, 26};
    r.availability.unavailable_ms = 17.5;
    r.availability.longest_unavailable_ms = 18.5;
    r.acquire_ms.max = 24.5;
    r.availability.failover_to_entry_ms = 25.5;
    r.validity = ValidityFigures{19, 20, 21, 22.5, 23.5};
    return r;
}

TEST(MetricTable, EachRowReadsItsOwnFigure) {
    const std::map<std::string, double> expected = {
        {"acquire_attempts", 10}, {"acquired", 4}, {"released", 3}, {"sections_completed", 2},
        {"acquire_success_rate", 0.4}, {"mutual_exclusion_violations", 11}, {"fenced_overlaps", 12},
        {"lost_updates", 13}, {"lost_update_share", 13.0 / 2}, {"stale_writes_accepted", 14}, {"stale_writes_rejected", 15}, {"holder_writes_rejected", 16},
        {"foreign_releases", 26}, {"unavailable_ms", 17.5}, {"longest_unavailable_ms", 18.5},
        {"longest_acquire_ms", 24.5}, {"failover_to_entry_ms", 25.5},
        {"validity_probes", 19}, {"validity_spent_live", 20}, {"validity_gone", 21}, {"validity_understated_ms", 22.5},
        {"validity_overstated_ms", 23.5}};
    const CheckResult r = distinct_figures();
    for (const Metric& m : metrics()) {
        if (!m.of) continue;
        ASSERT_TRUE(expected.contains(std::string(m.name))) << m.name;
        EXPECT_DOUBLE_EQ(m.of(r), expected.at(std::string(m.name))) << m.name;
    }
    for (const auto& [name, _] : expected) EXPECT_NE(find_metric(name), nullptr) << name;
    EXPECT_EQ(find_metric("faults_injected")->of, nullptr);  // the run's record gives it
    EXPECT_EQ(find_metric("no_such_metric"), nullptr);
}

TEST(MetricTable, SummaryGroupsAndTypesFollowTheTable) {
    const Json j = to_json(distinct_figures(), RunHistory{});
    EXPECT_TRUE(j.at("safety").at("foreign_releases").is_number_integer());
    EXPECT_TRUE(j.at("availability").at("unavailable_ms").is_number_float());
    EXPECT_TRUE(j.at("ops").at("acquire_success_rate").is_number_float());
    size_t figures = 0;
    for (const char* group : {"ops", "safety", "availability", "validity"})
        for (const auto& [name, _] : j.at(group).items()) {
            if (name == "windows_ms") continue;
            const Metric* m = find_metric(name);
            ASSERT_NE(m, nullptr) << name;
            EXPECT_EQ(group_name(m->group), group) << name;
            ++figures;
        }
    EXPECT_EQ(figures, metrics().size() - 1);  // every row but faults_injected, which run_summary adds
}

TEST(MetricTable, AnUnknownExpectationListsTheExpectableMetrics) {
    Json s = Json::parse(R"({"name": "case", "runs": [{"algorithm": "setnx", "expect": {"bogus": "== 0"}}]})");
    try {
        parse_scenario(s, "case.json");
        FAIL() << "an unknown metric was accepted";
    } catch (const ScenarioError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "case.json: runs[0].expect.bogus: unknown metric (known: acquire_attempts, acquired, released, "
                  "sections_completed, mutual_exclusion_violations, fenced_overlaps, lost_updates, lost_update_share, "
                  "stale_writes_accepted, stale_writes_rejected, holder_writes_rejected, foreign_releases, unavailable_ms, "
                  "longest_unavailable_ms, longest_acquire_ms, failover_to_entry_ms, faults_injected, validity_probes, validity_spent_live, "
                  "validity_gone, validity_understated_ms, validity_overstated_ms)");
    }
    s["runs"][0]["expect"] = {{"acquire_success_rate", "> 0"}};  // a figure, but not one to expect
    EXPECT_THROW(parse_scenario(s, "case.json"), ScenarioError);
}

TEST(MetricTable, CellsAreFormattedToTheirColumn) {
    EXPECT_EQ(table_cell({"unavail", 9, 0, "ms"}, 12.4), "     12ms");
    EXPECT_EQ(table_cell({"viol/rep", 9, 1}, 2.25), "      2.2");
    EXPECT_EQ(table_header({"viol", 6}), "  viol");
}

RunRecord full_record() {
    const Scenario s = load_scenario(kTinyPause);
    RunRecord r;
    r.name = "token-lua";
    r.algorithm = "token-lua";
    r.params = {{"ttl_ms", 100}};
    r.nodes = 1;
    r.clients = 3;
    r.seed = 18446744073709551615ull;  // the largest seed
    r.scenario = s.name;
    r.failure_class = "gc-pause";
    r.table_row = "lib";
    r.lock_key = s.lock_key;
    r.expect = s.runs.at(0).expect;
    r.workload = s.source.at("workload");
    r.command_timeout_ms = 200;
    r.connect_timeout_ms = 300;
    r.command = {"python3", "adapter.py"};
    r.clients_failed = {{2, "the adapter said nothing"}};
    r.sim_events = 1234;
    r.faults = Json::array({{{"label", "pause"}, {"fired", 1}, {"clients", {0}}}});
    r.faults_injected = 1;
    r.final_counter = 27;
    r.renews_in_background = true;
    return r;
}

TEST(Records, RunRecordRoundTrips) {
    const Json j = to_json(full_record());
    EXPECT_EQ(to_json(run_record_from_json(j)), j);
    EXPECT_EQ(j.at("backend"), "sim");
    EXPECT_EQ(j.at("expect").at(0).at("metric"), "faults_injected");
    EXPECT_EQ(j.at("failure_class"), "gc-pause");
    EXPECT_EQ(j.at("table_row"), "lib");
    EXPECT_EQ(j.at("renews_in_background"), true);
    // A live run with no external library: no command, no failed clients, no simulator; of a
    // scenario outside the verdict table: no failure_class.
    RunRecord live = full_record();
    live.failure_class.reset();
    live.table_row.reset();
    live.command.clear();
    live.clients_failed.clear();
    live.sim_events.reset();
    live.renews_in_background = false;
    const Json lj = to_json(live);
    EXPECT_EQ(lj.at("renews_in_background"), false);  // said either way: an older record lacks it
    for (const char* absent : {"command", "clients_failed", "backend", "sim_events", "failure_class", "table_row"})
        EXPECT_FALSE(lj.contains(absent)) << absent;
    EXPECT_EQ(to_json(run_record_from_json(lj)), lj);
    Json nameless = lj;
    nameless.erase("name");
    EXPECT_THROW(run_record_from_json(nameless), Json::exception);
}

TEST(Records, RunSummaryRoundTrips) {
    RunSummary s;
    s.name = "r";
    s.algorithm = "setnx";
    s.nodes = 1;
    s.clients = 2;
    s.seed = 7;
    s.run_dir = "runs/r";
    s.figures = run_figures(distinct_figures(), RunHistory{});
    s.figures.metrics["faults_injected"] = 2;
    s.clients_failed = {{1, "broke"}};
    s.expectations = {{"lost_updates == 0", 13, false}};
    s.failure_class = "held-replies";
    const Json j = to_json(s);
    EXPECT_EQ(j.at("failure_class"), "held-replies");
    EXPECT_EQ(j.at("ops").at("faults_injected"), 2);
    EXPECT_EQ(j.at("safety").at("lost_updates"), 13);
    EXPECT_EQ(to_json(run_summary_from_json(j)), j);
    EXPECT_EQ(run_summary_from_json(j).metric("foreign_releases"), 26);
    Json no_groups = j;
    no_groups.erase("safety");
    EXPECT_THROW(run_summary_from_json(no_groups), Json::exception);
}

TEST(Records, ClientSpecRoundTrips) {
    ClientSpec c;
    c.run = {{"algorithm", "setnx"}, {"workload", {{"clients", 2}}}};
    c.lock_key = "k";
    c.client = 3;
    c.seed = 99;
    c.lock_ports = {7001, 7002};
    c.store_port = 7100;
    c.start_barrier = "/tmp/b";
    c.control_socket = "/tmp/s";
    c.armed = {"before_write"};
    c.history = "/tmp/h.jsonl";
    c.project_dir = "/p";
    c.discovery = SentinelPorts{{26379}, {{"127.0.0.1:7009", 7001}}};
    const Json j = to_json(c);
    EXPECT_EQ(to_json(client_spec_from_json(j)), j);
    EXPECT_EQ(j.at("address_map").at("127.0.0.1:7009"), 7001);
    ClientSpec pre;
    pre.preflight = true;
    pre.run = c.run;
    pre.lock_key = c.lock_key;
    pre.lock_ports = c.lock_ports;
    pre.adapter_stderr = "/tmp/a.log";
    const Json pj = to_json(pre);
    EXPECT_FALSE(pj.contains("client"));  // a preflight starts the adapter only
    EXPECT_EQ(to_json(client_spec_from_json(pj)), pj);
}

// A live client is handed its own run, never the scenario: the run's source stands alone, with
// the scenario's workload, timeouts and faults filled in, and parses to the same run.
TEST(Records, ARunsSourceStandsAlone) {
    const Scenario s = parse_scenario(Json::parse(R"({"name": "x", "client": {"command_timeout_ms": 70},
        "workload": {"clients": 3, "duration_ms": 900},
        "faults": [{"fault": "pause", "point": "before_write", "duration_ms": 100}],
        "runs": [{"algorithm": "token-lua", "params": {"ttl_ms": 300}},
                 {"algorithm": "setnx", "workload": {"clients": 2, "duration_ms": 500}, "faults": []}]})"), "x.json");
    const RunSpec a = parse_standalone_run(s.runs[0].source, "spec");
    EXPECT_EQ(a.name, s.runs[0].name);
    EXPECT_EQ(a.workload.clients, 3);
    EXPECT_EQ(a.timeouts.command_ms, 70);
    EXPECT_EQ(a.faults.size(), 1u);
    EXPECT_EQ(a.params.json(), s.runs[0].params.json());
    const RunSpec b = parse_standalone_run(s.runs[1].source, "spec");
    EXPECT_EQ(b.workload.clients, 2);
    EXPECT_EQ(b.workload.duration_ms, 500);
    EXPECT_EQ(b.timeouts.command_ms, 70);
    EXPECT_TRUE(b.faults.empty());
}

TEST(Records, MatrixSpecRoundTripsWithItsId) {
    const MatrixSpec m = matrix_spec({kTinyPause}, {}, 2);
    ASSERT_EQ(m.cell_count(), 2u);
    const MatrixSpec back = matrix_spec_from_json(to_json(m), m.id);
    EXPECT_EQ(to_json(back), to_json(m));
    EXPECT_EQ(spec_id(back), m.id);
    const MatrixSpec sim = simulated(m);
    EXPECT_NE(sim.id, m.id);  // a simulated tree never mixes with a live one
    EXPECT_EQ(to_json(sim).at("backend"), "sim");
    EXPECT_EQ(to_json(matrix_spec_from_json(to_json(sim), sim.id)), to_json(sim));

    const MatrixSpec sweep = sweep_spec(kTinyPause, parse_sweep_param("faults.0.duration_ms=100..300"), 3, {}, 1);
    ASSERT_TRUE(sweep.sweep.has_value());
    EXPECT_EQ(sweep.sweep->values, Json::parse("[100, 200, 300]"));
    EXPECT_EQ(sweep.cells.at(2).step, 1);
    const MatrixSpec sweep_back = matrix_spec_from_json(to_json(sweep), sweep.id);
    EXPECT_EQ(to_json(sweep_back), to_json(sweep));
    EXPECT_EQ(spec_id(sweep_back), sweep.id);
}

// A repetition is handed its cell and its cell's run alone: it parses one run, not its case's
// every lock, and the run it parses is the one the spec's cell names.
TEST(Records, ARepetitionIsHandedItsOwnRunAlone) {
    const MatrixSpec m = matrix_spec({kTinyPause}, {}, 2);
    ASSERT_EQ(m.cell_count(), 2u);
    for (const MatrixCell& cell : m.cells) {
        const RepetitionPart part = repetition_part(m, cell, 1);
        ASSERT_EQ(part.scenario.source.at("runs").size(), 1u);
        const Scenario s = parse_scenario(part.scenario.source, part.scenario.file);
        ASSERT_EQ(s.runs.size(), 1u);
        EXPECT_EQ(s.runs[0].name, cell.run);
        EXPECT_EQ(s.runs[0].params.json(), cell.params);
        const RepetitionPart back = repetition_part_from_json(to_json(part));
        EXPECT_EQ(to_json(back), to_json(part));
        EXPECT_EQ(back.rep, 1);
        EXPECT_FALSE(back.simulated);
    }
    EXPECT_TRUE(repetition_part(simulated(m), m.cells[0], 0).simulated);
    // A tree an older lockbench made names no run's place: the same spec (it resumes), whose
    // cells this lockbench runs from its own spec, never from that header.
    Json older = to_json(m);
    for (Json& c : older.at("cells")) c.erase("run_index");
    const MatrixSpec read = matrix_spec_from_json(older, m.id);
    EXPECT_EQ(spec_id(read), m.id);
    EXPECT_FALSE(to_json(read).at("cells").at(0).contains("run_index"));
    EXPECT_THROW(repetition_part(read, read.cells[0], 0), std::runtime_error);
}

// The report trusts a run's figures without the checker only while the run is as its checker
// left it: this checker, the same files, the figures summary.json holds. Each change alone
// sends it back through the checker (the simulator makes the run: no Redis needed).
TEST(Records, ARunIsTrustedAsCheckedOnlyAsItsCheckerLeftIt) {
    const fs::path out = fs::temp_directory_path() / ("lockbench-records-test-" + std::to_string(::getpid()));
    fs::remove_all(out);
    Scenario s = load_scenario(kTinyPause);
    s.runs.resize(1);
    run_scenario(s, {out, std::nullopt, "", false, {}, true});
    const fs::path run_dir = out / "runs" / s.runs[0].name;
    ASSERT_TRUE(checked_as_recorded(out));

    const auto changed = [&](const fs::path& file, const std::function<void(std::string&)>& change) {
        std::string before;
        {
            std::ifstream in(file);
            before.assign(std::istreambuf_iterator<char>(in), {});
        }
        std::string after = before;
        change(after);
        std::ofstream(file, std::ios::trunc) << after;
        const bool trusted = checked_as_recorded(out);
        std::ofstream(file, std::ios::trunc) << before;
        EXPECT_TRUE(checked_as_recorded(out)) << file;  // put back, trusted again
        return trusted;
    };
    const fs::path history = *fs::directory_iterator(run_dir / "history");
    EXPECT_FALSE(changed(history, [](std::string& t) { t += "\n"; }));
    EXPECT_FALSE(changed(run_dir / "store.jsonl", [](std::string& t) { t.pop_back(); }));
    EXPECT_FALSE(changed(run_dir / "sections.json", [](std::string& t) {
        Json j = Json::parse(t);
        j["checked"]["checker"] = "another";
        t = j.dump();
    }));
    EXPECT_FALSE(changed(out / "summary.json", [](std::string& t) {
        Json j = Json::parse(t);
        j["runs"][0]["ops"]["acquired"] = j["runs"][0]["ops"]["acquired"].get<int>() + 1;
        t = j.dump();
    }));
    EXPECT_FALSE(changed(run_dir / "sections.json", [](std::string& t) {  // figures it no longer holds
        Json j = Json::parse(t);
        j["checked"]["run"] = Json::object();
        t = j.dump();
    }));
    fs::remove(history);
    EXPECT_FALSE(checked_as_recorded(out));
    // No history folder at all is not the same as an empty one.
    for (const auto& f : fs::directory_iterator(run_dir / "history")) fs::remove(f.path());
    fs::remove(run_dir / "history");
    EXPECT_FALSE(checked_as_recorded(out));
    fs::remove_all(out);
}

}  // namespace
