// `lockbench verdict LOCK`: one lock's verdict, every case that applies to it, in one
// results tree with a one-page report.
//
//   LOCK ──► compose with every case of the catalog (compose.h; its own record as the check)
//        ──► a matrix of those cells, N repetitions (matrix.h) ──► OUT/ (a results tree)
//        ──► OUT/verdict.json: its row (a verdict per failure class), each case's verdict,
//            witness, replay command and remedy, the reference rows from their lock files
//        ──► OUT/report.html, report.md (the report, report/, draws verdict.json)
//
// verdict.json ("format": "lockbench-verdict", version 2; version 1 had no discovered/discover):
//   lock, lock_file, description, facts (what the lock file says it is and offers), library
//   (what its adapter's ready line said, or "built-in"), repeat,
//   classes: [{class, verdict, repetitions, counts: {word: reps}, cases, recorded?}, or
//             {class, verdict: "not applicable", why}]      in the verdict table's order
//   cases:   [{case, variant, class, cell, verdict, repetitions, counts, expectations_held,
//              recorded?, predicted?, predicted_why?, remedy?, witness?, replay?}, ...]
//   not_applicable: [{case, variant, class, why}, ...]
//   reference: [{lock, description, classes: {class: {"verdict": word(s), "why"?: [...]}}}]
//              from their records; "—" with why (each case's reason) where no case of the
//              class applies, "not recorded" where the lock records nothing for it
//   differences: one line per case whose verdict differs from the lock's record, or that
//                did not happen as written
//   discovered:  what `--discover` found (live_search.h), [] without it; discover: what it
//                tried (coverage), null without it
//   versus:      with `verdict --versus OTHER` only: where this lock's verdict and OTHER's
//                differ (`versus` below)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/case_file.h"
#include "sim/engine/lock_file.h"

namespace lockbench {

inline constexpr const char* kVerdictFile = "verdict.json";

struct VerdictOptions {
    std::filesystem::path out;
    int repeat = 3;
    std::string self_exe;
    std::filesystem::path project_dir;
    bool progress = true;
    int jobs = 1;                        // repetitions at once (MatrixOptions::jobs)
};

// Runs every case of `cases` that applies to `lock` into OUT, writes OUT/verdict.json and
// returns it. `reference`: the locks whose recorded rows stand beside this one (not run).
nlohmann::json run_verdict(const LockFile& lock, const std::vector<CaseFile>& cases, const std::vector<LockFile>& reference,
                           const VerdictOptions& opts);

// verdict.json from a tree `run_verdict` made (the figures read back from its summary).
nlohmann::json verdict_of_tree(const std::filesystem::path& tree, const LockFile& lock, const std::vector<CaseFile>& cases,
                               const std::vector<LockFile>& reference);

// Where two locks' verdicts differ (the same library at two versions: `verdict --versus`),
// class by class and case by case, from their verdict.json (`mine`, `theirs`):
//   {lock, library, verdict: theirs_path,
//    classes: [{class, here, there, differs}]  every class either runs, in the table's order;
//              here/there: "2 holders 3/3" (its words' counts) or "not applicable"; differs:
//              their verdict words differ (counts alone, as "2 holders 1/3" against 3/3, do not)
//    cases:   [{case, variant, class, here, there}]  the cases whose verdict words differ, and
//             those one side ran and the other did not ("not applicable", "could not force")
//    cases_same: how many cases both ran with the same verdict word (a known bug's, which has
//             no class, among them)
//    same:    no class differs, and no case both ran differs}
nlohmann::json versus(const nlohmann::json& mine, const nlohmann::json& theirs, const std::string& theirs_path);

// The reference rows verdict.json shows: the locks of `locks` whose file says "reference": true
// (token-lua, Redlock, ZooKeeper and etcd, fenced and not), in the folder's order.
std::vector<LockFile> reference_locks(const std::vector<LockFile>& locks);

}  // namespace lockbench
