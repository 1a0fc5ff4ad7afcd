// Running a matrix or sweep: every repetition not yet done, in rounds, into its tree.
#include "sim/harness/matrix.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "analysis/run_summary.h"
#include "sim/engine/scenario.h"
#include "sim/harness/matrix_tree.h"
#include "sim/harness/runner.h"
#include "sim/live/redis_node.h"  // redis_server_binary

namespace fs = std::filesystem;

namespace lockbench {
namespace {

using Json = nlohmann::json;

std::string clock_text(double seconds) {
    const long long s = std::llround(std::max(0.0, seconds));
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    return buf;
}

// Expected cost of one repetition, in the unit the elapsed time is divided by: its workload
// plus a fixed start-up share (nodes, Sentinels, clients). Only ratios matter.
double rep_weight(const Json& scenario_source) {
    const Json w = scenario_source.value("workload", Json::object());
    return static_cast<double>(w.value("duration_ms", 3000)) / 1000.0 + 2.0;
}

struct Todo {
    const MatrixCell* cell;
    int rep;
    double weight;
};

// Every repetition not yet done, in rounds: every cell's first repetition, then every
// cell's second, and so on, so that a time budget that ends the work early leaves every
// cell with the same number of repetitions.
std::vector<Todo> todo_in_rounds(const MatrixSpec& spec, const MatrixOptions& opts, size_t& kept, size_t& shard_cells) {
    std::vector<Todo> todo;
    for (int k = 0; k < spec.repeat; ++k)
        for (const MatrixCell& cell : spec.cells) {
            if (static_cast<int>(cell.index) % opts.shard.count != opts.shard.index) continue;
            if (k == 0) ++shard_cells;
            if (rep_done(rep_dir(opts.out, cell, k))) ++kept;
            else todo.push_back({&cell, k, rep_weight(spec.scenario_of(cell).source)});
        }
    return todo;
}

void announce_matrix(const MatrixSpec& spec, const MatrixOptions& opts, size_t shard_cells, size_t kept) {
    std::cerr << "lockbench: " << spec.kind << " " << spec.id << ": " << shard_cells << " cells";
    if (opts.shard.count > 1) std::cerr << " in shard " << opts.shard.index << "/" << opts.shard.count;
    std::cerr << " × " << spec.repeat << " repetitions into " << opts.out.string();
    if (opts.budget_s) std::cerr << ", in rounds within " << clock_text(*opts.budget_s);
    if (kept) std::cerr << "; " << kept << " repetitions already done are kept";
    std::cerr << "\n";
}

// The seed repetition `rep` of `cell` runs with: its scenario's, counted up.
std::uint64_t rep_seed(const MatrixSpec& spec, const MatrixCell& cell, int rep) {
    return spec.scenario_of(cell).source.value("seed", std::uint64_t{1}) + static_cast<std::uint64_t>(rep);
}

// One repetition of one cell: the cell's scenario cut to its run, with the repetition's seed.
Json run_repetition(const MatrixSpec& spec, const MatrixOptions& opts, const Todo& t) {
    const MatrixCell& cell = *t.cell;
    const SpecScenario& entry = spec.scenario_of(cell);
    Scenario s = parse_scenario(entry.source, entry.file);
    std::erase_if(s.runs, [&](const RunSpec& r) { return r.name != cell.run; });
    const std::uint64_t seed = s.seed + static_cast<std::uint64_t>(t.rep);
    try {
        return run_scenario(s, {rep_dir(opts.out, cell, t.rep), seed, opts.self_exe, false, opts.project_dir, spec.simulated});
    } catch (const std::exception& e) {
        if (opts.progress) std::cerr << " failed\n";
        throw std::runtime_error(cell.id + " rep " + std::to_string(t.rep + 1) + ": " + e.what() +
                                 " (done repetitions are kept: run the same command to resume)");
    }
}

void report_repetition(const MatrixSpec& spec, const Json& summary) {
    const RunSummary r = run_summary_from_json(summary.at("runs").at(0));
    const auto v = static_cast<long long>(r.metric("mutual_exclusion_violations"));
    std::cerr << " " << v << (v == 1 ? " violation" : " violations");
    // A sweep's steps run values the scenario's `expect` was not written for.
    if (spec.kind == "matrix") std::cerr << ", expectations " << (r.expectations_held ? "held" : "NOT held");
    std::cerr << "\n";
}

// The work's clock and its estimate of the time left, by the repetitions' weights.
struct Progress {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double weight_done = 0, weight_left = 0;
    double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

void announce_repetition(const MatrixSpec& spec, const Progress& p, size_t done, size_t all, const Todo& t) {
    const double elapsed = p.elapsed_s();
    const std::string eta = p.weight_done > 0 ? "~" + clock_text(elapsed / p.weight_done * p.weight_left) + " left"
                                              : "estimating time left";
    std::cerr << "lockbench: [" << done << "/" << all << " repetitions done, " << clock_text(elapsed) << " elapsed, "
              << eta << "] " << t.cell->id << " rep " << t.rep + 1 << "/" << spec.repeat << " (seed "
              << rep_seed(spec, *t.cell, t.rep) << ") ..." << std::flush;
}

// A round is started only if one more, as long as the rounds so far took on average, still
// ends within the budget.
bool over_budget(const MatrixOptions& opts, const Progress& p, int rounds_run) {
    return opts.budget_s && p.elapsed_s() + p.elapsed_s() / rounds_run > *opts.budget_s;
}

}  // namespace

Json run_matrix(const MatrixSpec& spec, const MatrixOptions& opts) {
    redis_server_binary();  // fails here, in one line, before anything is written
    prepare_out(opts.out, spec);
    size_t kept = 0, shard_cells = 0;
    const std::vector<Todo> todo = todo_in_rounds(spec, opts, kept, shard_cells);
    if (opts.progress) announce_matrix(spec, opts, shard_cells, kept);
    Progress progress;
    for (const Todo& t : todo) progress.weight_left += t.weight;
    int rounds_run = 0;  // rounds finished by this command
    for (size_t i = 0; i < todo.size(); ++i) {
        const bool new_round = i > 0 && todo[i].rep != todo[i - 1].rep;
        if (new_round) ++rounds_run;
        if (new_round && over_budget(opts, progress, rounds_run)) {
            if (opts.progress)
                std::cerr << "lockbench: time budget: stopping after " << todo[i].rep << " of " << spec.repeat
                          << " repetitions per cell (" << clock_text(progress.elapsed_s()) << " spent of "
                          << clock_text(*opts.budget_s) << ")\n";
            return write_summary(opts.out, spec, opts.shard, BudgetStop{*opts.budget_s, todo[i].rep});
        }
        if (opts.progress) announce_repetition(spec, progress, kept + i, kept + todo.size(), todo[i]);
        const Json summary = run_repetition(spec, opts, todo[i]);
        refresh_cell(opts.out, *todo[i].cell, spec.repeat);
        write_summary(opts.out, spec, opts.shard);
        progress.weight_done += todo[i].weight;
        progress.weight_left -= todo[i].weight;
        if (opts.progress) report_repetition(spec, summary);
    }
    if (opts.budget_s && opts.progress && rounds_run == 0 && progress.elapsed_s() > *opts.budget_s)
        std::cerr << "lockbench: warning: one repetition of every cell took " << clock_text(progress.elapsed_s())
                  << ", more than the time budget of " << clock_text(*opts.budget_s)
                  << ": scale the cases' time down (see README, \"The main job's time\")\n";
    return write_summary(opts.out, spec, opts.shard);
}

}  // namespace lockbench
