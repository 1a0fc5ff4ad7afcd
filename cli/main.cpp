// lockbench: run lock algorithms against live redis-server processes and check them.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "faults/process.h"
#include "lockimpl/registry.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace fs = std::filesystem;
using namespace lockbench;

namespace {

std::string self_exe() {
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? "lockbench" : p.string();
}

int cmd_run(const std::string& file, std::optional<std::string> out, std::optional<std::uint64_t> seed,
            const std::vector<std::string>& only) {
    Scenario s = load_scenario(file);
    select_runs(s, only);
    RunOptions opts{out ? fs::path(*out) : fs::path("results") / s.name, seed, self_exe(), true};
    const nlohmann::json summary = run_scenario(s, opts);
    std::cout << format_table(summary);
    std::cout << "summary: " << (opts.out / "summary.json").string() << "\n";
    return expectations_exit_code(summary);
}

int cmd_check(const std::string& dir) {
    const nlohmann::json summary = recheck(dir);
    std::cout << format_table(summary);
    return expectations_exit_code(summary);
}

int cmd_list() {
    for (const AlgorithmInfo& a : algorithms()) {
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

    CLI::App* check = app.add_subcommand("check", "re-run the checker on a results folder");
    check->add_option("dir", dir, "results folder written by `lockbench run`")->required();

    CLI::App* list = app.add_subcommand("list", "list algorithms, their parameters, and the scenarios");
    CLI::App* client = app.add_subcommand("client", "")->group("");  // internal: one worker
    client->add_option("spec", spec)->required();

    CLI11_PARSE(app, argc, argv);
    try {
        if (client->parsed()) return client_main(spec);
        install_cleanup_on_signals();
        if (run->parsed()) return cmd_run(scenario, out, seed, only);
        if (check->parsed()) return cmd_check(dir);
        if (list->parsed()) return cmd_list();
    } catch (const std::exception& e) {
        std::cerr << "lockbench: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
