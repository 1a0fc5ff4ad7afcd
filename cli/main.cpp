// lockbench: run lock algorithms against live redis-server processes and check them.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "faults/process.h"
#include "lockimpl/registry.h"
#include "sim/harness/explore.h"
#include "sim/live/external.h"
#include "sim/harness/matrix.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/recheck.h"
#include "sim/harness/runner.h"
#include "sim/live/client_main.h"
#include "sim/engine/scenario.h"
#include "sim/engine/summary.h"

namespace fs = std::filesystem;
using namespace lockbench;

namespace {

std::string self_exe() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? "lockbench" : p.string();
}

// The repository this binary was built from: scenarios/ and analysis/ live there.
fs::path source_dir() {
    const fs::path beside = fs::path(self_exe()).parent_path().parent_path();
    if (fs::is_directory(beside / "scenarios") && fs::is_regular_file(beside / "analysis" / "report.py")) return beside;
    return LOCKBENCH_SOURCE_DIR;
}

int cmd_run(const std::string& file, std::optional<std::string> out, std::optional<std::uint64_t> seed,
            const std::vector<std::string>& only, const std::string& backend) {
    Scenario s = load_scenario(file);
    select_runs(s, only);
    RunOptions opts{out ? fs::path(*out) : fs::path("results") / s.name, seed, self_exe(), true, source_dir(),
                    backend == "sim"};
    const auto locks = lock_folders(opts.out, {});
    const nlohmann::json summary = run_scenario(s, opts);
    std::cout << format_table(summary);
    std::cout << "summary: " << (opts.out / "summary.json").string() << "\n";
    return expectations_exit_code(summary);
}

std::vector<fs::path> catalog_files(const std::vector<std::string>& given) {
    std::vector<fs::path> files(given.begin(), given.end());
    if (!files.empty()) return files;
    const fs::path dir = source_dir() / "scenarios";
    if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": no scenarios folder; name scenario files");
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::ranges::sort(files);
    return files;
}

int finish_matrix(const nlohmann::json& summary, const fs::path& out) {
    std::cout << format_matrix_table(summary);
    std::cout << "summary: " << (out / "summary.json").string() << "\n";
    std::cout << "report:  lockbench report " << out.string() << "\n";
    return matrix_exit_code(summary);
}

// `report` writes into DIR and reads DIR's trees (DIR itself, or its subfolders that hold
// lockbench-results.json, as report.py finds them): it holds the lock of each, so that no tree
// changes under it and no two reports write one page. A folder with no tree is left as it
// is, for report.py to refuse.
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
    for (auto& l : locks) l.keep_across_exec();  // report.py holds them until it ends
    // What `check` refuses is not drawn: a damaged run fails here, before the old report is touched.
    try {
        check_trees_for_report(dir);
    } catch (const std::exception& e) {
        std::cerr << "lockbench report: " << e.what() << "\n";
        return 2;
    }
    const fs::path script = source_dir() / "analysis" / "report.py";
    const char* python = "/usr/bin/python3";  // Debian's, with python3-matplotlib
    if (::access(python, X_OK) != 0) throw std::runtime_error(std::string(python) + ": missing; scripts/setup installs it");
    std::cout << std::flush;
    std::vector<char*> args{const_cast<char*>(python), const_cast<char*>(script.c_str()), const_cast<char*>(dir.c_str()),
                            nullptr};
    ::execv(python, args.data());
    throw std::runtime_error(std::string("cannot start ") + python + ": " + std::strerror(errno));
}

// 0: every expectation held and every figure matches summary.json; 1: an expectation failed
// or a figure differs (one line each); 2 (thrown): damaged or unreadable.
int cmd_check(const std::string& dir) {
    const Recheck r = recheck(dir);
    std::cout << format_table(r.summary);
    for (const std::string& d : r.differences) std::cout << "differs: " << d << "\n";
    if (!r.differences.empty()) {
        std::cout << r.differences.size() << " figure(s) differ from summary.json: it was not made from these histories\n";
        return 1;
    }
    return expectations_exit_code(r.summary);
}

int cmd_list() {
    std::vector<const AlgorithmInfo*> all;
    for (const AlgorithmInfo& a : algorithms()) all.push_back(&a);
    all.push_back(&external_algorithm());
    for (const AlgorithmInfo* ap : all) {
        const AlgorithmInfo& a = *ap;
        std::cout << a.name << " — " << a.summary << "\n";
        std::cout << "    nodes: " << a.default_nodes << " by default\n";
        for (const ParamSpec& p : a.params) {
            std::cout << "    " << p.name << " = " << p.default_value.dump();
            if (!p.choices.empty()) {
                std::string c;
                for (const auto& x : p.choices) c += (c.empty() ? "" : "|") + x;
                std::cout << " (" << c << ")";
            }
            std::cout << ": " << p.doc << "\n";
        }
    }
    const fs::path dir = fs::path(self_exe()).parent_path().parent_path() / "scenarios";
    std::cout << "\nscenarios: " << (fs::is_directory(dir) ? dir.string() : std::string("scenarios/")) << "\n";
    if (fs::is_directory(dir)) {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".json") names.push_back(e.path().filename().string());
        std::ranges::sort(names);
        for (const auto& n : names) std::cout << "    " << n << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"lockbench: Redis lock algorithms on live redis-server, under a checker"};
    app.require_subcommand(1);

    std::string scenario, dir, spec;
    std::optional<std::string> out;
    std::optional<std::uint64_t> seed;
    std::vector<std::string> only;
    CLI::App* run = app.add_subcommand("run", "run every algorithm a scenario names and check the results");
    run->add_option("scenario", scenario, "scenario file (JSON)")->required();
    run->add_option("--out", out, "results folder (default: results/<scenario name>)");
    run->add_option("--seed", seed, "seed (default: the scenario's)");
    run->add_option("--algorithm", only, "only runs of this algorithm or run name (repeatable)");
    std::string backend = "live";
    run->add_option("--backend", backend, "live: real redis-servers and processes; sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));

    CLI::App* check = app.add_subcommand("check", "re-run the checker on a results folder");
    check->add_option("dir", dir, "results folder written by `lockbench run`")->required();

    std::vector<std::string> scenarios, trees;
    int repeat = 1, steps = 0;
    std::string shard = "0/1", param;
    CLI::App* matrix = app.add_subcommand("matrix", "run every (scenario, algorithm) cell N times into one results tree");
    matrix->add_option("scenarios", scenarios, "scenario files (default: every file in scenarios/)");
    matrix->add_option("--algorithm", only, "only runs of this algorithm or run name (repeatable)");
    matrix->add_option("--repeat", repeat, "repetitions per cell, seeds s, s+1, ... (default 1)");
    matrix->add_option("--out", out, "results tree (default: results/matrix); run again to resume");
    matrix->add_option("--shard", shard, "run only the cells whose index is I modulo N (I/N)");
    matrix->add_option("--backend", backend, "live (default) or sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));
    std::optional<double> budget_s;
    matrix->add_option("--time-budget-s", budget_s, "start another round of repetitions only if it ends within this "
                       "many seconds of the start (every cell runs at least once)")->check(CLI::PositiveNumber);

    CLI::App* sweep = app.add_subcommand("sweep", "vary one numeric field of a scenario and run each step N times");
    sweep->add_option("scenario", scenario, "scenario file (JSON)")->required();
    sweep->add_option("--param", param, "PATH=FROM..TO, e.g. faults.0.duration_ms=100..700")->required();
    sweep->add_option("--steps", steps, "values from FROM to TO, evenly spaced")->required();
    sweep->add_option("--algorithm", only, "only runs of this algorithm or run name (repeatable)");
    sweep->add_option("--repeat", repeat, "repetitions per step and run (default 1)");
    sweep->add_option("--out", out, "results tree (default: results/sweep-<scenario>); run again to resume");
    sweep->add_option("--shard", shard, "run only the cells whose index is I modulo N (I/N)");
    sweep->add_option("--backend", backend, "live (default) or sim: the deterministic simulator")
        ->check(CLI::IsMember({"live", "sim"}));
    sweep->add_option("--time-budget-s", budget_s, "as for matrix")->check(CLI::PositiveNumber);

    CLI::App* explore = app.add_subcommand("explore", "search fault schedules of a scenario in the simulator, shrink what violates");
    explore->add_option("scenario", scenario, "scenario file (JSON)")->required();
    explore->add_option("--algorithm", only, "only runs of this algorithm or run name (repeatable)");
    long long schedules = 1000;
    std::uint64_t explore_seed = 1;
    std::optional<std::uint64_t> replay_seed;
    bool first_only = false;
    explore->add_option("--schedules", schedules, "schedules to draw per run (default 1000)")->check(CLI::PositiveNumber);
    explore->add_option("--seed", explore_seed, "the search's seed (default 1)");
    explore->add_option("--out", out, "where explore.json and the witnesses go (default: results/explore-<scenario>)");
    explore->add_option("--replay", replay_seed, "run the one schedule with this seed (from explore.json) into --out");
    explore->add_flag("--first", first_only, "per run, stop at the first violating schedule");

    CLI::App* merge = app.add_subcommand("merge", "join the results trees of shards of one matrix or sweep");
    merge->add_option("out", dir, "the merged tree (made if missing)")->required();
    merge->add_option("trees", trees, "shard trees")->required();
    bool allow_incomplete = false;
    merge->add_flag("--allow-incomplete", allow_incomplete,
                    "merge even if some cells lack repetitions (they are listed in summary.json and shown as not run)");

    CLI::App* report = app.add_subcommand("report", "write report.html and report.md from a results tree (or a folder of them)");
    report->add_option("dir", dir, "results tree, or a folder whose subfolders are results trees")->required();

    CLI::App* list = app.add_subcommand("list", "list algorithms, their parameters, and the scenarios");
    CLI::App* client = app.add_subcommand("client", "")->group("");  // internal: one worker
    client->add_option("spec", spec)->required();

    CLI11_PARSE(app, argc, argv);
    try {
        if (client->parsed()) return client_main(spec);
        install_cleanup_on_signals();
        if (run->parsed()) return cmd_run(scenario, out, seed, only, backend);
        if (check->parsed()) return cmd_check(dir);
        if (matrix->parsed()) {
            MatrixSpec spec = matrix_spec(catalog_files(scenarios), only, repeat);
            if (backend == "sim") spec = simulated(std::move(spec));
            const fs::path o = out ? fs::path(*out) : fs::path("results/matrix");
            const auto locks = lock_folders(o, {});
            return finish_matrix(run_matrix(spec, {o, parse_shard(shard), self_exe(), true, source_dir(), budget_s}), o);
        }
        if (sweep->parsed()) {
            MatrixSpec spec = sweep_spec(scenario, parse_sweep_param(param), steps, only, repeat);
            if (backend == "sim") spec = simulated(std::move(spec));
            const fs::path o = out ? fs::path(*out)
                                   : fs::path("results") / ("sweep-" + spec.sweep->scenario);
            const auto locks = lock_folders(o, {});
            return finish_matrix(run_matrix(spec, {o, parse_shard(shard), self_exe(), true, source_dir(), budget_s}), o);
        }
        if (explore->parsed()) {
            const Scenario s = load_scenario(scenario);
            sim::ExploreOptions o{scenario, only, schedules, explore_seed,
                                  out ? fs::path(*out) : fs::path("results") / ("explore-" + s.name), true, first_only};
            const auto locks = lock_folders(o.out, {});
            if (replay_seed) {
                if (only.size() != 1) throw std::runtime_error("--replay needs one --algorithm: the run's name");
                const nlohmann::json summary = sim::replay(o, only.front(), *replay_seed);
                std::cout << format_table(summary);
                std::cout << "replayed into " << (o.out / "run").string() << " (scenario: " << (o.out / "scenario.json").string()
                          << ")\n";
                return 0;
            }
            const nlohmann::json r = sim::explore(o);
            std::cout << "explore: " << r.at("schedules_run") << " schedules in " << r.at("wall_s").get<double>() << " s, "
                      << r.at("violations_found") << " violating run(s) found and shrunk\n";
            for (const auto& v : r.at("violations"))
                std::cout << "  " << v.at("run").get<std::string>() << ": " << v.at("violation").get<std::string>()
                          << " in schedule " << v.at("schedule_seed") << " after " << v.at("found_after_s").get<double>()
                          << " s; witness " << (o.out / v.at("witness").at("scenario").get<std::string>()).string() << "\n";
            std::cout << "explore.json: " << (o.out / "explore.json").string() << "\n";
            return 0;
        }
        if (merge->parsed()) {
            std::vector<fs::path> paths(trees.begin(), trees.end());
            const auto locks = lock_folders(dir, paths);
            const nlohmann::json summary = merge_results(dir, paths, allow_incomplete);
            const auto& incomplete = summary.at("incomplete_cells");
            std::cerr << "lockbench: merged " << paths.size() << " trees into " << dir << ": "
                      << summary.at("cells").size() - incomplete.size() << " of " << summary.at("cells").size()
                      << " cells complete";
            if (!incomplete.empty())
                std::cerr << "; " << incomplete.size() << " incomplete, listed in summary.json (incomplete_cells)";
            std::cerr << "\n";
            return finish_matrix(summary, dir);
        }
        if (report->parsed()) return cmd_report(dir);
        if (list->parsed()) return cmd_list();
    } catch (const std::exception& e) {
        std::cerr << "lockbench: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
