// One run's entry in summary.json, as a struct: who ran (from the run's record), what the
// checker found, and what the expectations made of it. Converted to and from JSON here and
// nowhere else; every reader (the tables, a cell's repetitions, recheck, explore) uses the
// fields.
//
//   run.json ─┐
//   checker ──┴──► RunSummary ──► to_json ──► summary.json ──► run_summary_from_json ──► readers
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/stats.h"
#include "analysis/verdict.h"

namespace lockbench {

// A client whose external library's adapter broke the protocol: the run went on without it.
struct ClientFailure {
    int client = 0;
    std::string error;   // the adapter's one-line reason
};
nlohmann::json to_json(const std::vector<ClientFailure>& failures);
std::vector<ClientFailure> client_failures_from_json(const nlohmann::json& j);

// What the checker found in one run: the figures of summary.json.
struct RunFigures {
    std::map<std::string, double, std::less<>> metrics;   // by the metric table's names (metrics.h)
    nlohmann::json windows_ms = nlohmann::json::array();   // the unavailable windows, [from, to] ms
    Percentiles acquire_ms, acquire_wait_ms, release_ms;
    double duration_s = 0;
    double sections_per_s = 0;
    nlohmann::json witnesses = nlohmann::json::array();    // as the checker writes them (checker.cpp)

    // The metric's value; 0 when the figures do not hold it.
    double metric(std::string_view name) const;
};

// One expectation of the run: its text ("lost_updates == 0"), the measured value, whether it
// held. An expectation of the run's verdict ("verdict == 2 holders") measures a word, in `word`.
struct ExpectationCheck {
    std::string expect;
    double value = 0;
    bool held = false;
    std::optional<std::string> word;
};
nlohmann::json to_json(const std::vector<ExpectationCheck>& checks);

// What names a run, the same in its record (run.json) and its summary entry.
struct RunIdentity {
    std::string name;
    std::string algorithm;
    nlohmann::json params = nlohmann::json::object();   // as the algorithm's parameters write them
    int nodes = 0;
    int clients = 0;
    std::uint64_t seed = 0;
    std::vector<std::string> command;    // an external library's adapter; empty otherwise
    std::string resource_check = "fence";  // what the protected store refused (sim/engine/store.h)
    // An external library as its adapter described it: {"library", "algorithm", "fencing"}, each
    // only if said; null for a built-in algorithm (and in records before results version 5).
    nlohmann::json adapter;
    std::optional<std::string> failure_class;  // the scenario's column of the verdict table, if any
    // The lock file the run tests (locks/NAME.json): its row of that table. Unset for a run
    // written inside a scenario file of the explicit format.
    std::optional<std::string> lock;
    std::optional<std::string> variant;        // the case's variant the run is of, if any
    std::optional<std::string> table_row;      // results version 5 and older: a run's row, if not its name
    // Its lock keeps the lease alive in a task of its own while held (lockimpl/registry.h:
    // background_task; reentrant's watchdog): its holder believes it until it releases.
    bool renews_in_background = false;
};
// Writes the identity's fields into `j` (command and adapter only when there is one,
// resource_check only when it is not the default "fence", failure_class, lock, variant and table_row
// only when set, so that a default run's record reads as before; renews_in_background always).
void add_identity(nlohmann::json& j, const RunIdentity& id);
// Throws nlohmann::json's exception naming the first of name..seed missing.
RunIdentity run_identity_from_json(const nlohmann::json& j);

struct RunSummary : RunIdentity {
    std::string run_dir;                 // "runs/<name>", under the results folder
    RunFigures figures;
    std::vector<ClientFailure> clients_failed;
    nlohmann::json faults = nlohmann::json::array();   // per fault: label, fired, clients
    std::vector<ExpectationCheck> expectations;
    bool expectations_held = false;
    // What did not happen as the case wrote it, outside the lock (summary.h: not_as_written):
    // a fault that did not fire, a precondition that never came, an adapter that did not
    // start. Non-empty: the run is no evidence, its verdict counts nowhere.
    std::vector<std::string> not_as_written;
    bool as_written() const { return not_as_written.empty(); }
    Verdict verdict = Verdict::safe;     // the checker's word for the run (analysis/verdict.h)

    double metric(std::string_view name) const { return figures.metric(name); }
};

// The figures as summary.json holds them: ops, safety, availability, latency_ms, duration_s,
// sections_per_s, witnesses.
nlohmann::json to_json(const RunFigures& f);
nlohmann::json to_json(const RunSummary& s);
// Throws nlohmann::json's exception naming the first field missing or of the wrong type.
RunSummary run_summary_from_json(const nlohmann::json& j);

}  // namespace lockbench
