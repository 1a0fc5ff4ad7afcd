#include "sim/harness/explore.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <stdexcept>

#include "analysis/checker.h"
#include "analysis/history_io.h"
#include "sim/harness/matrix.h"
#include "faults/process.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/runner.h"
#include "sim/virtual/sim_run.h"
#include "sim/engine/workload.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// The scenario with only run `name`, its faults made its own (the scenario's, unless it
// names its own), so that a schedule can change them.
Json one_run(const Json& source, const Scenario& parsed, const std::string& name) {
    std::size_t index = 0;
    while (index < parsed.runs.size() && parsed.runs[index].name != name) ++index;
    if (index == parsed.runs.size()) throw std::runtime_error("no run named " + name);
    Json s = source;
    Json run = source.at("runs").at(index);
    if (!run.contains("faults")) run["faults"] = source.value("faults", Json::array());
    run["name"] = name;
    s.erase("faults");
    s["runs"] = Json::array({run});
    return s;
}

long long draw(std::mt19937_64& rng, long long lo, long long hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<long long>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

struct Outcome {
    std::string violation;   // "" when the schedule held
    long long count = 0;     // how many of them
};

// Runs a one-run scenario in the simulator into `dir` and checks it.
Outcome simulate(const Json& scenario, std::uint64_t seed, const fs::path& dir) {
    Scenario s;
    try {
        s = parse_scenario(scenario, "<schedule>");
    } catch (const ScenarioError&) {
        return {"invalid", 0};  // a draw or a cut the scenario rules refuse (a pause past the end)
    }
    (void)dir;  // simulate_verdict writes nothing
    const SimVerdict r = simulate_verdict(s, s.runs.at(0), seed);
    if (r.mutual_exclusion_violations > 0) return {"mutual_exclusion_violations", r.mutual_exclusion_violations};
    if (r.stale_writes_accepted > 0) return {"stale_writes_accepted", r.stale_writes_accepted};
    if (r.lost_updates > 0) return {"lost_updates", r.lost_updates};
    return {};
}

// Smaller variants of a violating schedule, biggest cuts first.
std::vector<Json> smaller(const Json& s) {
    std::vector<Json> out;
    const Json& run = s.at("runs").at(0);
    const int clients = s.at("workload").value("clients", 8);
    // Fewer clients, if no fault names the last one.
    bool last_named = false;
    for (const auto& f : run.at("faults"))
        if (f.contains("client") && f["client"].is_number_integer() && f["client"] == clients - 1) last_named = true;
    if (clients > 2 && !last_named) {
        Json t = s;
        t["workload"]["clients"] = clients - 1;
        out.push_back(t);
    }
    // A shorter run.
    const long long duration = s.at("workload").value("duration_ms", 3000LL);
    if (duration > 100) {
        Json t = s;
        t["workload"]["duration_ms"] = duration / 2;
        out.push_back(t);
    }
    // Fewer faults, then shorter ones.
    for (std::size_t i = 0; i < run.at("faults").size(); ++i) {
        Json t = s;
        t["runs"][0]["faults"].erase(i);
        out.push_back(t);
    }
    for (std::size_t i = 0; i < run.at("faults").size(); ++i)
        for (const char* field : {"duration_ms", "jump_ms", "restart_after_ms", "at_ms", "occurrence"}) {
            const Json& f = run.at("faults").at(i);
            if (!f.contains(field) || !f.at(field).is_number_integer()) continue;
            const long long v = f.at(field).get<long long>();
            const long long least = std::string(field) == "occurrence" ? 1 : 0;
            if (v <= least) continue;
            Json t = s;
            t["runs"][0]["faults"][i][field] = std::max(least, std::string(field) == "occurrence" ? v - 1 : v / 2);
            out.push_back(t);
        }
    return out;
}

}  // namespace

Json draw_schedule(const Json& source, const std::string& run, std::uint64_t seed) {
    const Scenario parsed = parse_scenario(source, "<scenario>");
    const Json written = one_run(source, parsed, run);  // the run as the file has it
    Json s = written;
    std::mt19937_64 rng(seed);
    const RunSpec& spec = *std::ranges::find_if(parsed.runs, [&](const RunSpec& r) { return r.name == run; });
    const long long duration = parsed.workload.duration_ms;
    // Who and where are renamed consistently, so that faults aimed at one client (or node)
    // stay aimed at one; how many times a point is passed shifts alike for every fault, so
    // that their order holds; lengths and times are drawn each around its own value.
    std::vector<int> client(static_cast<std::size_t>(parsed.workload.clients)), node(static_cast<std::size_t>(spec.nodes));
    std::iota(client.begin(), client.end(), 0);
    std::iota(node.begin(), node.end(), 0);
    std::shuffle(client.begin(), client.end(), rng);
    std::shuffle(node.begin(), node.end(), rng);
    const long long shift = draw(rng, 0, 2);
    const auto around = [&](Json& f, const char* field, long long lo_div, long long hi_mul) {
        if (!f.contains(field) || !f[field].is_number_integer()) return;  // a drawn length is drawn already
        const long long v = f[field].get<long long>();
        f[field] = v >= 0 ? draw(rng, v / lo_div, hi_mul * v) : -draw(rng, -v / lo_div, -hi_mul * v);
    };
    for (auto& f : s["runs"][0]["faults"]) {
        if (f.contains("occurrence")) f["occurrence"] = f["occurrence"].get<long long>() + shift;
        // "random" and "holder" (a repeating fault) name no client to rename.
        if (f.contains("client") && f["client"].is_number_integer()) f["client"] = client.at(f["client"].get<std::size_t>() % client.size());
        if (f.contains("node")) f["node"] = node.at(f["node"].get<std::size_t>() % node.size());
        if (f.contains("nodes"))
            for (auto& n : f["nodes"]) n = node.at(n.get<std::size_t>() % node.size());
        around(f, "duration_ms", 2, 2);
        around(f, "jump_ms", 2, 2);
        if (f.contains("at_ms")) f["at_ms"] = draw(rng, 0, 2 * f["at_ms"].get<long long>());
        if (f.contains("restart_after_ms")) f["restart_after_ms"] = draw(rng, 0, 2 * f["restart_after_ms"].get<long long>());
        // Within the run, as the scenario rules want (a longer draw is cut, not wasted).
        if (f.contains("duration_ms"))
            f["duration_ms"] = std::max(1LL, std::min(f["duration_ms"].get<long long>(),
                                                      duration - f.value("at_ms", 0LL)));
    }
    auto& w = s["workload"];
    if (w.contains("start_stagger_ms")) w["start_stagger_ms"] = draw(rng, 0, 2 * w["start_stagger_ms"].get<long long>());
    s["seed"] = rng() >> 12;  // 52 bits: an exact JSON number
    // What the scenario marks as fixed goes back to its written value.
    for (const std::string& path : parsed.explore_fixed) {
        if (path == "seed" || path == "workload.start_stagger_ms") {
            const Json& from = path == "seed" ? written : written.at("workload");
            Json& to = path == "seed" ? s : s["workload"];
            const std::string key = path == "seed" ? "seed" : "start_stagger_ms";
            if (from.contains(key)) to[key] = from.at(key);
            continue;
        }
        const std::string index = path.substr(7, path.find('.', 7) - 7), field = path.substr(path.rfind('.') + 1);
        const Json& faults = written.at("runs").at(0).at("faults");
        for (std::size_t i = 0; i < faults.size(); ++i)
            if ((index == "*" || index == std::to_string(i)) && faults[i].contains(field))
                s["runs"][0]["faults"][i][field] = faults[i][field];
    }
    s["name"] = parsed.name + "-" + std::to_string(seed);
    return s;
}

namespace {

// The chosen runs of the scenario that the simulator can run.
std::vector<std::string> runs_to_explore(const Scenario& s, const std::vector<std::string>& only) {
    Scenario copy = s;
    select_runs(copy, only);
    std::vector<std::string> names;
    for (const RunSpec& r : copy.runs)
        if (!unsupported(r)) names.push_back(r.name);
    if (names.empty()) throw std::runtime_error(s.path + ": no run here can be simulated");
    return names;
}

// Shrinks a violating schedule: keeps each smaller variant that still shows the violation.
Json shrink(Json schedule, const std::string& violation, const fs::path& scratch, int& steps) {
    for (bool progress = true; progress;) {
        progress = false;
        for (const Json& candidate : smaller(schedule)) {
            ++steps;
            if (simulate(candidate, candidate.at("seed").get<std::uint64_t>(), scratch).violation == violation) {
                schedule = candidate;
                progress = true;
                break;
            }
        }
    }
    return schedule;
}

// The shrunk schedule as a scenario anyone can run (DIR/witness-<run>-<seed>.json), and its
// simulated run as a one-cell results tree beside it (DIR/witness-<run>-<seed>/), which
// `lockbench report DIR` draws.
Json write_witness(const Json& schedule, const std::string& run, std::uint64_t seed, const fs::path& out) {
    const std::string name = "witness-" + run + "-" + std::to_string(seed);
    const fs::path file = out / (name + ".json"), tree = out / name;
    Json scenario = schedule;
    scenario["description"] = "Shrunk by lockbench explore from schedule " + std::to_string(seed) + " of " +
                              schedule.value("name", std::string()) + ": the smallest variant found that still violates.";
    write_atomically(file, scenario.dump(2) + "\n");
    // Built beside the tree it replaces and switched in whole (results_folder.h).
    const fs::path staging = make_staging(tree);
    const Json summary = run_matrix(simulated(matrix_spec({file}, {}, 1)), {staging, Shard{0, 1}, "", false, {}});
    replace_folder(staging, tree);
    return {{"scenario", file.filename().string()}, {"tree", tree.filename().string()},
            {"figures", summary.at("cells").at(0).at("reps").at(0)}};
}

// Seconds since a start that the caller sets: each run's search has its own.
class Stopwatch {
public:
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }

private:
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// What the search of one run found: its line of explore.json's "runs", its first violating
// schedule shrunk (if any), and every violating schedule.
struct RunSearch {
    Json record;
    std::optional<Json> first;
    Json violating = Json::array();
};

// The first violating schedule of a run, shrunk, its witness written; `found_after_s` is
// counted from the start of this run's search.
Json first_violation(const Json& schedule, const Outcome& o, const std::string& run, std::uint64_t seed,
                     double found_after_s, const fs::path& scratch, const ExploreOptions& opts) {
    int steps = 0;
    const Json shrunk = shrink(schedule, o.violation, scratch / "shrink", steps);
    Json w = write_witness(shrunk, run, seed, opts.out);
    if (opts.progress)
        std::cerr << "lockbench: explore " << run << ": schedule " << seed << " violates (" << o.violation
                  << "); shrunk in " << steps << " tries to " << w.at("scenario").get<std::string>() << "\n";
    return {{"run", run}, {"schedule_seed", seed}, {"violation", o.violation}, {"count", o.count},
            {"found_after_s", found_after_s}, {"shrink_steps", steps},
            {"shrunk", {{"clients", shrunk.at("workload").value("clients", 8)},
                        {"duration_ms", shrunk.at("workload").value("duration_ms", 0LL)},
                        {"faults", shrunk.at("runs").at(0).at("faults")}}},
            {"witness", w}};
}

// Draws and simulates the schedules of one run. Its clock starts here, so that a run's
// first_violation_s and wall_s say how long that run's own search took, whatever ran before it.
RunSearch search_run(const Json& source, const std::string& run, const fs::path& scratch, const ExploreOptions& opts) {
    const Stopwatch clock;
    RunSearch found;
    long long n = 0, invalid = 0;
    std::optional<double> first_s;
    for (long long i = 0; i < opts.schedules; ++i) {
        const std::uint64_t seed = derive_seed(opts.seed, static_cast<std::uint64_t>(i));
        const Json schedule = draw_schedule(source, run, seed);
        const Outcome o = simulate(schedule, schedule.at("seed").get<std::uint64_t>(), scratch / "s");
        ++n;
        if (opts.progress && (i % 100 == 99 || i + 1 == opts.schedules))
            std::cerr << "lockbench: explore " << run << ": " << i + 1 << "/" << opts.schedules << " schedules, "
                      << found.violating.size() << " violating, " << static_cast<int>(clock.seconds()) << " s\n";
        if (o.violation == "invalid") ++invalid;
        if (o.violation == "invalid" || o.violation.empty()) continue;
        found.violating.push_back({{"run", run}, {"schedule_seed", seed}, {"violation", o.violation}, {"count", o.count}});
        if (first_s) continue;
        first_s = clock.seconds();
        found.first = first_violation(schedule, o, run, seed, *first_s, scratch, opts);
        if (opts.stop_at_first) break;
    }
    found.record = {{"schedules", n}, {"violating", found.violating.size()}, {"invalid", invalid},
                    {"first_violation_s", first_s ? Json(*first_s) : Json()}, {"wall_s", clock.seconds()}};
    return found;
}

}  // namespace

Json explore(const ExploreOptions& opts) {
    const Json source = read_json_file(opts.scenario_file);
    const Scenario parsed = load_scenario(opts.scenario_file);
    const auto runs = runs_to_explore(parsed, opts.algorithms);
    fs::create_directories(opts.out);
    const fs::path scratch = make_run_temp_dir();
    const Stopwatch clock;
    Json found = Json::array();  // the first violating schedule of each run, shrunk, with its witness
    Json every = Json::array();  // every violating schedule: replay any with --replay SEED
    Json per_run = Json::object();
    long long run_count = 0;
    try {
        for (const std::string& run : runs) {
            RunSearch r = search_run(source, run, scratch, opts);
            run_count += r.record.at("schedules").get<long long>();
            if (r.first) found.push_back(std::move(*r.first));
            for (auto& v : r.violating) every.push_back(std::move(v));
            per_run[run] = std::move(r.record);
        }
    } catch (...) {
        fs::remove_all(scratch);
        throw;
    }
    fs::remove_all(scratch);
    const double wall_s = clock.seconds();
    Json result = {{"scenario", parsed.name}, {"scenario_file", opts.scenario_file.string()}, {"seed", opts.seed},
                   {"schedules_run", run_count}, {"violations_found", found.size()}, {"wall_s", wall_s},
                   {"schedules_per_s", static_cast<double>(run_count) / std::max(wall_s, 1e-9)},
                   {"runs", per_run}, {"violations", found}, {"violating_schedules", every}};
    write_atomically(opts.out / "explore.json", result.dump(2) + "\n");
    return result;
}

Json replay(const ExploreOptions& opts, const std::string& run, std::uint64_t schedule_seed) {
    const Json schedule = draw_schedule(read_json_file(opts.scenario_file), run, schedule_seed);
    fs::create_directories(opts.out);
    write_atomically(opts.out / "scenario.json", schedule.dump(2) + "\n");
    RunOptions o{opts.out / "run", std::nullopt, "", opts.progress, {}, true};
    return run_scenario(parse_scenario(schedule, (opts.out / "scenario.json").string()), o);
}

}  // namespace lockbench::sim
