// Matrices and sweeps: many runs, each a cell of one results tree.
//
//   lockbench matrix  scenarios × their runs (algorithms)        ─┐  cells, each run N times
//   lockbench sweep   one scenario, one field varied in K steps ─┘  (repetitions, seeds s..s+N-1)
//
// A results tree:
//
//   OUT/lockbench-results.json     what was asked for (the spec) and its id; written first
//   OUT/summary.json               every cell: each repetition's figures and their aggregate
//   OUT/cells/<cell>/rep-<k>/      one `lockbench run` folder per repetition (summary.json last)
//   OUT/cells/<cell>/cell.json     the cell's entry of summary.json
//
// A repetition is done when its summary.json exists, so a tree interrupted at any point
// resumes by running the same command again: done repetitions are kept. Cells are numbered;
// `--shard I/N` runs the cells whose index is I modulo N, and `merge` joins the trees of
// shards of one spec. Repetitions run in rounds (every cell's first, then every cell's
// second, ...), so a time budget (`--time-budget-s`) that stops the work between rounds
// leaves every cell with the same number of repetitions.
//
//   matrix_spec.h   what a tree holds (MatrixSpec), made from scenario files or a sweep
//   matrix_tree.h   the tree on disk: header, repetition folders, cell.json, summary.json
//   matrix.cpp      running the cells; merge.cpp: joining shards; matrix_table.cpp: the table
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/harness/matrix_spec.h"

namespace lockbench {

inline constexpr const char* kResultsFormat = "lockbench-results";
// Version 2 added to summary.json: `budget` (a time budget ended the rounds),
// `incomplete_cells` and, in a shard's own tree, `shard`. Version 3 added each run's
// sections.json (analysis/report_data.h), which the report reads: `lockbench check TREE
// --write` brings an older tree to version 3. Version 4 added `safety.lost_update_share` (each
// run's summary and each cell's aggregates), run.json's `resource_check` and `renew`, the
// history ops `renew` and `lost`, and nemesis.jsonl's `occurrence` and `skipped` lines: all
// additions, so the report reads version 3 as it is (its runs have none of them), and
// `lockbench check TREE --write` marks a version 3 tree as 4 for a matrix to continue it.
// Version 5 added an external run's `adapter` (what its ready line said: library, algorithm,
// fencing) to run.json and the summary, the scenario's `failure_class` and a run's
// `table_row`, the `validity` figures and the acquire's `key_ttl_ms` of a run with
// `probe_key_ttl`, and each run's adapter/ folder (the adapters' stderr): additions again, read from versions 3 and 4 as they
// are, and `check --write` marks such a tree as 5. Version 6 made the catalog cases × locks:
// each run's summary entry and each repetition's figures carry the run's "verdict" (the
// verdict table's word, analysis/verdict.h) and a lock file's run its "lock" and "variant";
// a cell's aggregate counts the repetitions of each verdict ("verdicts"); a matrix's summary
// lists the (case, lock) cells that do not exist and why ("not_applicable"). The report reads
// the verdicts rather than deriving them: `lockbench check TREE --write` gives an older tree
// them (and marks it 6). Version 7 tells a release the library did not describe from one that
// removed nothing: an adapter's release answered without `removed_on` is a history line
// without "nodes" (version 6 wrote "nodes": [] for both). Nothing reads the two differently
// yet, so a version 6 tree is read and continued as it is, and stays version 6 (its empty
// lists mean either, which what this version adds does not contradict); a merge of 6 and 7 is 6.
inline constexpr int kResultsVersion = 7;
inline constexpr int kOldestContinued = 6;

struct MatrixOptions {
    std::filesystem::path out;
    Shard shard;
    std::string self_exe;
    bool progress = true;
    std::filesystem::path project_dir;  // where an external adapter's command runs
    // Work in rounds (every cell once, then again, up to `repeat`) and start a round only if
    // it is expected to end within this many seconds of the command's start; the summary
    // then says where the budget stopped it (`budget`). Unset: every repetition runs.
    std::optional<double> budget_s;
    // Repetitions running at once, each in a child process (`lockbench repetition`) with its
    // own servers; a case with `"alone": true` runs beside no other case's, two at most. The
    // simulator runs one at a time in this process.
    int jobs = 1;
};

// One repetition of one cell into its folder of the tree OUT; returns its summary.
// `adapter_preflight`: RunOptions::adapter_preflight (false once a repetition of the same
// lock has run in this matrix: its adapter started then).
nlohmann::json run_tree_repetition(const RepetitionPart& part, const std::filesystem::path& out,
                                   const std::string& self_exe, const std::filesystem::path& project_dir,
                                   bool adapter_preflight = true);

// A repetition none of whose attempts could run (set-up failed each time): its summary.json
// says why ("could_not_run") and holds no run; its cell counts it as could not force.
void record_could_not_run(const std::filesystem::path& out, const MatrixCell& cell, int rep, const std::string& why,
                          nlohmann::json attempts);

// `lockbench repetition OUT PART`: the same, handed its part in the file PART (to_json of a
// RepetitionPart); what run_matrix starts in a child process for each repetition when it
// runs several at once.
void run_repetition_of_tree(const std::filesystem::path& out, const std::filesystem::path& part_file,
                            const std::string& self_exe, const std::filesystem::path& project_dir,
                            bool adapter_preflight = true);

// One repetition of a round, as the order of a round's starts sees it.
struct RoundRepetition {
    std::size_t case_index = 0;  // its case (the cells of one case load the machine alike)
    double seconds = 0;          // expected length (its workload's duration, plus start-up)
    bool alone = false;          // its case runs apart from the others' (`"alone": true`)
};

// The order in which a round's repetitions start when several run side by side (indices
// into `round`): each case's repetitions spread evenly through the round, so that neighbours
// are of different cases and no case crowds one part of it (long repetitions that load the
// machine little, a Sentinel's failover waiting seconds, once filled a round's first minute
// and left a core idle); the long ones (6 s or more) within its first three quarters, so that
// it ends on short ones; the alone cases' last, in the same order among themselves. Ties
// keep the given order.
std::vector<std::size_t> round_order(const std::vector<RoundRepetition>& round);

// Runs the shard's cells that are not done yet and returns the tree's summary (also written
// to OUT/summary.json as repetitions end, at most every 5 s, and at the end). Throws
// std::runtime_error on bad input or a failed run; what was done stays done.
nlohmann::json run_matrix(const MatrixSpec& spec, const MatrixOptions& opts);

// Joins result trees of one spec into OUT (made if missing). Throws on trees of different
// specs, or a folder that is not a results tree, and, unless `allow_incomplete`, when a cell
// would be left with fewer repetitions than the spec asks for (writing nothing). The
// merged summary lists such cells in `incomplete_cells`.
nlohmann::json merge_results(const std::filesystem::path& out, const std::vector<std::filesystem::path>& trees,
                             bool allow_incomplete);

// Reads OUT/lockbench-results.json, checking format and version; throws with one line.
nlohmann::json read_results_header(const std::filesystem::path& dir);

// Before a report is drawn from DIR (a results tree, or a folder of them, as `report` takes
// it): every repetition the trees list, checked again as `lockbench check` does. Throws one
// line naming the first damaged file, or the first figure a summary.json holds that its
// histories do not give. A folder with no tree in it is left for the report to refuse.
void check_trees_for_report(const std::filesystem::path& dir);

std::string format_matrix_table(const nlohmann::json& summary);

// The expectations a run missed, from its "expectations" list, each with the value it had:
// "sections_completed >= 8 (7)".
std::string missed_expectations(const nlohmann::json& expectations);

// A matrix's repetitions whose expectations did not hold, a line each with what they missed
// and their folder ("" when none): printed after the table, so that the end of a long log
// names them.
std::string format_missed(const nlohmann::json& summary);

// The attempts that did not happen as written and were run again, and the repetitions that
// could not be forced, a line each ("" when none).
std::string format_not_as_written(const nlohmann::json& summary);

// 1 when an expectation did not hold in a repetition that happened as written (a sweep's
// steps are meant to cross the expectation, so a sweep only fails on errors); else 3
// (kNotForcedExit) when a repetition could not be forced; else 0.
int matrix_exit_code(const nlohmann::json& summary);

}  // namespace lockbench
