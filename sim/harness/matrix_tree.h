// A results tree on disk (matrix.h draws it): its header, each cell's repetition folders,
// cell.json and the tree's summary.json. Shared by running a matrix and merging trees.
#pragma once

#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "sim/harness/matrix_spec.h"

namespace lockbench {

std::filesystem::path header_path(const std::filesystem::path& dir);
std::filesystem::path rep_dir(const std::filesystem::path& out, const MatrixCell& cell, int rep);
// A repetition is done when its summary.json exists (it is written last).
bool rep_done(const std::filesystem::path& rep_dir);
int reps_done(const std::filesystem::path& out, const MatrixCell& cell, int repeat);

// Makes OUT a tree of this spec, or checks that it is one already (to resume into it).
void prepare_out(const std::filesystem::path& out, const MatrixSpec& spec);

// Re-reads a cell's done repetitions into its entry (cell.json): each repetition that happened
// as written, with its figures, and their aggregate with every acquire latency pooled;
// "reps_as_written"; "not_as_written", every attempt that did not, {rep, attempt, reason}
// (each was run again); "could_not_force", the repetitions none of whose attempts did, {rep,
// reason, dir}: no evidence, counted in no figure and no verdict.
nlohmann::json refresh_cell(const std::filesystem::path& out, const MatrixCell& cell, int repeat);

// Where a time budget ended a matrix: every cell has this many repetitions of `repeat`.
struct BudgetStop {
    double seconds;
    int repetitions_per_cell;
};

// The cells' entries as last read or written, by cell id: a matrix that writes its summary
// after every repetition reads each cell.json once, not once per repetition.
using CellEntries = std::map<std::string, nlohmann::json>;

// Writes OUT/summary.json from the cells' entries and returns it. `shard` is the one this
// tree was run as (a merged tree has none): `merge` reads its count to name the shards that
// hold what is missing. `known` (kept by the caller) holds entries already read; an entry whose
// count of done repetitions no longer matches the folder is read again.
nlohmann::json write_summary(const std::filesystem::path& out, const MatrixSpec& spec, std::optional<Shard> shard,
                             std::optional<BudgetStop> stop = std::nullopt, CellEntries* known = nullptr);

}  // namespace lockbench
