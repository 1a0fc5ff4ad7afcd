// The manual's reference tables held to the code (no Redis): the fields of each kind of input
// file, the metric table, the failure classes, the algorithms and their parameters. Each
// table stands in docs/*.md between markers the page does not show:
//
//   <!-- fields: lock -->        a table whose first column names fields in backticks
//   | field | type | ... |       (several to a cell, or dotted: `offers.fencing`)
//   <!-- /fields -->
//
// The code's side is never a list kept beside it: the fields are what the parsers look up
// (sim/engine/fields_read.h) while they read a corpus that reaches every branch — the
// committed locks and cases, the catalog composed into explicit scenarios, and the fixtures
// below for what the catalog does not write; the metrics are analysis/metrics.h's table, the
// algorithms lockimpl's registry (what `lockbench list` prints).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.h"
#include "lockimpl/registry.h"
#include "sim/engine/fields_read.h"
#include "sim/harness/compose.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace lockbench;

namespace {

const fs::path kSource = LOCKBENCH_SOURCE_DIR;

// ---- the manual's side ---------------------------------------------------------------------------

std::string read_page(const std::string& page) {
    std::ifstream in(kSource / page);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) ADD_FAILURE() << page << ": cannot read it";
    return text.str();
}

// What lies between "<!-- MARK -->" and the next "<!-- /END -->" of a page.
std::string marked(const std::string& page, const std::string& mark, const std::string& end) {
    const std::string text = read_page(page);
    const std::string open = "<!-- " + mark + " -->", close = "<!-- /" + end + " -->";
    const size_t from = text.find(open);
    const size_t to = from == std::string::npos ? from : text.find(close, from);
    if (to == std::string::npos) {
        ADD_FAILURE() << page << ": no table marked " << open << " ... " << close;
        return "";
    }
    return text.substr(from + open.size(), to - from - open.size());
}

std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A markdown table's body rows, each its cells, trimmed (the header and the --- line left out).
// No cell of these tables holds a '|'.
std::vector<std::vector<std::string>> table_rows(const std::string& section) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(section);
    bool header = true;
    for (std::string line; std::getline(in, line);) {
        line = trimmed(line);
        if (!line.starts_with("|")) continue;
        if (std::exchange(header, false)) continue;
        if (line.find_first_not_of("|-: ") == std::string::npos) continue;
        std::vector<std::string> cells;
        std::istringstream row(line.substr(1));
        for (std::string cell; std::getline(row, cell, '|');) cells.push_back(trimmed(cell));
        rows.push_back(cells);
    }
    return rows;
}

// Every `name` in backticks of a cell.
std::vector<std::string> backticked(const std::string& cell) {
    static const std::regex code("`([^`]+)`");
    std::vector<std::string> out;
    for (std::sregex_iterator it(cell.begin(), cell.end(), code), end; it != end; ++it) out.push_back((*it)[1]);
    return out;
}

// A field table: the names its first column gives, and the row each comes from.
struct FieldTable {
    std::string page, name;
    std::map<std::string, std::vector<std::string>> rows;
    std::string where() const { return page + ", table <!-- fields: " + name + " -->"; }
};

FieldTable field_table(const std::string& page, const std::string& name) {
    FieldTable t{page, name, {}};
    for (const auto& row : table_rows(marked(page, "fields: " + name, "fields")))
        for (const std::string& field : backticked(row.at(0))) t.rows[field] = row;
    if (t.rows.empty()) ADD_FAILURE() << t.where() << ": no field names in its first column";
    return t;
}

// ---- the code's side: what the parsers look up -------------------------------------------------

// Where a kind of file's fields are documented: a field whose path begins with `code` is
// looked up in `table`, as `doc` + the rest ("runs[].client.command_timeout_ms" in the
// scenario table as "client.command_timeout_ms"). The longest `code` that fits wins; several
// mounts of one prefix (a case's top level: its own table and the one it shares) are read as one.
struct Mount {
    std::string code, table, doc;
};

struct FileKind {
    std::string what;                 // "a lock file"
    std::set<std::string> read;       // what its parser looked up
    std::vector<Mount> mounts;
};

std::vector<std::pair<std::string, std::string>> resolve(const FileKind& kind, const std::string& path) {
    size_t longest = 0;
    for (const Mount& m : kind.mounts)
        if (path.starts_with(m.code)) longest = std::max(longest, m.code.size());
    std::vector<std::pair<std::string, std::string>> out;
    for (const Mount& m : kind.mounts)
        if (m.code.size() == longest && path.starts_with(m.code)) out.emplace_back(m.table, m.doc + path.substr(longest));
    return out;
}

// A documented name covers a field read as it is, and an object read whose fields the table
// gives dotted (`offers` by `offers.fencing`).
bool documents(const FieldTable& t, const std::string& field) {
    return std::ranges::any_of(t.rows, [&](const auto& row) {
        return row.first == field || row.first.starts_with(field + ".");
    });
}

// A fixture's explicit scenario, parsed (a failure names it: fix the fixture, not the test).
void parse_fixture(const std::string& name, const std::string& text) {
    try {
        parse_scenario(Json::parse(text), name);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "fixture " << name << " no longer parses: " << e.what();
    }
}

// What the catalog does not write, so that every branch of the parsers runs (a parser asks
// for most fields whether the file gives them or not, so today the catalog alone leaves out
// only `explore`; these keep the branches reached as the catalog changes): a delayed and a
// held link, a drifting node clock, a repeating pause of the holder with drawn lengths, a
// repeating crash, both kinds of gate, a background pause, a slow workload, a run's own
// timeouts, renewal by fraction, a table row, a fixed explore path, a base port, a Sentinel
// run's replication link, an ensemble's peer link by role.
void parse_fixtures() {
    parse_fixture("fixture-redis", R"({
      "name": "fixture-redis", "seed": 7, "lock_key": "fixture", "base_port": 20000, "alone": true,
      "client": {"command_timeout_ms": 100, "connect_timeout_ms": 100, "store_timeout_ms": 500},
      "workload": {"clients": 4, "duration_ms": 2000, "sections_per_client": 3, "start_stagger_ms": 10,
                   "work_ms": {"fixed": 1}, "retry_ms": {"exponential": 2}, "think_ms": {"uniform": [0, 1]},
                   "slow": {"probability": 0.1, "work_ms": {"fixed": 5}}},
      "explore": {"fixed": ["seed", "faults.*.at_ms"]},
      "faults": [
        {"fault": "link", "at_ms": 100, "mode": "delay", "latency_ms": 5, "jitter_ms": 2, "nodes": [0],
         "direction": "upstream", "duration_ms": 100},
        {"fault": "link", "at_ms": 100, "mode": "hold", "store": true, "clients": "all", "duration_ms": 100},
        {"fault": "link", "point": "before_write", "mode": "blackhole", "nodes": "all", "duration_ms": 100,
         "until": "another-enters", "max_ms": 400},
        {"fault": "clock", "at_ms": 100, "node": 0, "rate": 1.5, "jump_ms": -50},
        {"fault": "pause", "every_ms": {"uniform": [100, 200]}, "until_ms": 1500, "client": "holder",
         "duration_ms": {"fixed": 50}},
        {"fault": "crash", "every_ms": 400, "at_ms": 300, "node": 0, "restart_after_ms": 100},
        {"fault": "gate", "point": "before_write", "count": 2, "stagger_ms": 5},
        {"fault": "gate", "point": "after_acquire", "client": 1, "until": "another-enters", "max_ms": 500},
        {"fault": "pause", "point": "before_write", "task": "background", "duration_ms": 100},
        {"fault": "pause", "at_ms": 100, "node": 0, "duration_ms": 100},
        {"fault": "kill", "point": "before_release", "occurrence": 2, "client": 3}
      ],
      "runs": [
        {"algorithm": "token-lua", "name": "renewed", "table_row": "row", "check_lease_before_write": true,
         "resource_check": "token", "persistence": "aof-always", "topology": "plain", "nodes": 1,
         "renew": {"fraction": 0.5, "ttl_ms": 500, "mode": "replace", "on_failure": "retry", "abandon": true},
         "client": {"store_timeout_ms": 500}, "workload": {"clients": 4, "duration_ms": 2000},
         "expect": {"faults_injected": ">= 1", "verdict": "safe"}},
        {"algorithm": "token-lua", "name": "sentinel", "topology": "sentinel", "params": {"wait_replicas": 1},
         "faults": [{"fault": "link", "at_ms": 100, "replication": true, "mode": "hold", "duration_ms": 100}]}
      ]})");
    parse_fixture("fixture-ensemble", R"({
      "name": "fixture-ensemble",
      "runs": [
        {"algorithm": "external", "name": "kazoo", "command": ["/usr/bin/python3", "adapter.py"], "cwd": "/tmp",
         "service": "zookeeper", "nodes": 3, "lock": "kazoo", "lock_file": "locks/kazoo.json", "variant": "v",
         "params": {"probe_key_ttl": false},
         "faults": [{"fault": "link", "at_ms": 100, "peers": true, "node": "leader", "mode": "reset", "duration_ms": 100}]}
      ]})");
}

// Each kind of input file, read with recording on: a lock file, a case file, an explicit
// scenario (the catalog composed, and the fixtures).
std::vector<FileKind> read_corpus() {
    std::vector<FileKind> kinds;
    record_fields_read(true);
    const std::vector<LockFile> locks = load_lock_folder(kSource / "locks");
    kinds.push_back({"a lock file", fields_read(),
                     {{"", "lock", ""}, {"renew.", "renew", ""}}});

    std::vector<fs::path> cases;
    for (const fs::path& d : {kSource / "scenarios", kSource / "scenarios" / "discovered"})
        if (fs::is_directory(d))
            for (const auto& e : fs::directory_iterator(d))
                if (e.path().extension() == ".json") cases.push_back(e.path());
    std::ranges::sort(cases);
    record_fields_read(true);
    for (const fs::path& c : cases) load_case_file(c);
    kinds.push_back({"a case file", fields_read(),
                     {{"", "case", ""}, {"", "scenario", ""}, {"faults[].", "fault", ""}, {"renew.", "renew", ""},
                      {"predict[].", "predict", ""}, {"variants[].", "variant", ""},
                      {"variants[].faults[].", "fault", ""}, {"variants[].renew.", "renew", ""},
                      {"variants[].predict[].", "predict", ""}}});

    // Composed first, then read on their own: composing reads the case files too.
    record_fields_read(false);
    std::vector<std::pair<std::string, Json>> composed;
    for (const fs::path& c : cases)
        composed.emplace_back(c.string(), scenario_from_source(read_input_json(c), c.string(), locks, LockChoice::catalog).source);
    record_fields_read(true);
    for (const auto& [file, scenario] : composed)
        if (!scenario.at("runs").empty()) parse_scenario(scenario, file);
    parse_fixtures();
    kinds.push_back({"an explicit scenario", fields_read(),
                     {{"", "scenario", ""}, {"faults[].", "fault", ""}, {"runs[].", "run", ""},
                      {"runs[].faults[].", "fault", ""}, {"runs[].renew.", "renew", ""},
                      {"runs[].client.", "scenario", "client."}, {"runs[].workload.", "scenario", "workload."}}});
    record_fields_read(false);
    return kinds;
}

// Every field table of the manual, by the name its markers give it.
std::map<std::string, FieldTable> field_tables() {
    std::map<std::string, FieldTable> tables;
    for (const std::string name : {"lock", "case", "variant", "predict", "scenario", "run", "renew"})
        tables.emplace(name, field_table("docs/files.md", name));
    tables.emplace("fault", field_table("docs/faults.md", "fault"));
    return tables;
}

TEST(Docs, EveryFieldTheParsersReadIsInTheManualAndNoOther) {
    const std::vector<FileKind> kinds = read_corpus();
    const std::map<std::string, FieldTable> tables = field_tables();
    std::map<std::string, std::set<std::string>> read_as;   // table → the names the code reads in it
    std::map<std::string, std::set<std::string>> mounted_by; // table → the kinds that document a field there
    for (const FileKind& kind : kinds) {
        for (const Mount& m : kind.mounts) mounted_by[m.table].insert(kind.what);
        for (const std::string& path : kind.read) {
            bool documented = false;
            std::string missing;
            for (const auto& [table, field] : resolve(kind, path)) {
                read_as[table].insert(field);
                documented = documented || documents(tables.at(table), field);
                missing += (missing.empty() ? "" : " or ") + tables.at(table).where() + " lacks `" + field + "`";
            }
            if (!documented)
                ADD_FAILURE() << missing << ", which the parser of " << kind.what << " reads (`" << path << "`)";
        }
    }
    for (const auto& [name, table] : tables) {
        std::string kinds_text;
        for (const std::string& k : mounted_by[name]) kinds_text += (kinds_text.empty() ? "" : ", ") + k;
        for (const auto& [field, _] : table.rows)
            if (!read_as[name].contains(field))
                ADD_FAILURE() << table.where() << " has `" << field << "`, which no parser reads (in "
                              << (kinds_text.empty() ? "no kind of file" : kinds_text) << ")";
    }
}

// The failure classes: the `failure_class` row's type column, as scenario.cpp knows them.
TEST(Docs, FailureClassesAreTheCodes) {
    const FieldTable t = field_table("docs/files.md", "scenario");
    ASSERT_TRUE(t.rows.contains("failure_class")) << t.where() << ": no `failure_class` row";
    const std::vector<std::string> listed = backticked(t.rows.at("failure_class").at(1));
    const std::set<std::string> documented(listed.begin(), listed.end());
    const std::set<std::string> known(failure_classes().begin(), failure_classes().end());
    for (const std::string& c : known)
        EXPECT_TRUE(documented.contains(c)) << t.where() << ", row `failure_class`: lacks the class `" << c
                                            << "` (sim/engine/scenario.cpp: failure_classes)";
    for (const std::string& c : documented)
        EXPECT_TRUE(known.contains(c)) << t.where() << ", row `failure_class`: lists `" << c
                                       << "`, which is no failure class of sim/engine/scenario.cpp";
}

// docs/results.md's metric table: name | group | unit | what it counts, one row per metric.
TEST(Docs, MetricTableIsTheCodes) {
    const std::string where = "docs/results.md, table <!-- metrics -->";
    std::map<std::string, std::vector<std::string>> documented;
    for (const auto& row : table_rows(marked("docs/results.md", "metrics", "metrics"))) {
        const std::vector<std::string> name = backticked(row.at(0));
        if (name.size() != 1 || row.size() < 4) {
            ADD_FAILURE() << where << ": a row is not `name` | group | unit | what it counts: " << row.at(0);
            continue;
        }
        documented[name[0]] = row;
    }
    for (const Metric& m : metrics()) {
        const auto it = documented.find(std::string(m.name));
        if (it == documented.end()) {
            ADD_FAILURE() << where << " lacks the metric `" << m.name << "` (analysis/metrics.cpp)";
            continue;
        }
        const auto plain = [](const std::string& cell) {
            const auto names = backticked(cell);
            return names.size() == 1 ? names[0] : cell;
        };
        static const std::map<MetricUnit, std::string> units{
            {MetricUnit::count, "count"}, {MetricUnit::ms, "ms"}, {MetricUnit::ratio, "ratio"}};
        EXPECT_EQ(plain(it->second.at(1)), group_name(m.group)) << where << ", `" << m.name << "`: its group";
        EXPECT_EQ(plain(it->second.at(2)), units.at(m.unit)) << where << ", `" << m.name << "`: its unit";
        documented.erase(it);
    }
    for (const auto& [name, _] : documented)
        ADD_FAILURE() << where << " has `" << name << "`, which is no metric of analysis/metrics.cpp";
}

// A parameter's range as the table writes it: "1..3600000", "boolean", or its choices quoted.
std::string range_cell(const ParamSpec& p) {
    const auto number = [](double x) {
        return x == std::floor(x) ? std::to_string(static_cast<long long>(x)) : Json(x).dump();
    };
    switch (p.type) {
        case ParamSpec::Type::boolean: return "boolean";
        case ParamSpec::Type::integer:
        case ParamSpec::Type::number: return number(p.min) + ".." + number(p.max);
        case ParamSpec::Type::choice: {
            std::string out;
            for (const std::string& c : p.choices) out += (out.empty() ? "`\"" : ", `\"") + c + "\"`";
            return out;
        }
    }
    return "";
}

bool same_default(const ParamSpec& p, const std::string& cell) {
    const std::vector<std::string> code = backticked(cell);
    if (code.size() != 1) return false;
    const Json written = Json::parse(code[0], nullptr, false);
    if (written.is_discarded()) return false;
    if (p.type == ParamSpec::Type::number)
        return written.is_number() && std::abs(written.get<double>() - p.default_value.get<double>()) < 1e-12;
    return written == p.default_value;
}

// docs/files.md's algorithm table: algorithm | parameter | default | range | meaning, one row
// per parameter of every algorithm `lockbench list` prints (lockimpl's and "external").
TEST(Docs, AlgorithmTableIsTheRegistrys) {
    const std::string where = "docs/files.md, table <!-- algorithms -->";
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> documented;
    for (const auto& row : table_rows(marked("docs/files.md", "algorithms", "algorithms"))) {
        const auto algorithm = backticked(row.at(0));
        const auto param = row.size() > 1 ? backticked(row.at(1)) : std::vector<std::string>{};
        if (algorithm.size() != 1 || param.size() != 1 || row.size() < 4) {
            ADD_FAILURE() << where << ": a row is not `algorithm` | `parameter` | default | range | meaning: " << row.at(0);
            continue;
        }
        documented[{algorithm[0], param[0]}] = row;
    }
    std::vector<const AlgorithmInfo*> all;
    for (const AlgorithmInfo& a : algorithms()) all.push_back(&a);
    all.push_back(&external_algorithm());
    for (const AlgorithmInfo* a : all)
        for (const ParamSpec& p : a->params) {
            const auto it = documented.find({a->name, p.name});
            if (it == documented.end()) {
                ADD_FAILURE() << where << " lacks `" << a->name << "`'s parameter `" << p.name << "` (lockimpl, `lockbench list`)";
                continue;
            }
            EXPECT_TRUE(same_default(p, it->second.at(2)))
                << where << ", `" << a->name << "` `" << p.name << "`: default " << it->second.at(2) << ", the code's is `"
                << p.default_value.dump() << "`";
            EXPECT_EQ(it->second.at(3), range_cell(p)) << where << ", `" << a->name << "` `" << p.name << "`: its range";
            documented.erase(it);
        }
    for (const auto& [key, _] : documented)
        ADD_FAILURE() << where << " has `" << key.first << "`'s parameter `" << key.second
                      << "`, which lockimpl's registry does not declare";
}

}  // namespace
