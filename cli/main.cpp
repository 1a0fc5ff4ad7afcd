// lockbench: run distributed locks (on Redis and the other lock services of sim/engine/service.h;
// its own algorithms and real libraries) under faults and judge them from the protected store's order.
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstring>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string_view>

#include "analysis/verdict.h"
#include "process/process.h"
#include "lockimpl/params.h"
#include "lockimpl/registry.h"
#include "sim/engine/scenario.h"
#include "sim/engine/summary.h"
#include "sim/harness/catalog.h"
#include "sim/harness/compose.h"
#include "sim/harness/derived_files.h"
#include "sim/harness/explore.h"
#include "sim/harness/promote.h"
#include "sim/harness/live_search.h"
#include "sim/harness/matrix.h"
#include "sim/harness/recheck.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/runner.h"
#include "sim/harness/verdict.h"
#include "sim/live/adapter_check.h"
#include "sim/live/live_run.h"
#include "sim/live/client_main.h"

namespace fs = std::filesystem;
using namespace lockbench;

namespace {

std::string self_exe() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? "lockbench" : p.string();
}

// The repository this binary was built from: scenarios/, locks/ and report/ live there.
fs::path source_dir() {
    const fs::path beside = fs::path(self_exe()).parent_path().parent_path();
    if (fs::is_directory(beside / "scenarios") && fs::is_regular_file(beside / "report" / "__main__.py")) return beside;
    return LOCKBENCH_SOURCE_DIR;
}

// The catalog of that repository: its cases and locks.
Catalog catalog() { return Catalog(source_dir()); }

// The locks --lock names (by name in locks/, or by path), or every lock of locks/.
LockSelection chosen_locks(const std::vector<std::string>& asked) { return select_locks(catalog().locks_dir(), asked); }

// What a case leaves out, on stderr: each lock asked for by name, in a line; the catalog's, counted.
void say_not_applicable(const std::vector<NotApplicable>& missing, const LockSelection& locks) {
    if (missing.empty()) return;
    if (locks.choice == LockChoice::asked) {
        for (const NotApplicable& n : missing)
            std::cerr << "lockbench: " << run_name(n.lock, n.variant) << ": not applicable: " << n.why << "\n";
        return;
    }
    std::cerr << "lockbench: " << missing.size() << " (case, lock) cell(s) do not apply (`lockbench list --lock NAME` says why)\n";
}

// --lock composes a case; a scenario that names its runs has none to compose.
void refuse_locks_for_runs(const nlohmann::json& file, const std::string& path, const std::vector<std::string>& locks) {
    if (!locks.empty() && !is_case_file(file))
        throw std::runtime_error(path + ": --lock: this file names its runs itself (a scenario with \"runs\"); "
                                 "pick them with --algorithm");
}

struct RunArgs {
    std::string scenario;
    std::optional<std::string> out;
    std::optional<std::uint64_t> seed;
    std::vector<std::string> only;
    std::vector<std::string> locks;
    std::string backend = "live";
};

int cmd_run(const RunArgs& a) {
    refuse_locks_for_runs(read_input_json(a.scenario), a.scenario, a.locks);
    const LockSelection locks = chosen_locks(a.locks);
    std::vector<NotApplicable> missing;
    Scenario s = scenario_for_file(a.scenario, locks.locks, locks.choice, &missing);
    say_not_applicable(missing, locks);
    select_runs(s, a.only);
    RunOptions opts{a.out ? fs::path(*a.out) : fs::path("results") / s.name, a.seed, self_exe(), true, source_dir(),
                    a.backend == "sim"};
    const auto held = lock_folders(opts.out, {});
    const nlohmann::json summary = run_scenario(s, opts);
    std::cout << format_table(summary);
    std::cout << "summary: " << (opts.out / "summary.json").string() << "\n";
    return expectations_exit_code(summary);
}

int finish_matrix(const nlohmann::json& summary, const fs::path& out) {
    std::cout << format_matrix_table(summary) << format_missed(summary);
    std::cout << "summary: " << (out / "summary.json").string() << "\n";
    std::cout << "report:  lockbench report " << out.string() << "\n";
    return matrix_exit_code(summary);
}

// What `matrix` and `sweep` share; each declares these options with its own help text.
struct CellArgs {
    std::vector<std::string> only;
    int repeat = 1;
    std::optional<std::string> out;
    std::string shard = "0/1";
    std::string backend = "live";
    std::optional<double> budget_s;
    int jobs = 1;
};

MatrixSpec on_backend(MatrixSpec spec, const std::string& backend) {
    if (backend == "sim") spec = simulated(std::move(spec));
    return spec;
}

// Runs the shard's cells of `spec` into the tree `out`, which stays locked until they end.
int run_cells(const MatrixSpec& spec, const fs::path& out, const CellArgs& a) {
    const auto locks = lock_folders(out, {});
    return finish_matrix(run_matrix(spec, {out, parse_shard(a.shard), self_exe(), true, source_dir(), a.budget_s, a.jobs}), out);
}

struct MatrixArgs : CellArgs {
    std::vector<std::string> scenarios;
    std::vector<std::string> locks;
};

// The whole catalog: every key a lock file records an outcome for must name a case, a
// variant or a failure class of it.
void check_catalog(const LockSelection& locks) { check_recorded_keys(locks.locks, catalog().cases()); }

int cmd_matrix(const MatrixArgs& a) {
    const LockSelection locks = chosen_locks(a.locks);
    if (a.scenarios.empty()) check_catalog(locks);
    const MatrixSpec spec = on_backend(matrix_spec(catalog().case_files(a.scenarios), a.only, a.repeat, &locks), a.backend);
    return run_cells(spec, a.out ? fs::path(*a.out) : fs::path("results/matrix"), a);
}

struct SweepArgs : CellArgs {
    std::string scenario, param;
    int steps = 0;
    std::vector<std::string> locks;
};

int cmd_sweep(const SweepArgs& a) {
    const LockSelection locks = chosen_locks(a.locks);
    const MatrixSpec spec =
        on_backend(sweep_spec(a.scenario, parse_sweep_param(a.param), a.steps, a.only, a.repeat, &locks), a.backend);
    const fs::path out = a.out ? fs::path(*a.out)
                               : fs::path("results") / ("sweep-" + spec.sweep->scenario);
    return run_cells(spec, out, a);
}

struct MergeArgs {
    std::string out;
    std::vector<std::string> trees;
    bool allow_incomplete = false;
};

// The folders of `explore --shard I/N`: one explore.json, the witnesses beside it.
int merge_explore_shards(const MergeArgs& a, const std::vector<fs::path>& paths) {
    const nlohmann::json e = sim::merge_explore(paths, a.out);
    std::cerr << "lockbench: merged " << paths.size() << " explore shards into " << a.out << ": "
              << e.at("schedules_run") << " schedules, " << e.at("classes").size() << " failure class(es)\n";
    std::cout << "explore.json: " << (fs::path(a.out) / "explore.json").string() << "\n";
    return 0;
}

int cmd_merge(const MergeArgs& a) {
    std::vector<fs::path> paths(a.trees.begin(), a.trees.end());
    const auto locks = lock_folders(a.out, paths);
    if (std::ranges::all_of(paths, [](const fs::path& p) { return fs::exists(p / "explore.json"); }))
        return merge_explore_shards(a, paths);
    const nlohmann::json summary = merge_results(a.out, paths, a.allow_incomplete);
    const auto& incomplete = summary.at("incomplete_cells");
    std::cerr << "lockbench: merged " << paths.size() << " trees into " << a.out << ": "
              << summary.at("cells").size() - incomplete.size() << " of " << summary.at("cells").size()
              << " cells complete";
    if (!incomplete.empty())
        std::cerr << "; " << incomplete.size() << " incomplete, listed in summary.json (incomplete_cells)";
    std::cerr << "\n";
    return finish_matrix(summary, a.out);
}

struct ExploreArgs {
    std::string scenario;
    std::vector<std::string> only;
    long long schedules = 1000;
    std::uint64_t seed = 1;
    std::optional<std::string> out;
    std::optional<std::uint64_t> replay_seed;
    bool first_only = false;
    int budget = 0;
    std::optional<double> seconds;
    int jobs = 0;
    std::optional<std::string> shard;
    bool schedules_given = false;
    std::vector<std::string> locks;
    std::optional<std::string> promote;
};

int cmd_replay(const sim::ExploreOptions& o, const Scenario& s, const std::vector<std::string>& only, std::uint64_t seed) {
    // The run to replay: the one named, or the scenario's only run.
    const std::string run = only.size() == 1 ? only.front() : s.runs.size() == 1 && only.empty() ? s.runs.front().name : "";
    if (run.empty()) throw std::runtime_error("--replay needs one --algorithm: the run's name");
    const nlohmann::json summary = sim::replay(o, run, seed);
    std::cout << format_table(summary);
    std::cout << "replayed into " << (o.out / "run").string() << " (scenario: " << (o.out / "scenario.json").string()
              << ")\n";
    return 0;
}

// `explore --promote DIR`: each class of the search as a case about no lock (promote.h).
void promote_classes(const fs::path& explore_dir, const fs::path& dir) {
    const auto held = lock_folders(dir, {});
    const nlohmann::json p =
        sim::promote_explore(explore_dir, dir, sim::catalog_classes(catalog().cases(), catalog().locks()));
    int fresh = 0;
    for (const auto& c : p.at("cases")) {
        const bool is_new = c.at("covered_by").empty();
        fresh += is_new;
        std::cout << "  " << c.at("case").get<std::string>() << ": " << c.at("failure_class").get<std::string>()
                  << (is_new ? " (no case of the catalog)" : "") << "; " << c.at("forced").get<std::string>() << ", violates in "
                  << c.at("simulated").get<std::string>() << "\n";
    }
    std::cout << "promoted " << p.at("cases").size() << " class(es), " << fresh << " that no case of the catalog covers, into "
              << dir.string() << " (promoted.json)\n";
}

int cmd_explore(const ExploreArgs& a) {
    // A case is searched against the locks asked for, or the catalog's (the simulator takes
    // lockbench's own).
    const nlohmann::json file = read_input_json(a.scenario);
    refuse_locks_for_runs(file, a.scenario, a.locks);
    const LockSelection locks = is_case_file(file) ? chosen_locks(a.locks) : LockSelection{};
    std::vector<NotApplicable> missing;
    const Scenario s = scenario_from_source(file, a.scenario, locks.locks, locks.choice, &missing);
    if (s.runs.empty())
        throw ScenarioError(a.scenario + ": applies to none of the locks asked for" +
                            (missing.empty() ? std::string() : " (" + missing.front().lock + ": " + missing.front().why + ")"));
    const nlohmann::json& source = s.source;
    sim::ExploreOptions o{a.scenario, source, a.only, a.schedules, a.seed,
                          a.out ? fs::path(*a.out) : fs::path("results") / ("explore-" + s.name), true, a.first_only};
    o.budget = a.budget;
    o.seconds = a.seconds;
    o.jobs = a.jobs;
    // Bounded by time alone, a search draws until its time is up.
    if (a.seconds && !a.schedules_given) o.schedules = std::numeric_limits<long long>::max();
    if (a.shard) {
        const Shard sh = parse_shard(*a.shard);
        o.shard_index = sh.index;
        o.shard_count = sh.count;
    }
    const auto held = lock_folders(o.out, {});
    if (a.replay_seed) return cmd_replay(o, s, a.only, *a.replay_seed);
    const nlohmann::json r = sim::explore(o);
    std::cout << "explore: " << r.at("schedules_run") << " schedules in " << r.at("wall_s").get<double>() << " s, "
              << r.at("violations_found") << " run(s) with a violation, " << r.at("classes").size() << " failure class(es)\n";
    for (const auto& [run, record] : r.at("runs").items()) {
        std::cout << "  " << run << ": " << record.at("schedules") << " schedules, " << record.at("violating")
                  << " violating\n";
        for (const auto& c : r.at("classes"))
            if (c.at("run") == run)
                std::cout << "    " << c.at("class").get<std::string>() << " (" << c.at("violation").get<std::string>()
                          << ", " << c.at("schedules") << " schedule(s), first after " << c.at("first_found_s").get<double>()
                          << " s; witness " << (o.out / c.at("witness").get<std::string>()).string() << ")\n";
    }
    std::cout << "explore.json: " << (o.out / "explore.json").string() << "\n";
    if (a.promote) promote_classes(o.out, *a.promote);
    return 0;
}

// `report` writes into DIR and reads DIR's trees (DIR itself, or its subfolders that hold
// lockbench-results.json, as the report finds them): it holds the lock of each, so that no tree
// changes under it and no two reports write one page. A folder with no tree is left as it
// is, for the report to refuse.
std::vector<FolderLock> lock_for_report(const fs::path& dir) {
    if (fs::exists(dir / "lockbench-results.json")) return lock_folders(dir, {}, false);
    std::vector<fs::path> trees;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (!e.path().filename().string().starts_with(".") && e.is_directory() &&
            fs::exists(e.path() / "lockbench-results.json"))
            trees.push_back(e.path());
    if (trees.empty()) return {};
    return lock_folders(dir, trees, false);
}

int cmd_report(const std::string& dir) {
    std::vector<FolderLock> locks = lock_for_report(dir);
    for (auto& l : locks) l.keep_across_exec();  // the report holds them until it ends
    // What `check` refuses is not drawn: a damaged run fails here, before the old report is touched.
    try {
        check_trees_for_report(dir);
    } catch (const std::exception& e) {
        std::cerr << "lockbench report: " << message_line(e.what()) << "\n";
        return 2;
    }
    const fs::path script = source_dir() / "report";  // a package, run as a folder
    const char* python = "/usr/bin/python3";  // Debian's, with python3-matplotlib
    if (::access(python, X_OK) != 0) throw std::runtime_error(std::string(python) + ": missing; scripts/setup installs it");
    std::cout << std::flush;
    std::vector<char*> args{const_cast<char*>(python), const_cast<char*>(script.c_str()), const_cast<char*>(dir.c_str()),
                            nullptr};
    end_guard();  // python starts nothing: it needs no cgroup, and the guard is reaped here
    ::execv(python, args.data());
    throw std::runtime_error(std::string("cannot start ") + python + ": " + std::strerror(errno));
}

// `check DIR --write`: the derived files the report reads, rebuilt (sim/harness/derived_files.h).
// 1 when a figure differs (then nothing is written).
int cmd_check_write(const fs::path& dir) {
    const auto locks = lock_folders(dir, {}, false);
    const DerivedWritten w = write_derived_files(dir);
    for (const std::string& d : w.differences) std::cout << "differs: " << d << "\n";
    if (!w.differences.empty()) {
        std::cout << w.differences.size() << " figure(s) differ from summary.json: nothing written; make it afresh\n";
        return 1;
    }
    std::cout << "wrote the derived files (sections.json) of " << w.runs << " run(s) under " << dir.string() << "\n";
    return 0;
}

// 0: every expectation held and every figure matches summary.json; 1: an expectation failed
// or a figure differs (one line each); 2 (thrown): damaged or unreadable.
int cmd_check(const std::string& dir, bool write) {
    if (write) return cmd_check_write(dir);
    const Recheck r = recheck(dir);
    std::cout << format_table(r.summary);
    for (const std::string& d : r.differences) std::cout << "differs: " << d << "\n";
    if (!r.differences.empty()) {
        std::cout << r.differences.size() << " figure(s) differ from summary.json: it was not made from these histories\n";
        return 1;
    }
    return expectations_exit_code(r.summary);
}

// Words wrapped into lines of at most 100 characters, each indented by `indent`.
std::string wrapped(const std::vector<std::string>& words, const std::string& indent) {
    std::string out, line = indent;
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string word = words[i] + (i + 1 < words.size() ? "," : "");
        if (line.size() > indent.size() && line.size() + 1 + word.size() > 100) {
            out += line + "\n";
            line = indent;
        }
        line += (line.size() > indent.size() ? " " : "") + word;
    }
    return out + line + "\n";
}

void list_algorithms(bool all) {
    std::vector<const AlgorithmInfo*> every;
    for (const AlgorithmInfo& a : algorithms()) every.push_back(&a);
    every.push_back(&external_algorithm());
    std::cout << "algorithms (a lock file's \"algorithm\"" << (all ? "" : "; --all: their parameters") << "):\n";
    for (const AlgorithmInfo* ap : every) {
        const AlgorithmInfo& a = *ap;
        std::cout << "  " << a.name << " — " << a.summary << "\n";
        if (!all) continue;
        std::cout << "      nodes: " << a.default_nodes << " by default\n";
        for (const ParamSpec& p : a.params) {
            std::cout << "      " << p.name << " = " << p.default_value.dump();
            if (!p.choices.empty()) {
                std::string c;
                for (const auto& x : p.choices) c += (c.empty() ? "" : "|") + x;
                std::cout << " (" << c << ")";
            }
            std::cout << ": " << p.doc << "\n";
        }
    }
}

// One lock: every case (and variant) of the catalog, and whether it applies or why not.
int list_lock(const std::string& asked) {
    const LockSelection chosen = chosen_locks({asked});
    const LockFile& lock = chosen.locks.at(0);
    std::cout << lock.name << " (" << lock.path << "): " << lock.description << "\n";
    int applies = 0, total = 0;
    for (const CaseFile& c : catalog().cases())
        for (const CaseVariant& v : c.variants) {
            ++total;
            const std::string name = variant_label(c.name, v.name);
            const std::string klass = c.failure_class ? " [" + *c.failure_class + "]" : "";
            if (const auto why = why_not(c, v, lock, LockChoice::asked)) {
                std::cout << "  -        " << name << klass << ": " << *why << "\n";
                continue;
            }
            ++applies;
            std::cout << "  applies  " << name << klass << "\n";
        }
    std::cout << applies << " of " << total << " cases apply (`lockbench verdict " << asked << "` runs them)\n";
    return 0;
}

// The facts the report words its pages with, defined here once (the verdict words worst
// first and their meanings, the verdict table's columns, the built-in algorithms in order
// and their summaries): its
// report/facts.json is this, checked by ctest's report_facts_test.
int list_facts() {
    nlohmann::json verdict_words = nlohmann::json::array(), meanings = nlohmann::json::object(),
                   classes = nlohmann::json::array(), algorithm_names = nlohmann::json::array(),
                   summaries = nlohmann::json::object();
    for (Verdict v : verdicts()) {
        verdict_words.push_back(verdict_word(v));
        meanings[std::string(verdict_word(v))] = verdict_meaning(v);
    }
    for (const FailureClass& c : failure_class_table()) classes.push_back({{"class", c.code}, {"heading", c.heading}});
    for (const AlgorithmInfo& a : algorithms()) {
        algorithm_names.push_back(a.name);
        summaries[a.name] = a.summary;
    }
    std::cout << nlohmann::json{{"format", "lockbench-facts"},
                                {"generated_by", "lockbench list --json"},
                                {"verdicts", verdict_words},
                                {"verdict_meanings", meanings},
                                {"failure_classes", classes},
                                {"algorithms", algorithm_names},
                                {"algorithm_summaries", summaries}}
                     .dump(2)
              << "\n";
    return 0;
}

// Without --all, names only: the whole catalog on one screen (the descriptions are each lock
// file's and case file's, and `list --lock NAME` gives one lock's cases).
int cmd_list(const std::optional<std::string>& lock, bool json, bool all) {
    if (json) return list_facts();
    if (lock) return list_lock(*lock);
    list_algorithms(all);
    const auto& locks = catalog().locks();
    std::cout << "\nlocks (" << locks.size() << " in " << (all ? catalog().locks_dir().string() : "locks/")
              << (all ? "" : "; --all: what each is") << "; --lock NAME: the cases one meets):\n";
    if (all) {
        for (const LockFile& l : locks)
            std::cout << "  " << l.name
                      << (l.joins == Joins::named ? " (joins only the cases that name it)"
                          : l.joins == Joins::none ? " (joins no case of the catalog: verdict only)" : "")
                      << " — " << l.description << "\n";
    } else {
        const std::pair<Joins, const char*> groups[] = {
            {Joins::all, "every case it applies to"},
            {Joins::named, "only the cases that name it"},
            {Joins::none, "no case of the catalog (`lockbench verdict` and scripts/run-verdict-only)"}};
        for (const auto& [joins, what] : groups) {
            std::vector<std::string> names;
            for (const LockFile& l : locks)
                if (l.joins == joins) names.push_back(l.name);
            if (names.empty()) continue;
            std::cout << "  joining " << what << " (" << names.size() << "):\n" << wrapped(names, "    ");
        }
    }
    const auto& cases = catalog().cases();
    std::cout << "\ncases (" << cases.size() << " in " << (all ? catalog().scenarios_dir().string() : "scenarios/")
              << "; [its failure class] +its variants):\n";
    std::vector<std::string> names;
    for (const CaseFile& c : cases) {
        std::string name = c.name + (c.failure_class ? " [" + *c.failure_class + "]" : "");
        for (const CaseVariant& v : c.variants)
            if (!v.name.empty()) name += " +" + v.name;
        if (all) std::cout << "  " << name << "\n";
        else names.push_back(name);
    }
    if (!all) std::cout << wrapped(names, "  ");
    std::cout << "\n\"seed 000\"..\"seed 004\": the five blog posts on Redis locks the catalog began from "
                 "(docs/catalog.md)\n";
    return 0;
}

// What `verdict` and `adapter-check` take: a lock file (by name or path), or the facts of one
// as options (its adapter's command among them), written out as a lock file.
struct LockArgs {
    std::optional<std::string> lock;
    std::string name, command, service = "redis", ttl_unit = "ms", server;
    int nodes = 1;
    bool sentinel = false, fencing = false, renews = false, checks_elapsed = false;
    std::vector<std::string> extend, params;
};

LockFile lock_from_args(const LockArgs& a) {
    if (a.lock) {
        if (!a.command.empty()) throw std::runtime_error("give a lock file or --command, not both");
        return chosen_locks({*a.lock}).locks.at(0);
    }
    if (a.command.empty() || a.name.empty())
        throw std::runtime_error("name a lock (its name in locks/, or a lock file's path), or give --name and --command");
    std::vector<std::string> argv;
    std::istringstream words(a.command);
    for (std::string w; words >> w;) argv.push_back(w);
    nlohmann::json params = nlohmann::json::object();
    for (const std::string& p : a.params) {
        const auto eq = p.find('=');
        if (eq == std::string::npos || eq == 0) throw std::runtime_error("--param " + p + ": expected NAME=VALUE");
        params[p.substr(0, eq)] = nlohmann::json::parse(p.substr(eq + 1), nullptr, false, true);
        if (params[p.substr(0, eq)].is_discarded()) params[p.substr(0, eq)] = p.substr(eq + 1);  // a plain string
    }
    nlohmann::json j = {{"description", "given on the command line"}, {"algorithm", "external"}, {"command", argv},
                        {"params", params}, {"service", a.service}, {"nodes", a.nodes}, {"ttl_unit", a.ttl_unit},
                        {"sentinel", a.sentinel},
                        {"offers", {{"fencing", a.fencing}, {"renews", a.renews}, {"checks_elapsed", a.checks_elapsed},
                                    {"extend", a.extend}}}};
    if (!a.server.empty()) j["server"] = a.server;
    // As if it were a file in the folder the command runs from: its adapter's relative paths resolve there.
    return parse_lock_file(j, fs::current_path() / (a.name + ".json"));
}

// Holds the lock's adapter to the protocol (sim/live/adapter_check.h): the failures, one line each.
std::vector<std::string> adapter_check(const LockFile& lock) {
    if (lock.command.empty()) return {};  // lockbench's own algorithms speak no protocol
    const nlohmann::json source = {{"name", "adapter-check"}, {"runs", nlohmann::json::array({lock_run(lock, 2000, 2)})}};
    const Scenario s = parse_scenario(source, lock.path);
    const fs::path tmp = make_run_temp_dir();
    std::vector<std::string> failures;
    try {
        // A lock whose record says it does not exclude even without a fault (its baseline):
        // a second grant is that finding, not an adapter that ignores its library.
        const RecordedOutcome* baseline = recorded_outcome(lock, "baseline", "", "baseline");
        const bool excludes = !baseline || !baseline->verdict || *baseline->verdict == Verdict::safe;
        failures = check_adapter(s, s.runs.at(0),
                                 {{"extend", lock.offers.extend}, {"fencing", lock.offers.fencing}, {"excludes", excludes}}, tmp,
                                 {self_exe(), source_dir()});
    } catch (...) {
        std::error_code ec;
        fs::remove_all(tmp, ec);
        throw;
    }
    fs::remove_all(tmp);
    return failures;
}

int report_adapter_check(const LockFile& lock, const std::vector<std::string>& lines) {
    for (const std::string& f : lines) std::cout << "adapter-check: " << lock.name << ": " << f << "\n";
    const auto failures = std::ranges::count_if(lines, [](const std::string& l) { return !is_finding(l); });
    if (failures > 0) {
        std::cout << lock.name << ": the adapter breaks the protocol in " << failures << " place(s) (docs/adapters.md, The protocol)\n";
        return 2;
    }
    std::cout << "adapter-check: " << lock.name << ": speaks the protocol\n";
    return 0;
}

int cmd_adapter_check(const LockArgs& a) {
    const LockFile lock = lock_from_args(a);
    if (lock.command.empty()) {
        std::cout << lock.name << ": one of lockbench's own algorithms; it has no adapter to check\n";
        return 0;
    }
    return report_adapter_check(lock, adapter_check(lock));
}

struct VerdictArgs : LockArgs {
    int repeat = 3;
    int jobs = 4;
    std::optional<std::string> out;
    std::vector<std::string> cases;   // --case: only these (a quick look; the row is then partial)
    std::optional<double> discover;   // --discover SECONDS: a live search after the cases (live_search.h)
    std::optional<std::string> versus;  // --versus LOCK: its verdict too, and where the two differ
};

// One line per class: its verdict and repetitions, or why it does not apply.
void print_verdict(const nlohmann::json& v, bool some_cases) {
    std::cout << v.at("lock").get<std::string>() << " (" << v.at("library").value("library", std::string("?")) << "):\n";
    for (const auto& c : v.at("classes")) {
        // With --case, a class none of whose cases was asked for says nothing: no line.
        if (some_cases && !c.contains("counts") && c.at("why").empty()) continue;
        std::string line = "  " + c.at("class").get<std::string>() + ": " + c.at("verdict").get<std::string>();
        if (c.contains("counts")) {
            std::string counts;
            for (const auto& [w, n] : c.at("counts").items())
                counts += (counts.empty() ? "" : ", ") + w + " " + std::to_string(n.get<int>()) + "/" + c.at("repetitions").dump();
            line += " (" + counts + ")";
        } else if (!c.at("why").empty()) {
            line += ": " + c.at("why").at(0).get<std::string>() + (c.at("why").size() > 1 ? " (and more)" : "");
        }
        std::cout << line << "\n";
    }
}

// Where two verdicts differ (verdict.h: versus): each class that runs, here beside there.
void print_versus(const std::string& lock, const nlohmann::json& vs) {
    std::cout << lock << " versus " << vs.at("lock").get<std::string>() << " (" << vs.at("library").get<std::string>()
              << "), class by class (" << lock << " | " << vs.at("lock").get<std::string>() << "):\n";
    std::string differ;
    for (const auto& c : vs.at("classes")) {
        std::cout << (c.at("differs").get<bool>() ? "* " : "  ") << c.at("class").get<std::string>() << ": "
                  << c.at("here").get<std::string>() << " | " << c.at("there").get<std::string>() << "\n";
        if (c.at("differs").get<bool>()) differ += (differ.empty() ? "" : ", ") + c.at("class").get<std::string>();
    }
    for (const auto& c : vs.at("cases"))
        std::cout << "  case " << variant_label(c.at("case").get<std::string>(), c.at("variant").get<std::string>()) << ": "
                  << c.at("here").get<std::string>() << " | " << c.at("there").get<std::string>() << "\n";
    const int n = vs.at("cases_same").get<int>();
    const std::string agree = n == 0 ? "no case both ran has the same word"
                              : n == 1 ? "the one case both ran has the same word"
                                       : "the " + std::to_string(n) + " cases both ran have the same word";
    const std::string listed = vs.at("cases").empty() ? "" : "the cases listed differ or ran on one side only; ";
    if (vs.at("same").get<bool>())
        std::cout << "  the same verdict in every class; " << listed << agree << "\n";
    else
        std::cout << "  " << (differ.empty() ? "every class the same" : "the classes marked * differ: " + differ) << "; "
                  << listed << agree << "\n";
}

// The live search's classes, each with when it was found and how often its witness violated.
void print_discovered(const nlohmann::json& v) {
    const auto& d = v.at("discover");
    std::cout << "discovered, in " << d.at("schedules_tried") << " live schedules (" << static_cast<int>(d.at("wall_s").get<double>())
              << " s" << (d.at("model").is_null() ? "" : ", the simulator's classes of " + d.at("model").get<std::string>() + " first")
              << "):\n";
    for (const auto& c : v.at("discovered"))
        std::cout << "  " << c.at("failure_class").get<std::string>() << ": " << c.at("class").get<std::string>() << " (after "
                  << static_cast<int>(c.at("first_found_s").get<double>()) << " s, violated " << c.at("repetitions_violating") << " of "
                  << c.at("repetitions") << "; witness " << c.at("witness").get<std::string>() << ")\n";
    if (v.at("discovered").empty()) std::cout << "  nothing: what was tried is verdict.json's discover.coverage\n";
}

int cmd_verdict(const VerdictArgs& a) {
    const LockFile lock = lock_from_args(a);
    const std::vector<LockFile> locks = catalog().locks();
    std::vector<CaseFile> cases = catalog().cases();
    check_recorded_keys({lock}, cases);
    std::optional<LockFile> other;
    if (a.versus) {
        other = chosen_locks({*a.versus}).locks.at(0);
        if (other->name == lock.name) throw std::runtime_error("--versus " + *a.versus + ": that is the lock itself");
        check_recorded_keys({*other}, cases);
    }
    for (const std::string& name : a.cases)
        if (std::ranges::none_of(cases, [&](const CaseFile& c) { return c.name == name; }))
            throw std::runtime_error("--case " + name + ": no case of that name in " + catalog().scenarios_dir().string());
    if (!a.cases.empty())
        std::erase_if(cases, [&](const CaseFile& c) { return std::ranges::find(a.cases, c.name) == a.cases.end(); });
    if (a.repeat < 1) throw std::runtime_error("--repeat " + std::to_string(a.repeat) + ": must be at least 1");
    const VerdictOptions opts{a.out ? fs::path(*a.out) : fs::path("results") / ("verdict-" + lock.name), a.repeat, self_exe(),
                              source_dir(), true, a.jobs};
    std::cerr << "lockbench: verdict of " << lock.label() << ": checking its adapter against the protocol ...\n";
    if (const int status = report_adapter_check(lock, adapter_check(lock)); status != 0) return status;
    if (other) {  // before the first verdict's minutes, not after
        std::cerr << "lockbench: and of " << other->label() << ", to set beside it ...\n";
        if (const int status = report_adapter_check(*other, adapter_check(*other)); status != 0) return status;
    }
    const auto held = lock_folders(opts.out, {});
    nlohmann::json v = run_verdict(lock, cases, reference_locks(locks), opts);
    print_verdict(v, !a.cases.empty());
    if (a.discover) {
        const sim::LiveSearchOptions so{opts.out, *a.discover, self_exe(), source_dir()};
        const nlohmann::json found = sim::live_search(lock, catalog().cases(), locks, so);
        v["discovered"] = found.at("discovered");
        v["discover"] = found.at("discover");
        write_atomically(opts.out / kVerdictFile, v.dump(2) + "\n");
        print_discovered(v);
    }
    if (other) {
        // The other version's verdict in a folder of this one's (resumed like it), then where they differ.
        const VerdictOptions theirs_opts{opts.out / ("versus-" + other->name), opts.repeat, opts.self_exe, opts.project_dir,
                                         opts.progress, opts.jobs};
        std::cerr << "lockbench: verdict of " << other->label() << ", to set beside it ...\n";
        const nlohmann::json theirs = run_verdict(*other, cases, reference_locks(locks), theirs_opts);
        for (const auto& d : theirs.at("differences")) v["differences"].push_back(other->name + ": " + d.get<std::string>());
        for (const auto& d : theirs.at("could_not_force")) v["could_not_force"].push_back(other->name + ": " + d.get<std::string>());
        v["versus"] = versus(v, theirs, (theirs_opts.out / kVerdictFile).string());
        write_atomically(opts.out / kVerdictFile, v.dump(2) + "\n");
        print_versus(lock.name, v.at("versus"));
    }
    for (const auto& d : v.at("differences")) std::cout << "differs: " << d.get<std::string>() << "\n";
    for (const auto& d : v.at("could_not_force")) std::cout << d.get<std::string>() << "\n";
    std::cout << "verdict: " << (opts.out / kVerdictFile).string() << "\n";
    // A case that could not be made to happen passes no check against the lock's record.
    const int status = !v.at("differences").empty() ? 1 : v.at("could_not_force").empty() ? 0 : kNotForcedExit;
    // The one-page report (report/ draws verdict.json), started with an argument vector
    // (no shell: a path with a space or a ';' is a path) as a child that a signal to lockbench
    // ends too, while the folder's lock is held; its failure is reported, the verdict stands.
    bool drawn = false;
    try {
        ChildProcess report = ChildProcess::spawn(
            {{"/usr/bin/python3", (source_dir() / "report").string(), opts.out.string()}, "/dev/stderr", "/dev/stderr"});
        const std::optional<int> ended = report.wait_for(std::chrono::hours(24));
        drawn = ended && WIFEXITED(*ended) && WEXITSTATUS(*ended) == 0;
    } catch (const std::exception& e) {
        std::cerr << "lockbench: " << message_line(e.what()) << "\n";
    }
    if (!drawn) std::cerr << "lockbench: the report of " << opts.out.string() << " failed (see above)\n";
    else {
        std::cout << "report: " << (opts.out / "report.html").string() << " (and report.md)\n";
        // Each timeline the report drew (a witness of each case that went wrong), by name.
        std::vector<fs::path> timelines;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(opts.out / "report-images", ec))
            if (e.path().filename().string().starts_with("witness-")) timelines.push_back(e.path());
        std::ranges::sort(timelines);
        for (const fs::path& t : timelines) std::cout << "timeline: " << t.string() << "\n";
    }
    return status;
}

// ---- The manual: docs/, one page per topic, and the page each subcommand is explained on ------

// A topic is its page's stem: `lockbench help faults` points at docs/faults.md. A page added to
// docs/ needs its line here (cli_test fails on a page with no topic).
struct Topic {
    std::string_view name, file, subject;
};
constexpr std::array<Topic, 11> kTopics{{
    {"README", "docs/README.md", "the manual's index: each page and what to read it for"},
    {"running", "docs/running.md", "the main job, matrices, sweeps, shards, benchmarks"},
    {"files", "docs/files.md", "case, lock and scenario file formats; algorithm parameters"},
    {"faults", "docs/faults.md", "every fault kind, where it lands, what it can reach"},
    {"adapters", "docs/adapters.md", "external locks: adapters, the protocol, kits, your own lock"},
    {"services", "docs/services.md", "lock services: their servers, Sentinel, a pooler, what each can meet"},
    {"catalog", "docs/catalog.md", "the verdict table, the cases, what the libraries do, known bugs"},
    {"results", "docs/results.md", "results and reports: metrics, verdict words, file versions"},
    {"simulator", "docs/simulator.md", "the simulator, schedule search, shrinking, discovery"},
    {"glossary", "docs/glossary.md", "the words: case, cell, variant, repetition, verdict, lease, fence"},
    {"architecture", "docs/architecture.md", "layers, the data path, where new things go"},
}};

// The page (a topic of kTopics) each subcommand is explained on; its --help ends naming it. A
// subcommand missing here has no footer (cli_test fails on it).
struct SubcommandPage {
    std::string_view subcommand, topic;
};
constexpr std::array<SubcommandPage, 13> kSubcommandPages{{
    {"run", "running"},
    {"check", "results"},
    {"matrix", "running"},
    {"sweep", "running"},
    {"verdict", "adapters"},
    {"explore", "simulator"},
    {"merge", "running"},
    {"report", "results"},
    {"list", "catalog"},
    {"adapter-check", "adapters"},
    {"help", "README"},
    {"repetition", "running"},   // hidden: one repetition of matrix --jobs N
    {"client", "architecture"},  // hidden: one client process of a live run
}};

// By name, in any case: `help readme` is README.
const Topic* find_topic(std::string_view name) {
    const auto same = [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); };
    for (const Topic& t : kTopics)
        if (std::ranges::equal(t.name, name, same)) return &t;
    return nullptr;
}

const Topic* page_of_subcommand(std::string_view sub) {
    for (const SubcommandPage& p : kSubcommandPages)
        if (p.subcommand == sub) return find_topic(p.topic);
    return nullptr;
}

// The last line of a subcommand's --help: its page, and how to see that page's sections.
std::string manual_footer(std::string_view sub) {
    const Topic* t = page_of_subcommand(sub);
    return t ? "Manual: " + std::string(t->file) + " (lockbench help " + std::string(sub) + ")" : "";
}

// CLI11 2.1 does not wrap: a description wider than a terminal is broken at spaces here, and
// CLI11 indents each continued line to the descriptions' column. Every --help line then fits
// in kHelpWidth columns (cli_test holds them to it).
constexpr std::size_t kHelpWidth = 100;
constexpr std::size_t kHelpColumn = 30;  // CLI11's default column for descriptions

std::string wrapped(const std::string& text, std::size_t width) {
    std::string out, line;
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    return out + line;
}

// The descriptions of `app`'s options and subcommands, wrapped to the column they print in.
void wrap_help(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) o->description(wrapped(o->get_description(), kHelpWidth - kHelpColumn));
    for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        sub->description(wrapped(sub->get_description(), kHelpWidth - kHelpColumn));
        wrap_help(*sub);
    }
}

// The subcommands `lockbench --help` lists (the hidden ones have no group), in its order.
std::vector<const CLI::App*> listed_subcommands(const CLI::App& app) {
    std::vector<const CLI::App*> listed;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
        listed.push_back(sub);
    return listed;
}

// The page's headings with their line numbers: lines starting with '#', outside fenced code
// (where a '#' starts a shell comment).
std::vector<std::pair<int, std::string>> page_headings(const fs::path& page) {
    std::ifstream in(page);
    if (!in) throw std::runtime_error("help: " + page.string() + ": cannot read the page");
    std::vector<std::pair<int, std::string>> headings;
    bool fenced = false;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.starts_with("```") || line.starts_with("~~~")) fenced = !fenced;
        else if (!fenced && line.starts_with("#")) headings.emplace_back(number, line);
    }
    return headings;
}

// A column of `width`, and at least one space after what it holds.
std::string column(std::string_view text, std::size_t width) {
    return std::string(text) + std::string(text.size() < width ? width - text.size() : 1, ' ');
}

// `lockbench help`: the topics, one line each, then the page of each subcommand.
int list_manual(const CLI::App& app) {
    std::cout << "The manual, one page per topic, in " << (source_dir() / "docs").string()
              << " (lockbench help TOPIC: the page's path and sections):\n";
    for (const Topic& t : kTopics) std::cout << "  " << column(t.name, 14) << column(t.file, 22) << t.subject << "\n";
    std::cout << "Subcommands and the page each is explained on (lockbench help SUBCOMMAND):\n";
    for (const CLI::App* sub : listed_subcommands(app)) {
        const Topic* t = page_of_subcommand(sub->get_name());
        std::cout << "  " << column(sub->get_name(), 14) << (t ? t->file : "(no page)") << "\n";
    }
    return 0;
}

// `lockbench help TOPIC`: a topic, or a subcommand standing for its page: the page's absolute
// path and its headings, so that a reader knows where to look (not the page itself).
int cmd_help(const CLI::App& app, const std::string& asked) {
    if (asked.empty()) return list_manual(app);
    // docs/faults.md and faults.md name the topic faults.
    const std::string name = asked.ends_with(".md") ? fs::path(asked).stem().string() : asked;
    const Topic* t = find_topic(name);
    const bool subcommand = !t && (t = page_of_subcommand(name)) != nullptr;
    if (!t) {
        std::string known;
        for (const Topic& k : kTopics) known += (known.empty() ? "" : ", ") + std::string(k.name);
        std::string subs;
        for (const CLI::App* sub : listed_subcommands(app)) subs += (subs.empty() ? "" : ", ") + sub->get_name();
        throw std::runtime_error("help: unknown topic \"" + asked + "\"; topics: " + known + "; or a subcommand: " + subs);
    }
    const fs::path page = source_dir() / t->file;
    const auto headings = page_headings(page);
    if (subcommand) std::cout << "lockbench " << name << " is explained on the page of topic " << t->name << ":\n";
    std::cout << page.string() << " (" << t->subject << "), its sections by line:\n";
    for (const auto& [number, heading] : headings) std::cout << std::right << std::setw(6) << number << "  " << heading << "\n";
    return 0;
}

// ---- The subcommands: each declares its options and says how it runs ------------------------

// A subcommand as main() sees it: whether the command line named it, and how to run it. The
// options it declared write into arguments the runner owns, so they live as long as it does.
struct Subcommand {
    CLI::App* sub;
    std::function<int()> run;
};

// A folder or file path: not empty (the filesystem's own answer names no option).
CLI::Validator non_empty_path() {
    return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "an empty path" : ""; }, "PATH");
}

// A seed: an integer from 0 to 2^64 - 1, all of it (not saturated at the top, not cut at a letter).
CLI::Validator seed_range() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec == std::errc() && end == text.data() + text.size()) return "";
            return "expected an integer from 0 to 18446744073709551615, got " + excerpt_text(text);
        },
        "SEED");
}

Subcommand add_run(CLI::App& app) {
    auto a = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "run a case against every lock it applies to (or an explicit scenario's runs) once, and check the results");
    run->add_option("scenario", a->scenario, "scenario file (JSON)")->required();
    run->add_option("--out", a->out, "results folder (default: results/<scenario name>)")->check(non_empty_path());
    run->add_option("--seed", a->seed, "seed (default: the scenario's)")->check(seed_range());
    run->add_option("--lock", a->locks, "a case: run it against this lock only, by name (locks/NAME.json) or "
                    "lock file path (repeatable; default: every lock of locks/ it applies to)");
    run->add_option("--algorithm", a->only, "only runs of this algorithm, lock or run name (repeatable)");
    run->add_option("--backend", a->backend, "live: real redis-servers and processes; sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));
    return {run, [a] { return cmd_run(*a); }};
}

Subcommand add_check(CLI::App& app) {
    auto dir = std::make_shared<std::string>();
    CLI::App* check = app.add_subcommand("check", "re-run the checker on a results folder");
    check->add_option("dir", *dir, "results folder written by `lockbench run`, or (with --write) a results tree")->required();
    auto write = std::make_shared<bool>(false);
    check->add_flag("--write", *write, "write the files the report reads (each run's sections.json) from the "
                    "histories, and mark a results tree as version " + std::to_string(kResultsVersion));
    return {check, [dir, write] { return cmd_check(*dir, *write); }};
}

// A number within [lo, hi] and finite (CLI::Range lets NaN through: no comparison fails it).
CLI::Validator finite_range(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
                std::ostringstream why;
                why << "expected a number from " << lo << " to " << hi;
                return why.str();
            }
            return "";
        },
        "", "finite_range");
}

// Repetitions per cell: at most this many (a thousand takes hours already; 2^31 never ends).
constexpr int kMaxRepeat = 1000;

void add_jobs_option(CLI::App* sub, int& jobs) {
    sub->add_option("--jobs", jobs, "repetitions run at once, each with its own servers (default 1; a case marked "
                    "\"alone\" runs beside no other case's, two at most)")->check(CLI::Range(1, 16));
}

Subcommand add_matrix(CLI::App& app) {
    auto a = std::make_shared<MatrixArgs>();
    CLI::App* matrix = app.add_subcommand("matrix", "run every (case, lock) cell N times into one results tree");
    matrix->add_option("scenarios", a->scenarios, "scenario files (default: every file in scenarios/)");
    matrix->add_option("--lock", a->locks, "cases against these locks only, by name or lock file path (repeatable; "
                       "default: every lock of locks/)");
    matrix->add_option("--algorithm", a->only, "only runs of this algorithm, lock or run name (repeatable)");
    matrix->add_option("--repeat", a->repeat, "repetitions per cell, seeds s, s+1, ... (default 1)")
        ->check(CLI::Range(std::numeric_limits<int>::min(), kMaxRepeat));
    matrix->add_option("--out", a->out, "results tree (default: results/matrix); run again to resume")->check(non_empty_path());
    matrix->add_option("--shard", a->shard, "run only the cells whose index is I modulo N (I/N)");
    matrix->add_option("--backend", a->backend, "live (default) or sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));
    matrix->add_option("--time-budget-s", a->budget_s, "start another round of repetitions only if it ends within this "
                       "many seconds of the start (every cell runs at least once)")->check(finite_range(0.001, 7 * 86400));
    add_jobs_option(matrix, a->jobs);
    return {matrix, [a] { return cmd_matrix(*a); }};
}

Subcommand add_sweep(CLI::App& app) {
    auto a = std::make_shared<SweepArgs>();
    CLI::App* sweep = app.add_subcommand("sweep", "vary one numeric field of a scenario and run each step N times");
    sweep->add_option("scenario", a->scenario, "scenario file (JSON)")->required();
    sweep->add_option("--param", a->param, "PATH=FROM..TO, e.g. faults.0.duration_ms=100..700")->required();
    sweep->add_option("--steps", a->steps, "values from FROM to TO, evenly spaced")->required();
    sweep->add_option("--lock", a->locks, "a case: against these locks only, by name or path (repeatable)");
    sweep->add_option("--algorithm", a->only, "only runs of this algorithm, lock or run name (repeatable)");
    sweep->add_option("--repeat", a->repeat, "repetitions per step and run (default 1)")->check(CLI::Range(std::numeric_limits<int>::min(), kMaxRepeat));
    sweep->add_option("--out", a->out, "results tree (default: results/sweep-<scenario>); run again to resume")->check(non_empty_path());
    sweep->add_option("--shard", a->shard, "run only the cells whose index is I modulo N (I/N)");
    sweep->add_option("--backend", a->backend, "live (default) or sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));
    sweep->add_option("--time-budget-s", a->budget_s, "as for matrix")->check(finite_range(0.001, 7 * 86400));
    add_jobs_option(sweep, a->jobs);
    return {sweep, [a] { return cmd_sweep(*a); }};
}

Subcommand add_explore(CLI::App& app) {
    auto a = std::make_shared<ExploreArgs>();
    CLI::App* explore =
        app.add_subcommand("explore", "search fault schedules of a scenario in the simulator, shrink what violates");
    explore->add_option("scenario", a->scenario, "scenario file (JSON)")->required();
    explore->add_option("--lock", a->locks, "a case against this lock (its name in locks/, or a lock file's path; repeatable)");
    explore->add_option("--algorithm", a->only, "only runs of this algorithm or run name (repeatable)");
    explore->add_option("--schedules", a->schedules, "schedules to draw per run (default 1000; unbounded with --seconds)")
        ->check(CLI::PositiveNumber)
        ->each([a](const std::string&) { a->schedules_given = true; });
    explore->add_option("--seed", a->seed, "the search's seed (default 1)")->check(seed_range());
    explore->add_option("--out", a->out, "where explore.json and the witnesses go (default: results/explore-<scenario>)")->check(non_empty_path());
    explore->add_option("--replay", a->replay_seed, "run the one schedule with this seed (from explore.json) into --out")->check(seed_range());
    explore->add_flag("--first", a->first_only, "per run, stop at the first violating schedule");
    explore->add_option("--promote", a->promote, "write each failure class found as a case about no lock into this folder "
                        "(with promoted.json); keep the ones worth it under scenarios/discovered/");
    explore->add_option("--budget", a->budget,
                        "compose each schedule of up to N faults from the whole fault vocabulary, ignoring the scenario's")
        ->check(CLI::Range(1, 8));
    explore->add_option("--seconds", a->seconds, "bound the whole search (every run) by this much wall time")
        ->check(CLI::PositiveNumber);
    explore->add_option("--jobs", a->jobs, "threads (default: one per core); the results do not depend on it")
        ->check(CLI::PositiveNumber);
    explore->add_option("--shard", a->shard, "I/N: run only the schedules whose index is I modulo N (merge the shards' folders)");
    return {explore, [a] { return cmd_explore(*a); }};
}

Subcommand add_merge(CLI::App& app) {
    auto a = std::make_shared<MergeArgs>();
    CLI::App* merge = app.add_subcommand("merge", "join the results trees of shards of one matrix or sweep, or the folders of explore --shard");
    merge->add_option("out", a->out, "the merged tree (made if missing)")->required();
    merge->add_option("trees", a->trees, "shard trees")->required();
    merge->add_flag("--allow-incomplete", a->allow_incomplete,
                    "merge even if some cells lack repetitions (they are listed in summary.json and shown as not run)");
    return {merge, [a] { return cmd_merge(*a); }};
}

Subcommand add_report(CLI::App& app) {
    auto dir = std::make_shared<std::string>();
    CLI::App* report =
        app.add_subcommand("report", "write report.html and report.md from a results tree (or a folder of them)");
    report->add_option("dir", *dir, "results tree, or a folder whose subfolders are results trees")->required();
    return {report, [dir] { return cmd_report(*dir); }};
}

void add_lock_options(CLI::App* sub, LockArgs& a) {
    sub->add_option("lock", a.lock, "the lock: its name in locks/, or a lock file's path");
    sub->add_option("--name", a.name, "without a lock file: the lock's name (its row)");
    sub->add_option("--command", a.command, "without a lock file: the adapter's command, e.g. \"node my/adapter.js\"");
    const std::vector<std::string> names = service_names();
    std::string listed;
    for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
    sub->add_option("--service", a.service, "the lock service: " + listed + " (default redis)")
        ->check(CLI::IsMember(names));
    sub->add_option("--nodes", a.nodes, "lock nodes (default 1)");
    sub->add_option("--server", a.server, "the program its servers run (etcd: another version; hazelcast: required, its members)");
    sub->add_option("--ttl-unit", a.ttl_unit, "ms (default) or s: a library that takes whole seconds")->check(CLI::IsMember({"ms", "s"}));
    sub->add_flag("--sentinel", a.sentinel, "it can find a master through Sentinel");
    sub->add_flag("--fencing", a.fencing, "it hands out a fencing token");
    sub->add_flag("--renews", a.renews, "it renews its lease on its own");
    sub->add_flag("--checks-elapsed", a.checks_elapsed, "it refuses a lock whose TTL ran out during its acquire");
    sub->add_option("--extend", a.extend, "an extend it answers: add, replace (repeatable)")->check(CLI::IsMember({"add", "replace"}));
    sub->add_option("--param", a.params, "NAME=VALUE for its adapter (LOCKBENCH_PARAMS; repeatable)");
}

Subcommand add_verdict(CLI::App& app) {
    auto a = std::make_shared<VerdictArgs>();
    CLI::App* sub = app.add_subcommand("verdict", "one lock's verdict: its adapter checked, then every case that applies, "
                                                  "N times, into a results tree with a one-page report");
    add_lock_options(sub, *a);
    sub->add_option("--repeat", a->repeat, "repetitions per case (default 3)")->check(CLI::Range(std::numeric_limits<int>::min(), kMaxRepeat));
    sub->add_option("--out", a->out, "where (default: results/verdict-<lock>); run again to resume, or, with other cases, --repeat or record, to make it afresh")->check(non_empty_path());
    sub->add_option("--case", a->cases, "only this case (repeatable): a quick look, not the whole row");
    sub->add_option("--discover", a->discover, "then search live for this many seconds: fault schedules of one or two faults, "
                    "most likely first; each new failure class shrunk, replayed, kept as a witness (verdict.json: discovered)")
        ->check(finite_range(1, 86400));
    sub->add_option("--versus", a->versus, "then the verdict of this lock too (another version of the library: its name "
                    "or lock file), into OUT/versus-<name>, and where the two differ, class by class (verdict.json: versus)")
        ->check(non_empty_path());
    sub->add_option("--jobs", a->jobs, "repetitions run at once, each with its own servers (default 4; a case marked "
                    "\"alone\" runs beside no other case's, two at most)")->check(CLI::Range(1, 16));
    return {sub, [a] { return cmd_verdict(*a); }};
}

Subcommand add_adapter_check(CLI::App& app) {
    auto a = std::make_shared<LockArgs>();
    CLI::App* sub = app.add_subcommand("adapter-check", "hold a lock's adapter to the protocol: the ready line, each "
                                                        "operation, an error answer (one line per failure)");
    add_lock_options(sub, *a);
    return {sub, [a] { return cmd_adapter_check(*a); }};
}

Subcommand add_list(CLI::App& app) {
    auto lock = std::make_shared<std::optional<std::string>>();
    CLI::App* list = app.add_subcommand("list", "list the algorithms, the locks and the cases (with --all, their parameters "
                                                "and descriptions); with --lock, which cases a lock meets and why not the others");
    auto json = std::make_shared<bool>(false), all = std::make_shared<bool>(false);
    list->add_option("--lock", *lock, "a lock, by name (locks/NAME.json) or lock file path");
    list->add_flag("--all", *all, "each algorithm's parameters, each lock's description, a case a line");
    list->add_flag("--json", *json, "print the facts the report words its pages with (verdict words worst first and "
                                    "their meanings, the verdict table's columns, the built-in algorithms and their "
                                    "summaries), as JSON")
        ->excludes("--lock");
    list->get_option("--all")->excludes("--lock")->excludes("--json");
    return {list, [lock, json, all] { return cmd_list(*lock, *json, *all); }};
}

Subcommand add_help(CLI::App& app) {
    auto topic = std::make_shared<std::string>();
    CLI::App* help = app.add_subcommand("help", "where the manual explains what: its pages (docs/) by topic, and "
                                                "the page of each subcommand");
    help->add_option("topic", *topic, "a topic (running, faults, ...) or a subcommand: the page's path and sections");
    return {help, [&app, topic] { return cmd_help(app, *topic); }};
}

// Internal and hidden from --help: `lockbench repetition TREE PART`, one repetition of a
// tree's cell in a process of its own, handed its part (matrix_spec.h: RepetitionPart) in
// the file PART, as `matrix --jobs N` starts them.
Subcommand add_repetition(CLI::App& app) {
    struct Args {
        std::string tree, part;
        bool no_preflight = false;
    };
    auto a = std::make_shared<Args>();
    CLI::App* sub = app.add_subcommand("repetition", "")->group("");
    sub->add_option("tree", a->tree)->required();
    sub->add_option("part", a->part)->required();
    sub->add_flag("--no-preflight", a->no_preflight);
    return {sub, [a] {
                run_repetition_of_tree(a->tree, a->part, self_exe(), source_dir(), !a->no_preflight);
                return 0;
            }};
}

Subcommand add_client(CLI::App& app) {
    auto spec = std::make_shared<std::string>();
    CLI::App* client = app.add_subcommand("client", "")->group("");
    client->add_option("spec", *spec)->required();
    return {client, [spec] { return client_main(*spec); }};
}

}  // namespace

int main(int argc, char** argv) {
    std::string titles;
    for (Service s : services()) titles += (titles.empty() ? "" : ", ") + std::string(service_info(s).title);
    CLI::App app{"lockbench: distributed locks (" + titles + "; built-in algorithms and real libraries) "
                 "under faults, judged from the protected store's order"};
    app.require_subcommand(1);
    // In this order in --help.
    const std::vector<Subcommand> commands{add_run(app),     add_check(app),   add_matrix(app),        add_sweep(app),
                                           add_verdict(app), add_explore(app), add_merge(app),         add_report(app),
                                           add_list(app),    add_adapter_check(app), add_help(app),    add_repetition(app)};
    const Subcommand client = add_client(app);
    // Each subcommand's --help ends naming its page (kSubcommandPages); the whole, naming the manual.
    for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) sub->footer(manual_footer(sub->get_name()));
    app.footer("Manual: docs/, one page per topic (lockbench help lists them and the page of each subcommand)");
    app.description(wrapped(app.get_description(), kHelpWidth));
    wrap_help(app);
    // A bad command line is bad input like a bad scenario: one line naming the option, exit 2
    // (CLI11's own codes are 104 to 109, and its message takes two lines).
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return "lockbench: " + message_line(e.what()) + " (see lockbench --help)\n";
    });
    // What comes first must be a subcommand (or --help): CLI11 would answer anything else with
    // "A subcommand is required", naming neither the word it did not know nor the choices.
    if (argc > 1) {
        const std::string first = argv[1];
        std::string names;
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
            if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
            known = known || sub->get_name() == first;  // the hidden ones too (client, repetition)
        }
        if (!known && first != "-h" && first != "--help") {
            std::cerr << "lockbench: " << (first.starts_with("-") ? "unknown option " : "no subcommand ")
                      << excerpt_text(first) << (first.starts_with("-") ? " before the subcommand" : "")
                      << " (lockbench SUBCOMMAND [OPTIONS]: " << names << "; see lockbench --help)\n";
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // --help is a ParseError too, with 0
    }
    try {
        // A worker runs in a process group of its own, which the run that started it kills on
        // Ctrl-C and the like: it needs no handler of its own.
        // Every lockbench process adopts what its children leave behind (a daemon that left its
        // group), and a command ends all of it before it returns (process/process.h).
        // A command (not a client, nor a repetition a matrix started) also puts all it starts
        // in a cgroup whose guard ends it even after a SIGKILL of this process.
        if (!client.sub->parsed()) end_everything_started_when_gone();
        struct EndGuard {
            ~EndGuard() { end_guard(); }
        } end_guard_last;  // after EndDescendants below: what is left in the cgroup goes with it
        adopt_orphans();
        if (client.sub->parsed()) return client.run();
        install_cleanup_on_signals();
        struct EndDescendants {
            ~EndDescendants() { kill_all_descendants(); }
        } end_descendants;
        for (const Subcommand& c : commands)
            if (c.sub->parsed()) return c.run();
    } catch (const std::exception& e) {
        std::cerr << "lockbench: " << message_line(e.what()) << "\n";
        return 2;
    }
    return 0;
}
