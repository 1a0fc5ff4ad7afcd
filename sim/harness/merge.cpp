// `lockbench merge`: joining the trees of one spec's shards; and, before a report, checking
// every repetition a tree lists again.
#include <algorithm>
#include <fstream>
#include <set>

#include "analysis/history_io.h"
#include "sim/harness/matrix.h"
#include "sim/harness/matrix_tree.h"
#include "sim/harness/recheck.h"
#include "sim/harness/results_folder.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

using Json = nlohmann::json;

// The shard count the trees were run with, if they say and agree (a merged tree says none).
std::optional<int> shard_count_of(const std::vector<fs::path>& trees) {
    std::optional<int> count;
    for (const auto& tree : trees) {
        if (!fs::is_regular_file(tree / "summary.json")) continue;
        const Json s = read_json_file(tree / "summary.json");
        if (!s.contains("shard")) continue;
        const int n = s.at("shard").value("count", 0);
        if (count && *count != n) return std::nullopt;
        count = n;
    }
    return count;
}

// The line that names the cells a merge would leave short (`short_cells`) and the shards that hold them.
std::string missing_text(const MatrixSpec& spec, const std::vector<std::string>& short_cells, const std::set<int>& shards,
                         std::optional<int> shard_count) {
    std::string text = "merge: " + std::to_string(short_cells.size()) + " of " + std::to_string(spec.cell_count()) +
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

// One line saying which cells a merge of `trees` into `out` would leave short of their
// repetitions, and which shards hold them; empty when none would be.
std::string missing_after_merge(const MatrixSpec& spec, const fs::path& out, const std::vector<fs::path>& trees) {
    const bool out_is_ours = fs::is_regular_file(header_path(out)) && read_results_header(out).at("spec_id") == spec.id;
    std::vector<std::string> short_cells;
    std::set<int> shards;
    const std::optional<int> shard_count = shard_count_of(trees);
    for (const MatrixCell& cell : spec.cells) {
        int most = out_is_ours ? reps_done(out, cell, spec.repeat) : 0;
        for (const auto& tree : trees) most = std::max(most, reps_done(tree, cell, spec.repeat));
        if (most == spec.repeat) continue;
        short_cells.push_back(cell.id + " has " + std::to_string(most) + " of " + std::to_string(spec.repeat));
        if (shard_count) shards.insert(static_cast<int>(cell.index) % *shard_count);
    }
    return short_cells.empty() ? "" : missing_text(spec, short_cells, shards, shard_count);
}

// The spec the trees share, from the first one's header; throws on a tree of another spec.
MatrixSpec common_spec(const std::vector<fs::path>& trees) {
    const Json first = read_results_header(trees.front());
    for (size_t i = 1; i < trees.size(); ++i) {
        const Json h = read_results_header(trees[i]);
        if (h.at("spec_id") != first.at("spec_id"))
            throw std::runtime_error(trees[i].string() + ": holds another spec (" + h.at("spec_id").get<std::string>() +
                                     ") than " + trees.front().string() + " (" + first.at("spec_id").get<std::string>() +
                                     "); only shards of one matrix or sweep merge");
    }
    return matrix_spec_from_json(first.at("spec"), first.at("spec_id").get<std::string>());
}

// The merged tree is as old as its oldest part (matrix.h: kOldestContinued): a version 6
// shard's histories keep version 6's meaning in it.
void keep_oldest_version(const fs::path& out, const std::vector<fs::path>& trees) {
    const auto version_of = [](const fs::path& t) { return read_json_file(header_path(t)).value("version", kResultsVersion); };
    int oldest = version_of(out);
    for (const auto& t : trees) oldest = std::min(oldest, version_of(t));
    Json h = read_json_file(header_path(out));
    if (h.value("version", kResultsVersion) == oldest) return;
    h["version"] = oldest;
    write_atomically(header_path(out), h.dump(2) + "\n");
}

}  // namespace

Json merge_results(const fs::path& out, const std::vector<fs::path>& trees, bool allow_incomplete) {
    if (trees.empty()) throw std::runtime_error("merge: name at least one results tree to merge");
    const MatrixSpec spec = common_spec(trees);
    // Refused before anything is written: a report of the merged tree would otherwise speak
    // of cells that never ran as if they had.
    if (!allow_incomplete) {
        const std::string missing = missing_after_merge(spec, out, trees);
        if (!missing.empty()) throw std::runtime_error(missing);
    }
    prepare_out(out, spec);
    keep_oldest_version(out, trees);
    for (const auto& tree : trees) {
        if (fs::equivalent(tree, out)) continue;
        for (const MatrixCell& cell : spec.cells) {
            const int theirs = reps_done(tree, cell, spec.repeat);
            if (theirs == 0 || theirs <= reps_done(out, cell, spec.repeat)) continue;
            // The tree with more repetitions of a cell wins; the copy replaces the cell whole,
            // in one step, and the old cell goes only once the new one is in place.
            const fs::path dst = out / cell.dir;
            const fs::path staging = make_staging(dst);
            fs::copy(tree / cell.dir, staging, fs::copy_options::recursive);
            replace_folder(staging, dst);
        }
    }
    return write_summary(out, spec, std::nullopt);
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

// Whether the tree's header says the checker that wrote it is this one's (version 2 or later:
// version 3 added only files the report reads).
constexpr int kSameCheckerSince = 2;
bool same_checker(const fs::path& tree) {
    std::ifstream header_in = open_results_file(header_path(tree));
    const Json header = Json::parse(header_in, nullptr, false);  // a bad one is the report's to name
    return header.is_object() && header.contains("version") && header.at("version").is_number_integer() &&
           header.at("version").get<int>() >= kSameCheckerSince;
}

// A summary.json that is missing or malformed is left for the report, which names what is wrong.
// A version 1 tree was checked by an older checker whose rules differ in places (a section
// with no end, equal fences, a witness's exit), so only damage refuses it, not its figures.
void check_tree_reps(const fs::path& tree) {
    const bool figures_count = same_checker(tree);
    std::ifstream in = open_results_file(tree / "summary.json");
    const Json summary = Json::parse(in, nullptr, false);
    if (!summary.is_object() || !summary.contains("cells") || !summary.at("cells").is_array()) return;
    for (const Json& cell : summary.at("cells")) {
        if (!cell.is_object() || !cell.contains("reps") || !cell.at("reps").is_array()) continue;
        for (const Json& rep : cell.at("reps")) {
            if (!rep.is_object() || !rep.contains("dir") || !rep.at("dir").is_string()) continue;
            const fs::path dir = tree / rep.at("dir").get<std::string>();
            if (checked_as_recorded(dir)) continue;  // the checker's figures, from these files: it ran once
            const Recheck r = recheck(dir);
            if (figures_count && !r.differences.empty())
                throw std::runtime_error(r.differences.front() + " (`lockbench check " + dir.string() + "` lists them all)");
        }
    }
}

}  // namespace

void check_trees_for_report(const std::filesystem::path& dir) {
    for (const fs::path& tree : trees_in(dir)) check_tree_reps(tree);
}

}  // namespace lockbench
