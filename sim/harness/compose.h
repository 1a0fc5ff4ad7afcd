// The catalog, composed: every case × every lock it applies to. A (case, lock) cell is
// resolved here, once, into the run it makes (scenario.h's RunSpec, a run of the explicit
// scenario composed): the lock's algorithm or adapter with the case's TTL, the case's workload
// and faults (scaled to the lock's time where it cannot take the case's TTL), what it expects.
// The composed scenario is parsed here, once, by the one reader every scenario takes
// (parse_scenario); what the matrix, a sweep, a verdict and the search carry from here is that
// typed Scenario, whose `source` is what a file records and a repetition is handed.
//
//   scenarios/CASE.json ─┐                       ┌─► Scenario: one RunSpec per (variant, lock)
//                        ├─ applies? (why not) ──┤        ──► run, matrix, sweep, verdict
//   locks/LOCK.json ─────┘                       └─► not applicable: one line each, for list and verdict
//
// A cell's expectations: the case's "expect" (the case happened), the figures of every
// prediction whose "when" the lock's facts match, and one verdict: the one the lock file
// records for the case (or its failure class), or else the case's predicted one. A lock that
// records "any" for it has no verdict checked.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/case_file.h"
#include "sim/engine/lock_file.h"
#include "sim/engine/scenario.h"

namespace lockbench {

// A cell that does not exist, and why, in one line ("needs Sentinel; laravel cannot find a
// master through it").
struct NotApplicable {
    std::string case_name;
    std::string variant;
    std::optional<std::string> failure_class;
    std::string lock;
    std::string why;
};

struct Composed {
    // The explicit scenario, parsed: runs "LOCK" or "LOCK@VARIANT", each a cell's run, its
    // expectations and its verdict; none when the case applies to none of the locks (its
    // source's "runs" is empty then, and nothing else of it is parsed).
    Scenario scenario;
    std::vector<NotApplicable> not_applicable;
    bool empty() const { return scenario.runs.empty(); }
};

// How the locks are chosen: the catalog's (where a lock that "joins": "named" joins only the
// cases naming it, and one that "joins": "none" none), or locks asked for by name or file
// (every case that applies).
enum class LockChoice { catalog, asked };

// What a cell expects: the case's checks and its predictions (the catalog's check), or only
// the case's checks and the lock's own record (`lockbench verdict`, which judges a lock by
// its record, and shows the predictions beside).
enum class Expectations { with_predictions, record_only };

// Why `lock` cannot run `variant` of `c`, or nothing when it can.
std::optional<std::string> why_not(const CaseFile& c, const CaseVariant& variant, const LockFile& lock, LockChoice choice);

// The case against each lock it applies to. Throws ScenarioError when a cell cannot be made
// (a prediction whose figures contradict the case's, a TTL a lock cannot take).
Composed compose(const CaseFile& c, const std::vector<LockFile>& locks, LockChoice choice,
                 Expectations expectations = Expectations::with_predictions);

// The verdict the case's predictions give `lock` in `variant`, if any, and why (the first
// matching prediction that gives one).
std::optional<std::pair<Verdict, std::string>> predicted_verdict(const CaseVariant& variant, const LockFile& lock);

// The lock alone, as an explicit run of `clients` clients with `ttl_ms`: what `lockbench
// adapter-check` starts.
nlohmann::json lock_run(const LockFile& lock, long long ttl_ms, int clients);

// A case's faults in a lock's time: every duration a fault may hold (its kind's own among
// them, fault_kind.h) times k, the lock's TTL over the case's.
nlohmann::json scaled_faults(nlohmann::json faults, double k);

// A file as a scenario to run: an explicit one as it is (`locks` unused), a case composed with
// `locks`. `not_applicable`, when given, gets the case's missing cells. Throws when a case
// applies to none of them.
Scenario scenario_for_file(const std::filesystem::path& file, const std::vector<LockFile>& locks, LockChoice choice,
                           std::vector<NotApplicable>* not_applicable = nullptr);
// The same for a file already read (a sweep's step): `source` as the file would hold it. A
// case that applies to none of the locks gives a scenario with no runs.
Scenario scenario_from_source(const nlohmann::json& source, const std::string& file,
                              const std::vector<LockFile>& locks, LockChoice choice,
                              std::vector<NotApplicable>* not_applicable = nullptr);

// The locks a command runs: with no `asked`, every lock of `locks_dir` (LockChoice::catalog);
// else each asked lock, by name (a file of `locks_dir`) or path (ending in .json or holding
// a /). Throws on a name that names no lock.
struct LockSelection {
    std::vector<LockFile> locks;
    LockChoice choice = LockChoice::catalog;
};
LockSelection select_locks(const std::filesystem::path& locks_dir, const std::vector<std::string>& asked);

// Every key a lock records an outcome for names a failure class, a case or a case's variant
// of `cases`; throws naming the first that does not (a typo would otherwise check nothing).
void check_recorded_keys(const std::vector<LockFile>& locks, const std::vector<CaseFile>& cases);

}  // namespace lockbench
