#include "sim/harness/matrix_tree.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "analysis/aggregate.h"
#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/report_data.h"
#include "sim/harness/matrix.h"
#include "sim/harness/results_folder.h"

namespace fs = std::filesystem;

namespace lockbench {

using Json = nlohmann::json;

fs::path header_path(const fs::path& dir) { return dir / "lockbench-results.json"; }

bool rep_done(const fs::path& rep_dir) { return fs::is_regular_file(rep_dir / "summary.json"); }

fs::path rep_dir(const fs::path& out, const MatrixCell& cell, int rep) {
    return out / cell.dir / ("rep-" + std::to_string(rep));
}

int reps_done(const fs::path& out, const MatrixCell& cell, int repeat) {
    int n = 0;
    for (int k = 0; k < repeat; ++k) n += rep_done(rep_dir(out, cell, k)) ? 1 : 0;
    return n;
}

Json read_results_header(const fs::path& dir) {
    if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": no such folder");
    if (!fs::is_regular_file(header_path(dir)))
        throw std::runtime_error(dir.string() + ": not a lockbench results tree (no lockbench-results.json; " +
                                 "`lockbench matrix` or `lockbench sweep` makes one)");
    const Json h = read_json_file(header_path(dir));
    if (!h.is_object() || h.value("format", std::string()) != kResultsFormat)
        throw std::runtime_error(header_path(dir).string() + ": not a lockbench results header");
    const Json version = h.value("version", Json());
    if (!version.is_number_integer() || version.get<int>() < kOldestContinued || version.get<int>() > kResultsVersion)
        throw std::runtime_error(header_path(dir).string() + ": results format version " + version.dump() +
                                 "; this lockbench continues versions " + std::to_string(kOldestContinued) + " to " +
                                 std::to_string(kResultsVersion) +
                                 " (run the same command into a new folder to make it afresh, or bring an older one to version " +
                                 std::to_string(kOldestContinued) + " with `lockbench check " + dir.string() + " --write`)");
    if (!h.contains("spec") || !h.contains("spec_id") || !h.at("spec").contains("cells"))
        throw std::runtime_error(header_path(dir).string() + ": incomplete results header (no spec)");
    return h;
}

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
                         {"kind", spec.kind}, {"spec_id", spec.id}, {"spec", to_json(spec)}};
    write_atomically(header_path(out), header.dump(2) + "\n");
}

namespace {

// A cell's entry before its repetitions: the cell as the spec holds it, but for its run's
// place in the spec's scenarios.
Json bare_entry(const MatrixCell& cell) {
    Json entry = to_json(cell);
    entry.erase("scenario_index");
    entry.erase("run_index");
    return entry;
}

// The one run of a repetition's summary.json; none when every attempt failed to set up.
std::optional<RunSummary> rep_run(const fs::path& dir, const Json& summary) {
    if (summary.contains("could_not_run") && summary.value("runs", Json::array()).empty()) return std::nullopt;
    if (!summary.contains("runs") || summary.at("runs").size() != 1)
        throw std::runtime_error((dir / "summary.json").string() + ": not a one-run lockbench summary");
    return run_summary_from_json(summary.at("runs").at(0));
}

// A repetition's acquire latencies, as the checker wrote them beside its histories when the
// repetition was made (runs/NAME/sections.json). A tree an older lockbench wrote has none
// there, and a damaged file has none to trust (the report refuses it later): their history
// goes through the checker again. Read once per repetition for as long as this process lives
// (a cell is refreshed after each of its repetitions; the key holds the time summary.json,
// the repetition's last file, was written).
const std::vector<double>& acquire_samples(const fs::path& dir, const std::string& run) {
    static std::map<std::string, std::vector<double>> known;
    const fs::path run_dir = dir / "runs" / run;
    const auto written = fs::last_write_time(dir / "summary.json").time_since_epoch().count();
    const std::string key = run_dir.string() + "@" + std::to_string(written);
    if (const auto it = known.find(key); it != known.end()) return it->second;
    if (fs::is_regular_file(run_dir / kSectionsFile)) {
        std::ifstream in = open_results_file(run_dir / kSectionsFile);
        const Json sections = Json::parse(in, nullptr, false);
        if (sections.is_object() && sections.contains("acquire_ms") && sections.at("acquire_ms").is_array() &&
            std::ranges::all_of(sections.at("acquire_ms"), &Json::is_number))
            return known[key] = sections.at("acquire_ms").get<std::vector<double>>();
    }
    return known[key] = check(load_run_history(run_dir), {.max_witnesses = 0}).acquire_samples_ms;
}

}  // namespace

Json refresh_cell(const fs::path& out, const MatrixCell& cell, int repeat) {
    Json entry = bare_entry(cell);
    Json reps = Json::array(), not_as_written = Json::array(), could_not_force = Json::array();
    std::vector<double> acquire_ms;
    for (int k = 0; k < repeat; ++k) {
        const fs::path dir = rep_dir(out, cell, k);
        if (!rep_done(dir)) continue;
        // Every attempt that did not happen as written (matrix.cpp: run_tree_repetition), then
        // the repetition itself: counted only when its last attempt did.
        const Json summary = read_json_file(dir / "summary.json");
        for (const Json& a : summary.value("attempts", Json::array()))
            not_as_written.push_back({{"rep", k}, {"attempt", a.value("attempt", 0)}, {"reason", a.value("reason", "")}});
        const std::optional<RunSummary> run = rep_run(dir, summary);
        if (!run || !run->as_written()) {
            const std::string why = run ? run->not_as_written.front() : summary.value("could_not_run", std::string());
            could_not_force.push_back({{"rep", k}, {"reason", why}, {"dir", fs::relative(dir, out).string()}});
            continue;
        }
        Json figures = rep_figures(*run);
        figures["rep"] = k;
        figures["dir"] = fs::relative(dir, out).string();
        reps.push_back(std::move(figures));
        const std::vector<double>& samples = acquire_samples(dir, cell.run);
        acquire_ms.insert(acquire_ms.end(), samples.begin(), samples.end());
    }
    entry["repeat"] = repeat;
    entry["reps_done"] = reps.size() + could_not_force.size();
    entry["reps_as_written"] = reps.size();
    entry["not_as_written"] = std::move(not_as_written);
    entry["could_not_force"] = std::move(could_not_force);
    entry["complete"] = entry["reps_done"].get<int>() == repeat;
    entry["aggregate"] = aggregate_reps(reps, acquire_ms);
    entry["reps"] = std::move(reps);
    write_atomically(out / cell.dir / "cell.json", entry.dump(2) + "\n");
    return entry;
}

namespace {

Json cell_entry(const fs::path& out, const MatrixCell& cell, int repeat, CellEntries* known) {
    const int done = reps_done(out, cell, repeat);
    if (known) {
        const auto it = known->find(cell.id);
        if (it != known->end() && it->second.value("reps_done", -1) == done) return it->second;
        Json entry = cell_entry(out, cell, repeat, nullptr);
        (*known)[cell.id] = entry;
        return entry;
    }
    const fs::path file = out / cell.dir / "cell.json";
    if (fs::is_regular_file(file)) {
        Json entry = read_json_file(file);
        if (entry.value("reps_done", -1) == done) return entry;
    }
    if (done > 0) return refresh_cell(out, cell, repeat);
    Json entry = bare_entry(cell);
    std::vector<double> none;
    entry.update({{"repeat", repeat}, {"reps_done", 0}, {"reps_as_written", 0}, {"not_as_written", Json::array()},
                  {"could_not_force", Json::array()}, {"complete", false}, {"reps", Json::array()},
                  {"aggregate", aggregate_reps(Json::array(), none)}});
    return entry;
}

Json scenarios_overview(const MatrixSpec& spec) {
    Json out = Json::array();
    std::set<std::string> seen;
    for (const SpecScenario& s : spec.scenarios) {
        const Json& src = s.source;
        if (!seen.insert(src.value("name", std::string())).second) continue;
        out.push_back({{"name", src.value("name", std::string())}, {"description", src.value("description", std::string())},
                       {"faults", src.value("faults", Json::array())}});
    }
    return out;
}

}  // namespace

Json write_summary(const fs::path& out, const MatrixSpec& spec, std::optional<Shard> shard, std::optional<BudgetStop> stop,
                   CellEntries* known) {
    Json cells = Json::array(), incomplete = Json::array();
    for (const MatrixCell& cell : spec.cells) {
        cells.push_back(cell_entry(out, cell, spec.repeat, known));
        // A cell the time budget left at its rounds is as planned, not missing anything.
        const bool budgeted = stop && cells.back().at("reps_done").get<int>() >= stop->repetitions_per_cell;
        if (!cells.back().at("complete").get<bool>() && !budgeted) incomplete.push_back(cell.id);
    }
    // The tree's own version: a version 6 tree continued here stays 6.
    const int version = read_json_file(header_path(out)).value("version", kResultsVersion);
    Json summary = {{"format", kResultsFormat}, {"version", version}, {"kind", spec.kind},
                    {"spec_id", spec.id}, {"repeat", spec.repeat}, {"scenarios", scenarios_overview(spec)},
                    {"cells", cells}, {"incomplete_cells", incomplete}};
    if (shard) summary["shard"] = {{"index", shard->index}, {"count", shard->count}};
    if (spec.sweep) summary["sweep"] = to_json(*spec.sweep);
    if (!spec.not_applicable.empty()) summary["not_applicable"] = spec.not_applicable;
    if (!spec.locks.empty()) summary["locks"] = spec.locks;
    // Cells short of `repeat` because the time budget ran out, not because the work broke off.
    if (stop) summary["budget"] = {{"seconds", stop->seconds}, {"repetitions_per_cell", stop->repetitions_per_cell}};
    write_atomically(out / "summary.json", summary.dump(2) + "\n");
    return summary;
}

}  // namespace lockbench
