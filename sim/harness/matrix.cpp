#include "sim/harness/matrix.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "analysis/aggregate.h"
#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "lockimpl/params.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/recheck.h"
#include "sim/harness/runner.h"
#include "sim/live/redis_node.h"  // redis_server_binary
#include "sim/engine/scenario.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

using Json = nlohmann::json;

// FNV-1a, 64 bits: a stable name for a spec (no security is at stake).
std::string hash_hex(const std::string& text) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string spec_id(const Json& spec) {
    Json hashed = spec;
    for (auto& s : hashed.at("scenarios")) s.erase("file");  // the same file by another path is the same spec
    if (hashed.contains("sweep")) hashed.at("sweep").erase("file");
    return hash_hex(hashed.dump());
}

// The run's name without its durations: the row a run belongs to when scenarios differ
// only in TTLs ("token-lua+fence", "redlock+no-check_validity"). An external run's row is
// its library, by the name the scenario gives it ("redis-py").
std::string variant_of(const RunSpec& r) {
    if (!r.command.empty()) return r.name;
    std::vector<ParamSpec> kept;
    for (const auto& p : r.algorithm->params)
        if (!p.name.ends_with("_ms")) kept.push_back(p);
    return default_run_name(r.algorithm->name, kept, r.params);
}

bool selected(const RunSpec& r, const std::vector<std::string>& algorithms) {
    return algorithms.empty() || std::ranges::any_of(algorithms, [&](const std::string& a) {
               return r.name == a || r.algorithm->name == a;
           });
}

Json cell_json(size_t index, const std::string& id, size_t scenario, const Scenario& s, const RunSpec& r) {
    return {{"index", index}, {"id", id}, {"dir", "cells/" + id}, {"scenario_index", scenario},
            {"scenario", s.name}, {"run", r.name}, {"algorithm", r.algorithm->name}, {"variant", variant_of(r)},
            {"params", r.params.json()}, {"nodes", r.nodes}};
}

void check_algorithms_match(const Json& cells, const std::vector<std::string>& algorithms) {
    for (const auto& a : algorithms)
        if (std::ranges::none_of(cells, [&](const Json& c) { return c.at("run") == a || c.at("algorithm") == a; }))
            throw std::runtime_error("--algorithm " + a + ": no run of that algorithm or name in the scenarios given");
    if (cells.empty()) throw std::runtime_error("no runs to make: the scenarios name none");
}

MatrixSpec finish(Json spec) {
    MatrixSpec m{std::move(spec), ""};
    m.id = spec_id(m.json);
    return m;
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

// Sets every field PATH names in `j` to `value`, keeping integers integers. Returns how
// many it set; throws naming the first segment that leads nowhere or a field that is not a number.
int set_path(Json& j, const std::vector<std::string>& path, size_t at, double value, const std::string& where,
             Json& assigned) {
    const std::string here = where.empty() ? "the scenario" : where;
    if (at == path.size()) {
        if (!j.is_number()) throw std::runtime_error(here + " is " + std::string(j.type_name()) + ", not a number");
        if (j.is_number_integer() || j.is_number_unsigned()) {
            // llround of a value past long long is undefined: refuse it here, the scenario's
            // own ranges refuse the rest when it is parsed.
            if (!(std::abs(value) < 9.0e18))
                throw std::runtime_error(here + " is an integer; " + Json(value).dump() + " is out of range");
            j = static_cast<long long>(std::llround(value));
        }
        else j = value;
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

// ---- the tree on disk ----

fs::path header_path(const fs::path& dir) { return dir / "lockbench-results.json"; }

Json read_json(const fs::path& file) { return read_json_file(file); }

bool rep_done(const fs::path& rep_dir) { return fs::is_regular_file(rep_dir / "summary.json"); }

fs::path rep_dir(const fs::path& out, const Json& cell, int rep) {
    return out / cell.at("dir").get<std::string>() / ("rep-" + std::to_string(rep));
}

int reps_done(const fs::path& out, const Json& cell, int repeat) {
    int n = 0;
    for (int k = 0; k < repeat; ++k) n += rep_done(rep_dir(out, cell, k)) ? 1 : 0;
    return n;
}

// Makes OUT a tree of this spec, or checks that it is one already (to resume into it).
void prepare_out(const fs::path& out, const MatrixSpec& spec) {
    if (fs::exists(header_path(out))) {
        const Json header = read_results_header(out);
        if (header.at("spec_id") != spec.id)
            throw std::runtime_error(out.string() + ": holds results of another " + header.value("kind", std::string("spec")) +
                                     " (spec " + header.at("spec_id").get<std::string>() + ", this one is " + spec.id +
                                     "); choose another --out, or remove it");
        return;
    }
    if (fs::exists(out) && (!fs::is_directory(out) || !empty_but_for_lock(out)))
        throw std::runtime_error(out.string() + ": exists and is not a lockbench results tree; choose another --out");
    fs::create_directories(out);
    const Json header = {{"format", kResultsFormat}, {"version", kResultsVersion},
                         {"kind", spec.json.at("kind")}, {"spec_id", spec.id}, {"spec", spec.json}};
    write_atomically(header_path(out), header.dump(2) + "\n");
}

// Re-reads a cell's done repetitions into its entry (cell.json): each repetition's figures,
// and their aggregate with every acquire latency pooled.
Json refresh_cell(const fs::path& out, const Json& cell, int repeat) {
    Json entry = cell;
    entry.erase("scenario_index");
    Json reps = Json::array();
    std::vector<double> acquire_ms;
    for (int k = 0; k < repeat; ++k) {
        const fs::path dir = rep_dir(out, cell, k);
        if (!rep_done(dir)) continue;
        const Json summary = read_json(dir / "summary.json");
        if (!summary.contains("runs") || summary.at("runs").size() != 1)
            throw std::runtime_error((dir / "summary.json").string() + ": not a one-run lockbench summary");
        Json figures = rep_figures(summary.at("runs").at(0));
        figures["rep"] = k;
        figures["dir"] = fs::relative(dir, out).string();
        reps.push_back(std::move(figures));
        const RunHistory h = load_run_history(dir / "runs" / cell.at("run").get<std::string>());
        const CheckResult r = check(h, {.max_witnesses = 0});
        acquire_ms.insert(acquire_ms.end(), r.acquire_samples_ms.begin(), r.acquire_samples_ms.end());
    }
    entry["repeat"] = repeat;
    entry["reps_done"] = reps.size();
    entry["complete"] = static_cast<int>(reps.size()) == repeat;
    entry["aggregate"] = aggregate_reps(reps, acquire_ms);
    entry["reps"] = std::move(reps);
    write_atomically(out / cell.at("dir").get<std::string>() / "cell.json", entry.dump(2) + "\n");
    return entry;
}

Json cell_entry(const fs::path& out, const Json& cell, int repeat, bool refresh_if_stale) {
    const fs::path file = out / cell.at("dir").get<std::string>() / "cell.json";
    const int done = reps_done(out, cell, repeat);
    if (fs::is_regular_file(file)) {
        Json entry = read_json(file);
        if (entry.value("reps_done", -1) == done) return entry;
    }
    if (done > 0 && refresh_if_stale) return refresh_cell(out, cell, repeat);
    Json entry = cell;
    entry.erase("scenario_index");
    std::vector<double> none;
    entry.update({{"repeat", repeat}, {"reps_done", 0}, {"complete", false}, {"reps", Json::array()},
                  {"aggregate", aggregate_reps(Json::array(), none)}});
    return entry;
}

Json scenarios_overview(const Json& spec) {
    Json out = Json::array();
    std::set<std::string> seen;
    for (const auto& s : spec.at("scenarios")) {
        const Json& src = s.at("source");
        if (!seen.insert(src.value("name", std::string())).second) continue;
        out.push_back({{"name", src.value("name", std::string())}, {"description", src.value("description", std::string())},
                       {"faults", src.value("faults", Json::array())}});
    }
    return out;
}

// Where a time budget ended a matrix: every cell has this many repetitions of `repeat`.
struct BudgetStop {
    double seconds;
    int repetitions_per_cell;
};

// `shard` is the one this tree was run as (a merged tree has none): `merge` reads its count
// to name the shards that hold what is missing.
Json write_summary(const fs::path& out, const Json& spec, const std::string& id, std::optional<Shard> shard,
                   std::optional<BudgetStop> stop = std::nullopt) {
    const int repeat = spec.at("repeat").get<int>();
    Json cells = Json::array(), incomplete = Json::array();
    for (const auto& cell : spec.at("cells")) {
        cells.push_back(cell_entry(out, cell, repeat, true));
        // A cell the time budget left at its rounds is as planned, not missing anything.
        const bool budgeted = stop && cells.back().at("reps_done").get<int>() >= stop->repetitions_per_cell;
        if (!cells.back().at("complete").get<bool>() && !budgeted) incomplete.push_back(cell.at("id"));
    }
    Json summary = {{"format", kResultsFormat}, {"version", kResultsVersion}, {"kind", spec.at("kind")},
                    {"spec_id", id}, {"repeat", repeat}, {"scenarios", scenarios_overview(spec)}, {"cells", cells},
                    {"incomplete_cells", incomplete}};
    if (shard) summary["shard"] = {{"index", shard->index}, {"count", shard->count}};
    if (spec.contains("sweep")) summary["sweep"] = spec.at("sweep");
    // Cells short of `repeat` because the time budget ran out, not because the work broke off.
    if (stop) summary["budget"] = {{"seconds", stop->seconds}, {"repetitions_per_cell", stop->repetitions_per_cell}};
    write_atomically(out / "summary.json", summary.dump(2) + "\n");
    return summary;
}

std::string clock_text(double seconds) {
    const long long s = std::llround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    return buf;
}

// Expected cost of one repetition, in the unit the elapsed time is divided by: its workload
// plus a fixed start-up share (nodes, Sentinels, clients). Only ratios matter.
double rep_weight(const Json& scenario_source) {
    const Json w = scenario_source.value("workload", Json::object());
    return static_cast<double>(w.value("duration_ms", 3000)) / 1000.0 + 2.0;
}

// The shard count the trees were run with, if they say and agree (a merged tree says none).
std::optional<int> shard_count_of(const std::vector<fs::path>& trees) {
    std::optional<int> count;
    for (const auto& tree : trees) {
        if (!fs::is_regular_file(tree / "summary.json")) continue;
        const Json s = read_json(tree / "summary.json");
        if (!s.contains("shard")) continue;
        const int n = s.at("shard").value("count", 0);
        if (count && *count != n) return std::nullopt;
        count = n;
    }
    return count;
}

// One line saying which cells a merge of `trees` into `out` would leave short of their
// repetitions, and which shards hold them; empty when none would be.
std::string missing_after_merge(const MatrixSpec& spec, const fs::path& out, const std::vector<fs::path>& trees) {
    const int repeat = spec.json.at("repeat").get<int>();
    const bool out_is_ours = fs::is_regular_file(header_path(out)) && read_results_header(out).at("spec_id") == spec.id;
    std::vector<std::string> short_cells;
    std::set<int> shards;
    const std::optional<int> shard_count = shard_count_of(trees);
    for (const auto& cell : spec.json.at("cells")) {
        int most = out_is_ours ? reps_done(out, cell, repeat) : 0;
        for (const auto& tree : trees) most = std::max(most, reps_done(tree, cell, repeat));
        if (most == repeat) continue;
        short_cells.push_back(cell.at("id").get<std::string>() + " has " + std::to_string(most) + " of " +
                              std::to_string(repeat));
        if (shard_count) shards.insert(cell.at("index").get<int>() % *shard_count);
    }
    if (short_cells.empty()) return "";
    std::string text = "merge: " + std::to_string(short_cells.size()) + " of " + std::to_string(spec.cells()) +
                       " cells are missing repetitions (";
    for (size_t i = 0; i < short_cells.size() && i < 3; ++i) text += (i ? ", " : "") + short_cells[i];
    if (short_cells.size() > 3) text += " and " + std::to_string(short_cells.size() - 3) + " more";
    text += ")";
    if (shard_count) {
        std::string list;
        for (int i : shards) list += (list.empty() ? "" : ",") + std::to_string(i);
        text += ", from shard" + std::string(shards.size() > 1 ? "s " : " ") + list + " of " + std::to_string(*shard_count);
    }
    const bool one = shard_count && shards.size() == 1;
    return text + "; re-run " + (one ? "that shard into its tree" : shard_count ? "those shards into their trees"
                                                                                : "the shards that hold them") +
           " (done repetitions are kept) and merge again, or pass --allow-incomplete";
}

// The scenario with one swept value: refused as the file would be, the value named too.
Scenario parse_scenario_for_sweep(const Json& source, const fs::path& file, const std::string& path, const Json& value) {
    try {
        return parse_scenario(source, file.string());
    } catch (const ScenarioError& e) {
        throw ScenarioError(std::string(e.what()) + " (with --param " + path + "=" + value.dump() + ")");
    }
}

}  // namespace

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

MatrixSpec matrix_spec(const std::vector<fs::path>& files, const std::vector<std::string>& algorithms, int repeat) {
    if (repeat < 1) throw std::runtime_error("--repeat " + std::to_string(repeat) + ": must be at least 1");
    Json scenarios = Json::array(), cells = Json::array();
    std::set<std::string> names;
    for (const auto& file : files) {
        const Scenario s = load_scenario(file);
        if (!names.insert(s.name).second)
            throw std::runtime_error(file.string() + ": a second scenario named " + s.name + " in one matrix");
        for (const RunSpec& r : s.runs)
            if (selected(r, algorithms))
                cells.push_back(cell_json(cells.size(), s.name + "/" + r.name, scenarios.size(), s, r));
        scenarios.push_back({{"file", file.string()}, {"source", s.source}});
    }
    check_algorithms_match(cells, algorithms);
    return finish({{"kind", "matrix"}, {"repeat", repeat}, {"algorithms", algorithms}, {"scenarios", scenarios},
                   {"cells", cells}});
}

MatrixSpec simulated(MatrixSpec spec) {
    Json cells = Json::array();
    for (const auto& c : spec.json.at("cells"))
        if (c.at("algorithm") != "external") {
            cells.push_back(c);
            cells.back()["index"] = cells.size() - 1;
        }
    if (cells.empty()) throw std::runtime_error("--backend sim: every run here is an external library, which cannot be simulated");
    spec.json["cells"] = cells;
    spec.json["backend"] = "sim";
    return finish(spec.json);
}

MatrixSpec sweep_spec(const fs::path& file, const SweepParam& param, int steps, const std::vector<std::string>& algorithms,
                      int repeat) {
    if (repeat < 1) throw std::runtime_error("--repeat " + std::to_string(repeat) + ": must be at least 1");
    if (steps < 2) throw std::runtime_error("--steps " + std::to_string(steps) + ": a sweep needs at least 2 steps");
    const Scenario base = load_scenario(file);
    const std::vector<std::string> path = split(param.path, '.');
    Json scenarios = Json::array(), cells = Json::array(), values = Json::array();
    for (int i = 0; i < steps; ++i) {
        const double value = param.from + (param.to - param.from) * i / (steps - 1);
        Json source = base.source;
        Json shown;   // the value as set: rounded, for an integer field
        try {
            set_path(source, path, 0, value, "", shown);
        } catch (const std::exception& e) {
            throw std::runtime_error(file.string() + ": --param " + param.path + ": " + e.what());
        }
        // A value the scenario cannot take fails here, as it would in the file.
        const Scenario s = parse_scenario_for_sweep(source, file, param.path, shown);
        if (!values.empty() && values.back() == shown)
            throw std::runtime_error("--steps " + std::to_string(steps) + ": " + param.path +
                                     " is an integer field and the steps repeat a value; use fewer steps");
        values.push_back(shown);
        for (const RunSpec& r : s.runs) {
            if (!selected(r, algorithms)) continue;
            Json cell = cell_json(cells.size(), "step-" + std::to_string(i) + "/" + r.name, scenarios.size(), s, r);
            cell["step"] = i;
            cell["value"] = shown;
            cells.push_back(std::move(cell));
        }
        scenarios.push_back({{"file", file.string()}, {"source", source}});
    }
    check_algorithms_match(cells, algorithms);
    const Json sweep = {{"scenario", base.name}, {"file", file.string()}, {"path", param.path}, {"from", param.from},
                        {"to", param.to}, {"steps", steps}, {"values", values}};
    return finish({{"kind", "sweep"}, {"repeat", repeat}, {"algorithms", algorithms}, {"scenarios", scenarios},
                   {"cells", cells}, {"sweep", sweep}});
}

Json read_results_header(const fs::path& dir) {
    if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": no such folder");
    if (!fs::is_regular_file(header_path(dir)))
        throw std::runtime_error(dir.string() + ": not a lockbench results tree (no lockbench-results.json; " +
                                 "`lockbench matrix` or `lockbench sweep` makes one)");
    const Json h = read_json(header_path(dir));
    if (!h.is_object() || h.value("format", std::string()) != kResultsFormat)
        throw std::runtime_error(header_path(dir).string() + ": not a lockbench results header");
    if (h.value("version", 0) != kResultsVersion)
        throw std::runtime_error(header_path(dir).string() + ": results format version " + h.value("version", Json()).dump() +
                                 "; this lockbench continues only version " + std::to_string(kResultsVersion) +
                                 " (run the same command into a new folder to make it afresh, or bring it to version " +
                                 std::to_string(kResultsVersion) + " with `lockbench check " + dir.string() + " --write`)");
    if (!h.contains("spec") || !h.contains("spec_id") || !h.at("spec").contains("cells"))
        throw std::runtime_error(header_path(dir).string() + ": incomplete results header (no spec)");
    return h;
}

namespace {

struct Todo {
    const Json* cell;
    int rep;
    double weight;
};

// Every repetition not yet done, in rounds: every cell's first repetition, then every
// cell's second, and so on, so that a time budget that ends the work early leaves every
// cell with the same number of repetitions.
std::vector<Todo> todo_in_rounds(const MatrixSpec& spec, const MatrixOptions& opts, size_t& kept, size_t& shard_cells) {
    const int repeat = spec.json.at("repeat").get<int>();
    std::vector<Todo> todo;
    for (int k = 0; k < repeat; ++k)
        for (const auto& cell : spec.json.at("cells")) {
            if (cell.at("index").get<int>() % opts.shard.count != opts.shard.index) continue;
            if (k == 0) ++shard_cells;
            const Json& source = spec.json.at("scenarios").at(cell.at("scenario_index").get<size_t>()).at("source");
            if (rep_done(rep_dir(opts.out, cell, k))) ++kept;
            else todo.push_back({&cell, k, rep_weight(source)});
        }
    return todo;
}

void announce_matrix(const MatrixSpec& spec, const MatrixOptions& opts, size_t shard_cells, size_t kept) {
    std::cerr << "lockbench: " << spec.json.at("kind").get<std::string>() << " " << spec.id << ": " << shard_cells
              << " cells";
    if (opts.shard.count > 1) std::cerr << " in shard " << opts.shard.index << "/" << opts.shard.count;
    std::cerr << " × " << spec.json.at("repeat").get<int>() << " repetitions into " << opts.out.string();
    if (opts.budget_s) std::cerr << ", in rounds within " << clock_text(*opts.budget_s);
    if (kept) std::cerr << "; " << kept << " repetitions already done are kept";
    std::cerr << "\n";
}

std::uint64_t s_seed(const MatrixSpec& spec, const Json& cell, int rep) {
    const Json& source = spec.json.at("scenarios").at(cell.at("scenario_index").get<size_t>()).at("source");
    return source.value("seed", std::uint64_t{1}) + static_cast<std::uint64_t>(rep);
}

// One repetition of one cell: the cell's scenario cut to its run, with the repetition's seed.
Json run_repetition(const MatrixSpec& spec, const MatrixOptions& opts, const Todo& t) {
    const Json& cell = *t.cell;
    const Json& entry = spec.json.at("scenarios").at(cell.at("scenario_index").get<size_t>());
    Scenario s = parse_scenario(entry.at("source"), entry.at("file"));
    std::erase_if(s.runs, [&](const RunSpec& r) { return r.name != cell.at("run").get<std::string>(); });
    const std::uint64_t seed = s.seed + static_cast<std::uint64_t>(t.rep);
    try {
        return run_scenario(s, {rep_dir(opts.out, cell, t.rep), seed, opts.self_exe, false, opts.project_dir,
                                spec.json.value("backend", "live") == "sim"});
    } catch (const std::exception& e) {
        if (opts.progress) std::cerr << " failed\n";
        throw std::runtime_error(cell.at("id").get<std::string>() + " rep " + std::to_string(t.rep + 1) + ": " + e.what() +
                                 " (done repetitions are kept: run the same command to resume)");
    }
}

void report_repetition(const MatrixSpec& spec, const Json& summary) {
    const Json& r = summary.at("runs").at(0);
    const auto v = r.at("safety").at("mutual_exclusion_violations").get<long long>();
    std::cerr << " " << v << (v == 1 ? " violation" : " violations");
    // A sweep's steps run values the scenario's `expect` was not written for.
    if (spec.json.at("kind") == "matrix")
        std::cerr << ", expectations " << (r.at("expectations_held").get<bool>() ? "held" : "NOT held");
    std::cerr << "\n";
}

}  // namespace

Json run_matrix(const MatrixSpec& spec, const MatrixOptions& opts) {
    redis_server_binary();  // fails here, in one line, before anything is written
    prepare_out(opts.out, spec);
    const int repeat = spec.json.at("repeat").get<int>();
    size_t kept = 0, shard_cells = 0;
    const std::vector<Todo> todo = todo_in_rounds(spec, opts, kept, shard_cells);
    if (opts.progress) announce_matrix(spec, opts, shard_cells, kept);

    const auto start = std::chrono::steady_clock::now();
    const auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    double weight_done = 0, weight_left = 0;
    for (const Todo& t : todo) weight_left += t.weight;
    int rounds_run = 0;  // rounds finished by this command
    for (size_t i = 0; i < todo.size(); ++i) {
        const bool new_round = i > 0 && todo[i].rep != todo[i - 1].rep;
        if (new_round) ++rounds_run;
        // A round is started only if one more, as long as the rounds so far took on average,
        // still ends within the budget.
        if (new_round && opts.budget_s && elapsed_s() + elapsed_s() / rounds_run > *opts.budget_s) {
            if (opts.progress)
                std::cerr << "lockbench: time budget: stopping after " << todo[i].rep << " of " << repeat
                          << " repetitions per cell (" << clock_text(elapsed_s()) << " spent of " << clock_text(*opts.budget_s)
                          << ")\n";
            return write_summary(opts.out, spec.json, spec.id, opts.shard, BudgetStop{*opts.budget_s, todo[i].rep});
        }
        const Json& cell = *todo[i].cell;
        if (opts.progress) {
            const double elapsed = elapsed_s();
            const std::string eta = weight_done > 0 ? "~" + clock_text(elapsed / weight_done * weight_left) + " left"
                                                    : "estimating time left";
            std::cerr << "lockbench: [" << kept + i << "/" << kept + todo.size() << " repetitions done, "
                      << clock_text(elapsed) << " elapsed, " << eta << "] " << cell.at("id").get<std::string>() << " rep "
                      << todo[i].rep + 1 << "/" << repeat << " (seed " << s_seed(spec, cell, todo[i].rep) << ") ..."
                      << std::flush;
        }
        const Json summary = run_repetition(spec, opts, todo[i]);
        refresh_cell(opts.out, cell, repeat);
        write_summary(opts.out, spec.json, spec.id, opts.shard);
        weight_done += todo[i].weight;
        weight_left -= todo[i].weight;
        if (opts.progress) report_repetition(spec, summary);
    }
    if (opts.budget_s && opts.progress && rounds_run == 0 && elapsed_s() > *opts.budget_s)
        std::cerr << "lockbench: warning: one repetition of every cell took " << clock_text(elapsed_s())
                  << ", more than the time budget of " << clock_text(*opts.budget_s)
                  << ": scale the cases' time down (see README, \"The main job's time\")\n";
    return write_summary(opts.out, spec.json, spec.id, opts.shard);
}

Json merge_results(const fs::path& out, const std::vector<fs::path>& trees, bool allow_incomplete) {
    if (trees.empty()) throw std::runtime_error("merge: name at least one results tree to merge");
    const Json first = read_results_header(trees.front());
    for (size_t i = 1; i < trees.size(); ++i) {
        const Json h = read_results_header(trees[i]);
        if (h.at("spec_id") != first.at("spec_id"))
            throw std::runtime_error(trees[i].string() + ": holds another spec (" + h.at("spec_id").get<std::string>() +
                                     ") than " + trees.front().string() + " (" + first.at("spec_id").get<std::string>() +
                                     "); only shards of one matrix or sweep merge");
    }
    const MatrixSpec spec{first.at("spec"), first.at("spec_id")};
    // Refused before anything is written: a report of the merged tree would otherwise speak
    // of cells that never ran as if they had.
    if (!allow_incomplete) {
        const std::string missing = missing_after_merge(spec, out, trees);
        if (!missing.empty()) throw std::runtime_error(missing);
    }
    prepare_out(out, spec);
    const int repeat = spec.json.at("repeat").get<int>();
    for (const auto& tree : trees) {
        if (fs::equivalent(tree, out)) continue;
        for (const auto& cell : spec.json.at("cells")) {
            const int theirs = reps_done(tree, cell, repeat);
            if (theirs == 0 || theirs <= reps_done(out, cell, repeat)) continue;
            // The tree with more repetitions of a cell wins; the copy replaces the cell whole,
            // in one step, and the old cell goes only once the new one is in place.
            const fs::path dst = out / cell.at("dir").get<std::string>();
            const fs::path staging = make_staging(dst);
            fs::copy(tree / cell.at("dir").get<std::string>(), staging, fs::copy_options::recursive);
            replace_folder(staging, dst);
        }
    }
    return write_summary(out, spec.json, spec.id, std::nullopt);
}

std::string format_matrix_table(const Json& summary) {
    std::ostringstream out;
    char line[640];
    const bool sweep = summary.at("kind") == "sweep";
    int width = 4;
    for (const auto& c : summary.at("cells")) width = std::max(width, static_cast<int>(c.at("id").get<std::string>().size()));
    std::snprintf(line, sizeof line, "%-*s %5s %9s %16s %9s %9s %9s  %s\n", width, "cell", "reps", "viol/rep",
                  "violating (95%)", "lost/rep", "unavail", "acq p99", sweep ? "value" : "expected");
    out << line;
    for (const auto& c : summary.at("cells")) {
        const Json& a = c.at("aggregate");
        const int done = c.at("reps_done").get<int>();
        std::string verdict = "-";
        if (sweep) verdict = c.at("value").dump();
        else if (const int failed = a.value("clients_failed_reps", 0); failed > 0)
            verdict = "CLIENTS FAILED in " + std::to_string(failed) + "/" + std::to_string(done);
        else if (done > 0 && a.at("has_expectations").get<bool>())
            verdict = a.at("expectation_held").get<bool>()
                          ? "held"
                          : "NOT HELD in " + std::to_string(done - a.at("expectations_held_reps").get<int>()) + "/" +
                                std::to_string(done);
        char rate[48];
        std::snprintf(rate, sizeof rate, "%lld/%d [%.2f,%.2f]", a.at("violating_reps").get<long long>(), done,
                      a.at("violation_rate_ci95").at(0).get<double>(), a.at("violation_rate_ci95").at(1).get<double>());
        if (done == 0) {
            std::snprintf(line, sizeof line, "%-*s %2d/%-2d %s\n", width, c.at("id").get<std::string>().c_str(), done,
                          c.at("repeat").get<int>(), "not run");
        } else {
            std::snprintf(line, sizeof line, "%-*s %2d/%-2d %9.1f %16s %9.1f %7.0fms %7.2fms  %s\n",
                          width, c.at("id").get<std::string>().c_str(), done, c.at("repeat").get<int>(),
                          a.at("violations").at("mean").get<double>(), rate,
                          a.at("lost_updates").at("mean").get<double>(), a.at("unavailable_ms").at("mean").get<double>(),
                          a.at("acquire_ms").at("p99").get<double>(), verdict.c_str());
        }
        out << line;
    }
    return out.str();
}

int matrix_exit_code(const Json& summary) {
    if (summary.at("kind") == "sweep") return 0;
    for (const auto& c : summary.at("cells")) {
        const Json& a = c.at("aggregate");
        if (c.at("reps_done").get<int>() > 0 && a.at("has_expectations").get<bool>() && !a.at("expectation_held").get<bool>())
            return 1;
        if (a.value("clients_failed_reps", 0) > 0) return 1;  // an adapter broke: that cell is not trusted
    }
    return 0;
}

namespace {

// The trees `report` draws from DIR: DIR itself, or its subfolders that are trees.
std::vector<fs::path> trees_in(const fs::path& dir) {
    if (fs::exists(header_path(dir))) return {dir};
    std::vector<fs::path> trees;
    if (!fs::is_directory(dir)) return trees;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory() && !e.path().filename().string().starts_with(".") && fs::exists(header_path(e.path())))
            trees.push_back(e.path());
    std::ranges::sort(trees);
    return trees;
}

// A summary.json that is missing or malformed is left for the report, which names what is wrong.
constexpr int kSameCheckerSince = 2;
// A version 1 tree was checked by an older checker whose rules differ in places (a section
// with no end, equal fences, a witness's exit), so only damage refuses it, not its figures.
void check_tree_reps(const fs::path& tree) {
    std::ifstream header_in(header_path(tree));
    const Json header = Json::parse(header_in, nullptr, false);  // a bad one is the report's to name
    const bool same_checker = header.is_object() && header.contains("version") &&
                              header.at("version").is_number_integer() &&
                              header.at("version").get<int>() >= kSameCheckerSince;
    std::ifstream in(tree / "summary.json");
    const Json summary = Json::parse(in, nullptr, false);
    if (!summary.is_object() || !summary.contains("cells") || !summary.at("cells").is_array()) return;
    for (const Json& cell : summary.at("cells")) {
        if (!cell.is_object() || !cell.contains("reps") || !cell.at("reps").is_array()) continue;
        for (const Json& rep : cell.at("reps")) {
            if (!rep.is_object() || !rep.contains("dir") || !rep.at("dir").is_string()) continue;
            const fs::path dir = tree / rep.at("dir").get<std::string>();
            const Recheck r = recheck(dir);
            if (same_checker && !r.differences.empty())
                throw std::runtime_error(r.differences.front() + " (`lockbench check " + dir.string() + "` lists them all)");
        }
    }
}

}  // namespace

void check_trees_for_report(const std::filesystem::path& dir) {
    for (const fs::path& tree : trees_in(dir)) check_tree_reps(tree);
}

nlohmann::json read_json_file(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error(file.string() + ": cannot read");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error(file.string() + ": not valid JSON");
    return j;
}

}  // namespace lockbench
