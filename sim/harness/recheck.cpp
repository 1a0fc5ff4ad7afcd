#include "sim/harness/recheck.h"

#include <algorithm>
#include <fstream>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "analysis/report_data.h"
#include "sim/engine/run_record.h"
#include "sim/engine/summary.h"
#include "sim/harness/results_folder.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

// A run_dir from summary.json that would lead out of the results folder (a component "..",
// or an absolute path); a run named "a..b" is fine.
bool escapes(const std::string& run_dir) {
    const fs::path p(run_dir);
    return p.is_absolute() || std::ranges::any_of(p, [](const fs::path& part) { return part == ".."; });
}

// The run's record, or one line naming the file and the field it lacks.
RunRecord read_record(const nlohmann::json& record, const fs::path& file) {
    try {
        return run_record_from_json(record);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(file.string() + ": not a lockbench run record: " + e.what());
    }
}

}  // namespace

CheckedRun check_run(const fs::path& run_dir, const RunRecord& record) {
    const RunHistory h = load_run_history(run_dir);
    const CheckResult r = check(h);
    CheckedRun out{run_summary(record, r, h), report_data_json(h, r)};
    // What lets a reader trust these figures without the checker (checked_as_recorded).
    out.sections["checked"] = {{"checker", checker_id()}, {"files", run_files_digest(run_dir)}, {"run", to_json(out.summary)}};
    return out;
}

bool checked_as_recorded(const fs::path& dir) {
    try {
        std::ifstream in = open_results_file(dir / "summary.json");
        const nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
        if (!summary.is_object() || !summary.contains("runs") || !summary.at("runs").is_array() || summary.at("runs").empty())
            return false;
        for (const nlohmann::json& stored : summary.at("runs")) {
            const std::string run_dir = stored.is_object() ? stored.value("run_dir", "") : "";
            if (run_dir.empty() || escapes(run_dir)) return false;
            std::ifstream sections_in = open_results_file(dir / run_dir / kSectionsFile);
            const nlohmann::json sections = nlohmann::json::parse(sections_in, nullptr, false);
            const nlohmann::json* checked = sections.is_object() && sections.contains("checked") ? &sections.at("checked") : nullptr;
            if (!checked || !checked->is_object() || checked->value("checker", "") != checker_id() ||
                checked->value("files", "") != run_files_digest(dir / run_dir) || !checked->contains("run"))
                return false;
            // The run as summary.json holds it, exactly: a figure either side lacks is a difference
            // here (figure_differences forgives one the older side lacks).
            if (checked->at("run") != stored) return false;
        }
        return true;
    } catch (const std::exception&) {
        return false;  // damage: recheck names it
    }
}

Recheck recheck(const fs::path& dir) {
    const fs::path summary_file = dir / "summary.json";
    if (fs::is_directory(dir / "cells") && fs::exists(dir / "lockbench-results.json"))
        throw std::runtime_error(dir.string() + ": a matrix's results tree; check reads one repetition's folder (" +
                                 (dir / "cells" / "<case>" / "<lock>" / "rep-<k>").string() +
                                 "), and `lockbench report` checks the whole tree");
    if (!fs::is_directory(dir / "runs") || !fs::is_regular_file(summary_file))
        throw std::runtime_error(dir.string() + ": not a complete lockbench results folder (" +
                                 (fs::is_regular_file(summary_file) ? "no runs/" : "no summary.json") + ")");
    std::ifstream summary_in = open_results_file(summary_file);
    const nlohmann::json recorded = nlohmann::json::parse(summary_in, nullptr, false);
    if (recorded.is_discarded() || !recorded.is_object() || !recorded.contains("runs") || !recorded.at("runs").is_array())
        throw std::runtime_error(summary_file.string() + ": not a lockbench summary");
    Recheck out;
    out.summary = {{"scenario", recorded.value("scenario", "")}, {"runs", nlohmann::json::array()}};
    for (const auto& stored : recorded.at("runs")) {
        const std::string run_dir = stored.is_object() ? stored.value("run_dir", "") : "";
        const std::string name = stored.is_object() ? stored.value("name", "") : "";
        if (run_dir.empty() || name.empty() || escapes(run_dir))
            throw std::runtime_error(summary_file.string() + ": a run without a name and a run_dir under runs/");
        std::ifstream in = open_results_file(dir / run_dir / "run.json");
        const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
        if (record.is_discarded() || !record.is_object() || !record.contains("final_counter"))
            throw std::runtime_error((dir / run_dir / "run.json").string() + ": missing or not a lockbench run record");
        CheckedRun checked = check_run(dir / run_dir, read_record(record, dir / run_dir / "run.json"));
        out.derived.emplace_back(dir / run_dir / kSectionsFile, std::move(checked.sections));
        nlohmann::json run = to_json(checked.summary);
        for (const std::string& d : figure_differences(stored, run))
            out.differences.push_back(summary_file.string() + ": run " + name + ": " + d);
        out.summary["runs"].push_back(std::move(run));
    }
    if (out.summary["runs"].empty()) throw std::runtime_error(dir.string() + ": no recorded runs under runs/");
    return out;
}

void write_derived(const Recheck& r) {
    for (const auto& [file, json] : r.derived) write_atomically(file, json.dump() + "\n");
}

}  // namespace lockbench
