#include "sim/harness/matrix_spec.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "analysis/digest.h"
#include "lockimpl/params.h"
#include "sim/engine/scenario.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

using Json = nlohmann::json;

// A stable name for a spec (no security is at stake).
std::string hash_hex(const std::string& text) {
    Fnv1a h;
    h.add(text);
    return h.hex();
}

// A tree an older lockbench made names no run's place: its header is read (report, check,
// verdict), and a resumed one runs from this lockbench's own spec, of the same id.
constexpr std::size_t kNoRunIndex = static_cast<std::size_t>(-1);

MatrixCell cell_from_json(const Json& j) {
    MatrixCell c{j.at("index").get<std::size_t>(), j.at("id").get<std::string>(), j.at("dir").get<std::string>(),
                 j.at("scenario_index").get<std::size_t>(), j.at("scenario").get<std::string>(),
                 j.at("run").get<std::string>(), j.value("run_index", kNoRunIndex), j.at("algorithm").get<std::string>(),
                 j.at("variant").get<std::string>(), j.at("params"), j.at("nodes").get<int>(), std::nullopt, Json()};
    if (j.contains("step")) {
        c.step = j.at("step").get<int>();
        c.value = j.at("value");
    }
    return c;
}

SweepSpec sweep_from_json(const Json& j) {
    return {j.at("scenario").get<std::string>(), j.at("file").get<std::string>(), j.at("path").get<std::string>(),
            j.at("from").get<double>(), j.at("to").get<double>(), j.at("steps").get<int>(), j.at("values")};
}

// The run's name without its durations: the row a run belongs to when scenarios differ
// only in TTLs ("token-lua+fence", "redlock+no-check_validity"). An external run's row is
// its library, by the name the scenario gives it ("redis-py"); a lock file's run, its own
// name ("redis-py", "token-lua+fence@before-write+none").
std::string variant_of(const RunSpec& r) {
    if (!r.command.empty() || r.lock) return r.name;
    std::vector<ParamSpec> kept;
    for (const auto& p : r.algorithm->params)
        if (!p.name.ends_with("_ms")) kept.push_back(p);
    return default_run_name(r.algorithm->name, kept, r.params);
}

bool selected(const RunSpec& r, const std::vector<std::string>& algorithms) {
    return algorithms.empty() || std::ranges::any_of(algorithms, [&](const std::string& a) {
               return r.name == a || r.algorithm->name == a || r.lock == a;
           });
}

// The file's scenario: as written, or a case composed with the locks (its missing cells added
// to `spec`); parsed once, here or in compose().
Scenario scenario_of_file(const Json& read, const fs::path& file, const LockSelection* locks, MatrixSpec& spec) {
    if (!is_case_file(read)) return parse_scenario(read, file.string());
    if (!locks) throw ScenarioError(file.string() + ": a case names no lock: say which locks to run it against");
    std::vector<NotApplicable> missing;
    Scenario s = scenario_from_source(read, file.string(), locks->locks, locks->choice, &missing);
    for (const Json& m : to_json(missing)) spec.not_applicable.push_back(m);
    for (const RunSpec& run : s.runs)
        for (const LockFile& l : locks->locks)
            if (run.lock == l.name)
                spec.locks[l.name] = {{"description", l.description}, {"lock_file", l.path}, {"facts", lock_facts(l)}};
    return s;
}

MatrixCell make_cell(std::size_t index, const std::string& id, std::size_t scenario, const Scenario& s, const RunSpec& r) {
    const auto run_index = static_cast<std::size_t>(&r - s.runs.data());
    return {index, id, "cells/" + id, scenario, s.name, r.name, run_index, r.algorithm->name, variant_of(r), r.params.json(),
            r.nodes, std::nullopt, Json()};
}

void check_algorithms_match(const std::vector<MatrixCell>& cells, const std::vector<std::string>& algorithms) {
    for (const auto& a : algorithms)
        if (std::ranges::none_of(cells, [&](const MatrixCell& c) { return c.run == a || c.algorithm == a; }))
            throw std::runtime_error("--algorithm " + a + ": no run of that algorithm or name in the scenarios given");
    if (cells.empty()) throw std::runtime_error("no runs to make: the scenarios name none");
}

MatrixSpec finish(MatrixSpec spec) {
    spec.id = spec_id(spec);
    return spec;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, sep)) parts.push_back(part);
    if (!text.empty() && text.back() == sep) parts.emplace_back();
    return parts;
}

double parse_number(const std::string& text, const std::string& what) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(v))
        throw std::runtime_error(what + ": '" + text + "' is not a number");
    return v;
}

// `value` as the integer field `j` takes it, or refused naming the field.
Json integer_value(double value, const std::string& here) {
    // llround of a value past long long is undefined: refuse it here, the scenario's
    // own ranges refuse the rest when it is parsed.
    if (!(std::abs(value) < 9.0e18))
        throw std::runtime_error(here + " is an integer; " + Json(value).dump() + " is out of range");
    return static_cast<long long>(std::llround(value));
}

// Sets every field PATH names in `j` to `value`, keeping integers integers. Returns how
// many it set; throws naming the first segment that leads nowhere or a field that is not a number.
int set_path(Json& j, const std::vector<std::string>& path, size_t at, double value, const std::string& where,
             Json& assigned) {
    const std::string here = where.empty() ? "the scenario" : where;
    if (at == path.size()) {
        if (!j.is_number()) throw std::runtime_error(here + " is " + std::string(j.type_name()) + ", not a number");
        j = j.is_number_integer() || j.is_number_unsigned() ? integer_value(value, here) : Json(value);
        assigned = j;
        return 1;
    }
    const std::string& key = path[at];
    const std::string next = where.empty() ? key : where + "." + key;
    if (key == "*") {
        if (!j.is_array() && !j.is_object()) throw std::runtime_error(here + " has no elements for *");
        int n = 0;
        for (auto& [k, v] : j.items()) n += set_path(v, path, at + 1, value, where.empty() ? k : where + "." + k, assigned);
        return n;
    }
    if (j.is_array()) {
        const bool digits = !key.empty() && std::ranges::all_of(key, [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoul(key) >= j.size())
            throw std::runtime_error(here + " has " + std::to_string(j.size()) + " elements; no element " + key);
        return set_path(j[std::stoul(key)], path, at + 1, value, next, assigned);
    }
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(here + " has no field " + key);
    return set_path(j[key], path, at + 1, value, next, assigned);
}

// The scenario with one swept value: refused as the file would be, the value named too; a
// case that the value makes apply to none of the locks is refused too, with the first reason.
Scenario parse_scenario_for_sweep(const Json& source, const fs::path& file, const std::string& path, const Json& value,
                                  const LockSelection* locks, MatrixSpec& spec) {
    const std::string with = " (with --param " + path + "=" + value.dump() + ")";
    const std::size_t missing_before = spec.not_applicable.size();
    Scenario s;
    try {
        s = scenario_of_file(source, file, locks, spec);
    } catch (const ScenarioError& e) {
        throw ScenarioError(std::string(e.what()) + with);
    }
    if (s.runs.empty()) {
        const Json first = spec.not_applicable.size() > missing_before ? spec.not_applicable.at(missing_before) : Json();
        throw ScenarioError(file.string() + ": applies to none of the locks asked for" +
                            (first.is_object() ? " (" + first.value("lock", std::string()) + ": " + first.value("why", std::string()) + ")"
                                               : std::string()) + with);
    }
    return s;
}

void check_repeat(int repeat) {
    if (repeat < 1) throw std::runtime_error("--repeat " + std::to_string(repeat) + ": must be at least 1");
}

}  // namespace

Json to_json(const SweepSpec& s) {
    return {{"scenario", s.scenario}, {"file", s.file}, {"path", s.path}, {"from", s.from},
            {"to", s.to}, {"steps", s.steps}, {"values", s.values}};
}

Json to_json(const MatrixCell& c) {
    Json j = {{"index", c.index}, {"id", c.id}, {"dir", c.dir}, {"scenario_index", c.scenario_index},
              {"scenario", c.scenario}, {"run", c.run}, {"algorithm", c.algorithm}, {"variant", c.variant},
              {"params", c.params}, {"nodes", c.nodes}};
    if (c.run_index != kNoRunIndex) j["run_index"] = c.run_index;
    if (c.step) {
        j["step"] = *c.step;
        j["value"] = c.value;
    }
    return j;
}

RepetitionPart repetition_part(const MatrixSpec& spec, const MatrixCell& cell, int rep) {
    if (cell.run_index == kNoRunIndex)
        throw std::runtime_error("cell " + cell.id + ": made by an older lockbench, which named no run's place; run the tree afresh");
    SpecScenario scenario = spec.scenario_of(cell);
    Json& runs = scenario.source.at("runs");
    runs = Json::array({runs.at(cell.run_index)});
    scenario.source.erase("explore");  // the search's, whose paths name the faults of every run
    return {cell, rep, std::move(scenario), spec.simulated};
}

Json to_json(const RepetitionPart& p) {
    return {{"cell", to_json(p.cell)}, {"rep", p.rep}, {"file", p.scenario.file}, {"source", p.scenario.source},
            {"backend", p.simulated ? "sim" : "live"}};
}

RepetitionPart repetition_part_from_json(const Json& j) {
    return {cell_from_json(j.at("cell")), j.at("rep").get<int>(), {j.at("file").get<std::string>(), j.at("source")},
            j.at("backend").get<std::string>() == "sim"};
}

Json to_json(const std::vector<NotApplicable>& cells) {
    Json out = Json::array();
    for (const NotApplicable& n : cells) {
        Json j = {{"case", n.case_name}, {"lock", n.lock}, {"why", n.why}};
        if (!n.variant.empty()) j["variant"] = n.variant;
        if (n.failure_class) j["failure_class"] = *n.failure_class;
        out.push_back(std::move(j));
    }
    return out;
}

Json to_json(const MatrixSpec& spec) {
    Json scenarios = Json::array(), cells = Json::array();
    for (const SpecScenario& s : spec.scenarios) scenarios.push_back({{"file", s.file}, {"source", s.source}});
    for (const MatrixCell& c : spec.cells) cells.push_back(to_json(c));
    Json j = {{"kind", spec.kind}, {"repeat", spec.repeat}, {"algorithms", spec.algorithms},
              {"scenarios", scenarios}, {"cells", cells}};
    if (spec.sweep) j["sweep"] = to_json(*spec.sweep);
    if (spec.simulated) j["backend"] = "sim";
    if (!spec.not_applicable.empty()) j["not_applicable"] = spec.not_applicable;
    if (!spec.locks.empty()) j["locks"] = spec.locks;
    return j;
}

MatrixSpec matrix_spec_from_json(const Json& j, const std::string& id) {
    MatrixSpec spec;
    spec.kind = j.at("kind").get<std::string>();
    spec.repeat = j.at("repeat").get<int>();
    spec.algorithms = j.at("algorithms").get<std::vector<std::string>>();
    for (const Json& s : j.at("scenarios")) spec.scenarios.push_back({s.at("file").get<std::string>(), s.at("source")});
    for (const Json& c : j.at("cells")) spec.cells.push_back(cell_from_json(c));
    if (j.contains("sweep")) spec.sweep = sweep_from_json(j.at("sweep"));
    spec.simulated = j.value("backend", "live") == "sim";
    spec.not_applicable = j.value("not_applicable", Json::array());
    spec.locks = j.value("locks", Json::object());
    spec.id = id;
    return spec;
}

std::string spec_id(const MatrixSpec& spec) {
    Json hashed = to_json(spec);
    for (auto& s : hashed.at("scenarios")) {
        s.erase("file");  // the same file by another path is the same spec
        // ... and so is the same lock file: where it is, and its adapter's folder, are paths too.
        if (s["source"].contains("runs"))
            for (auto& run : s["source"]["runs"])
                for (const char* path : {"cwd", "lock_file"}) run.erase(path);
    }
    if (hashed.contains("sweep")) hashed.at("sweep").erase("file");
    // A run's place is the scenarios' (hashed already): a tree an older lockbench made, which
    // names none, is the same spec and resumes.
    for (auto& c : hashed.at("cells")) c.erase("run_index");
    if (hashed.contains("locks"))
        for (auto& [name, lock] : hashed.at("locks").items()) lock.erase("lock_file");
    return hash_hex(hashed.dump());
}

SweepParam parse_sweep_param(const std::string& text) {
    const size_t eq = text.rfind('=');
    const size_t dots = text.find("..", eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || dots == std::string::npos)
        throw std::runtime_error("--param " + text + ": expected PATH=FROM..TO, for example faults.0.duration_ms=100..700");
    SweepParam p{text.substr(0, eq), 0, 0};
    p.from = parse_number(text.substr(eq + 1, dots - eq - 1), "--param " + text + ": FROM");
    p.to = parse_number(text.substr(dots + 2), "--param " + text + ": TO");
    return p;
}

Shard parse_shard(const std::string& text) {
    const size_t slash = text.find('/');
    const auto bad = [&] { return std::runtime_error("--shard " + text + ": expected I/N with 0 <= I < N, for example 0/4"); };
    if (slash == std::string::npos) throw bad();
    const std::string i = text.substr(0, slash), n = text.substr(slash + 1);
    const auto digits = [](const std::string& s) {
        return !s.empty() && s.size() < 7 && std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(i) || !digits(n)) throw bad();
    Shard s{std::stoi(i), std::stoi(n)};
    if (s.count < 1 || s.index >= s.count) throw bad();
    return s;
}

namespace {

// The scenario's runs as cells of `spec` (those `algorithms` selects), and its source.
void add_scenario(MatrixSpec& spec, const Scenario& s, std::set<std::string>& names) {
    if (s.runs.empty()) return;  // a case no lock asked for meets
    if (!names.insert(s.name).second)
        throw std::runtime_error(s.path + ": a second scenario named " + s.name + " in one matrix");
    for (const RunSpec& r : s.runs)
        if (selected(r, spec.algorithms))
            spec.cells.push_back(make_cell(spec.cells.size(), s.name + "/" + r.name, spec.scenarios.size(), s, r));
    spec.scenarios.push_back({s.path, s.source});
}

}  // namespace

MatrixSpec matrix_spec(const std::vector<fs::path>& files, const std::vector<std::string>& algorithms, int repeat,
                       const LockSelection* locks) {
    check_repeat(repeat);
    MatrixSpec spec{"matrix", repeat, algorithms, {}, {}, std::nullopt, false};
    std::set<std::string> names;
    for (const auto& file : files) add_scenario(spec, scenario_of_file(read_input_json(file), file, locks, spec), names);
    check_algorithms_match(spec.cells, algorithms);
    return finish(std::move(spec));
}

MatrixSpec matrix_spec_of(const std::vector<Scenario>& scenarios, const Json& not_applicable, const Json& locks,
                          int repeat) {
    check_repeat(repeat);
    MatrixSpec spec{"matrix", repeat, {}, {}, {}, std::nullopt, false};
    spec.not_applicable = not_applicable;
    spec.locks = locks;
    std::set<std::string> names;
    for (const Scenario& s : scenarios) add_scenario(spec, s, names);
    check_algorithms_match(spec.cells, {});
    return finish(std::move(spec));
}

MatrixSpec simulated(MatrixSpec spec) {
    std::vector<MatrixCell> cells;
    for (const MatrixCell& c : spec.cells)
        if (c.algorithm != "external") {
            cells.push_back(c);
            cells.back().index = cells.size() - 1;
        }
    if (cells.empty()) throw std::runtime_error("--backend sim: every run here is an external library, which cannot be simulated");
    spec.cells = std::move(cells);
    spec.simulated = true;
    return finish(std::move(spec));
}

namespace {

// Step `i` of the sweep: the file (a scenario, or a case before its locks) with the step's value
// set, and its cells appended.
Json sweep_step(MatrixSpec& spec, const Json& base, const fs::path& file, const SweepParam& param, int i,
                const LockSelection* locks) {
    const int steps = spec.sweep->steps;
    const double value = param.from + (param.to - param.from) * i / (steps - 1);
    Json source = base;
    Json shown;   // the value as set: rounded, for an integer field
    try {
        set_path(source, split(param.path, '.'), 0, value, "", shown);
    } catch (const std::exception& e) {
        throw std::runtime_error(file.string() + ": --param " + param.path + ": " + e.what());
    }
    // A value the scenario cannot take fails here, as it would in the file.
    // Only the first step's missing cells are kept: every step misses the same ones.
    const std::size_t missing_before = spec.not_applicable.size();
    const Scenario s = parse_scenario_for_sweep(source, file, param.path, shown, locks, spec);
    if (i > 0) spec.not_applicable.erase(spec.not_applicable.begin() + static_cast<std::ptrdiff_t>(missing_before),
                                         spec.not_applicable.end());
    for (const RunSpec& r : s.runs) {
        if (!selected(r, spec.algorithms)) continue;
        MatrixCell cell = make_cell(spec.cells.size(), "step-" + std::to_string(i) + "/" + r.name, spec.scenarios.size(), s, r);
        cell.step = i;
        cell.value = shown;
        spec.cells.push_back(std::move(cell));
    }
    spec.scenarios.push_back({file.string(), s.source});
    return shown;
}

}  // namespace

MatrixSpec sweep_spec(const fs::path& file, const SweepParam& param, int steps, const std::vector<std::string>& algorithms,
                      int repeat, const LockSelection* locks) {
    check_repeat(repeat);
    if (steps < 2) throw std::runtime_error("--steps " + std::to_string(steps) + ": a sweep needs at least 2 steps");
    const Json base = read_input_json(file);
    MatrixSpec spec{"sweep", repeat, algorithms, {}, {}, std::nullopt, false};
    spec.sweep = SweepSpec{scenario_of_file(base, file, locks, spec).name, file.string(),
                           param.path, param.from, param.to, steps, Json::array()};
    spec.not_applicable = Json::array();  // the steps add them
    for (int i = 0; i < steps; ++i) {
        const Json shown = sweep_step(spec, base, file, param, i, locks);
        Json& values = spec.sweep->values;
        if (!values.empty() && values.back() == shown)
            throw std::runtime_error("--steps " + std::to_string(steps) + ": " + param.path +
                                     " is an integer field and the steps repeat a value; use fewer steps");
        values.push_back(shown);
    }
    check_algorithms_match(spec.cells, algorithms);
    return finish(std::move(spec));
}

}  // namespace lockbench
