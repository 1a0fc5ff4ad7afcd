#include "sim/harness/derived_files.h"

#include <algorithm>

#include "analysis/run_summary.h"
#include "sim/harness/matrix.h"
#include "sim/harness/matrix_tree.h"
#include "sim/harness/recheck.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/runner.h"

namespace lockbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Every repetition folder the tree's summary lists.
std::vector<fs::path> rep_dirs(const fs::path& tree) {
    const fs::path file = tree / "summary.json";
    const Json summary = read_json_file(file);
    if (!summary.is_object() || !summary.contains("cells") || !summary.at("cells").is_array())
        throw std::runtime_error(file.string() + ": has no \"cells\" list");
    std::vector<fs::path> dirs;
    for (const Json& cell : summary.at("cells"))
        for (const Json& rep : cell.value("reps", Json::array()))
            if (rep.is_object() && rep.contains("dir") && rep.at("dir").is_string())
                dirs.push_back(tree / rep.at("dir").get<std::string>());
    return dirs;
}

// Results version 6 writes each run's verdict (analysis/verdict.h) into its summary entry, and
// each cell's repetitions and aggregate carry them: an older tree gets them from its figures,
// the same words a run of this version writes.
void add_verdicts(const fs::path& tree) {
    for (const fs::path& rep : rep_dirs(tree)) {
        Json summary = read_json_file(rep / "summary.json");
        for (Json& run : summary.at("runs")) run = to_json(run_summary_from_json(run));
        // Its time stays the repetition's: the report says when the repetitions were recorded.
        const fs::file_time_type recorded = fs::last_write_time(rep / "summary.json");
        write_atomically(rep / "summary.json", summary.dump(2) + "\n");
        fs::last_write_time(rep / "summary.json", recorded);
    }
    const Json header = read_json_file(header_path(tree));
    const MatrixSpec spec = matrix_spec_from_json(header.at("spec"), header.at("spec_id").get<std::string>());
    Json summary = read_json_file(tree / "summary.json");
    for (Json& entry : summary.at("cells"))
        for (const MatrixCell& cell : spec.cells)
            if (cell.id == entry.value("id", std::string()) && entry.value("reps_done", 0) > 0)
                entry = refresh_cell(tree, cell, spec.repeat);
    write_atomically(tree / "summary.json", summary.dump(2) + "\n");
}

// The tree's header and summary, marked as the oldest version this lockbench continues, if
// older (nothing else in them changes): their histories are still the older version's.
void mark_version(const fs::path& tree) {
    for (const char* name : {"lockbench-results.json", "summary.json"}) {
        Json j = read_json_file(tree / name);
        const Json v = j.value("version", Json());
        j["version"] = v.is_number_integer() ? std::max(v.get<int>(), kOldestContinued) : kOldestContinued;
        write_atomically(tree / name, j.dump(2) + "\n");
    }
}

void refuse_newer(const fs::path& tree) {
    const fs::path file = tree / "lockbench-results.json";
    const Json header = read_json_file(file);
    if (!header.is_object() || header.value("format", std::string()) != kResultsFormat)
        throw std::runtime_error(file.string() + ": not a lockbench results header");
    const Json version = header.value("version", Json());
    if (!version.is_number_integer() || version.get<int>() < 1 || version.get<int>() > kResultsVersion)
        throw std::runtime_error(file.string() + ": results format version " + version.dump() + "; this lockbench knows 1 to " +
                                 std::to_string(kResultsVersion));
}

}  // namespace

DerivedWritten write_derived_files(const fs::path& dir) {
    const bool tree = fs::exists(dir / "lockbench-results.json");
    if (tree) refuse_newer(dir);
    std::vector<Recheck> checked;
    DerivedWritten out;
    for (const fs::path& run_folder : tree ? rep_dirs(dir) : std::vector<fs::path>{dir}) {
        checked.push_back(recheck(run_folder));
        out.differences.insert(out.differences.end(), checked.back().differences.begin(), checked.back().differences.end());
    }
    if (!out.differences.empty()) return out;
    for (const Recheck& r : checked) {
        write_derived(r);
        out.runs += static_cast<long long>(r.derived.size());
    }
    if (tree) {
        add_verdicts(dir);
        mark_version(dir);
    }
    return out;
}

}  // namespace lockbench
