#include "sim/harness/explore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "analysis/aggregate.h"
#include "sim/harness/discover.h"
#include "sim/harness/matrix.h"
#include "process/process.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/worker_pool.h"
#include "sim/harness/runner.h"
#include "sim/virtual/sim_run.h"
#include "sim/engine/workload.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

Json one_run_scenario(const Json& source, const Scenario& parsed, const std::string& name) {
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

namespace {

long long draw(std::mt19937_64& rng, long long lo, long long hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<long long>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

struct Outcome {
    std::string violation;   // "" when the schedule held
    long long count = 0;     // how many of them
};

// Runs a one-run scenario in the simulator, in memory, and checks it.
Outcome simulate(const Json& scenario, std::uint64_t seed) {
    Scenario s;
    try {
        s = parse_scenario(scenario, "<schedule>");
    } catch (const ScenarioError&) {
        return {"invalid", 0};  // a draw or a cut the scenario rules refuse (a pause past the end)
    }
    const SimVerdict r = simulate_verdict(s, s.runs.at(0), seed);
    // A fenced lock promises that no stale write lands, not that sections never overlap (a
    // holder slowed past its lease still overlaps the next one, harmlessly if it never writes):
    // its failures are the writes that fencing lets through.
    const bool fenced = s.runs.at(0).params.json().value("fence", false);
    if (!fenced && r.mutual_exclusion_violations > 0) return {"mutual_exclusion_violations", r.mutual_exclusion_violations};
    if (r.stale_writes_accepted > 0) return {"stale_writes_accepted", r.stale_writes_accepted};
    if (r.lost_updates > 0) return {"lost_updates", r.lost_updates};
    return {};
}

}  // namespace

std::string simulated_violation(const Json& scenario, std::uint64_t seed) { return simulate(scenario, seed).violation; }

namespace {

// Smaller variants of a violating schedule, biggest cuts first: fewer faults, a shorter run
// (each later try is cheaper), half the clients, one client fewer, then shorter faults.
std::vector<Json> smaller(const Json& s) {
    std::vector<Json> out;
    const Json& run = s.at("runs").at(0);
    for (std::size_t i = 0; i < run.at("faults").size(); ++i) {
        Json t = s;
        t["runs"][0]["faults"].erase(i);
        out.push_back(t);
    }
    const long long duration = s.at("workload").value("duration_ms", 3000LL);
    if (duration > 100) {
        Json t = s;
        t["workload"]["duration_ms"] = duration / 2;
        out.push_back(t);
    }
    // Fewer clients, if no fault names one of those left out.
    const int clients = s.at("workload").value("clients", 8);
    int named = -1;
    for (const auto& f : run.at("faults"))
        if (f.contains("client") && f["client"].is_number_integer()) named = std::max(named, f["client"].get<int>());
    for (const int fewer : {clients / 2, clients - 1}) {
        if (fewer < 2 || fewer <= named || fewer == clients || (fewer == clients - 1 && fewer == clients / 2)) continue;
        Json t = s;
        t["workload"]["clients"] = fewer;
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
    const Json written = one_run_scenario(source, parsed, run);  // the run as the file has it
    Json s = written;
    std::mt19937_64 rng(seed);
    const RunSpec& spec = *std::ranges::find_if(parsed.runs, [&](const RunSpec& r) { return r.name == run; });
    const long long duration = spec.workload.duration_ms;
    // Who and where are renamed consistently, so that faults aimed at one client (or node)
    // stay aimed at one; how many times a point is passed shifts alike for every fault, so
    // that their order holds; lengths and times are drawn each around its own value.
    std::vector<int> client(static_cast<std::size_t>(spec.workload.clients)), node(static_cast<std::size_t>(spec.nodes));
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
        if (f.contains("nodes") && f["nodes"].is_array())  // "all" stays all
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
    // A scenario that leaves "workload" out has its defaults: an empty object says so, and the
    // shrinking reads it (left as s["workload"] made it, null, it would be refused).
    Json& w = s["workload"];
    if (w.is_null()) w = Json::object();
    if (w.contains("start_stagger_ms")) w["start_stagger_ms"] = draw(rng, 0, 2 * w["start_stagger_ms"].get<long long>());
    s["seed"] = rng() >> 12;  // 52 bits: an exact JSON number
    // What the scenario marks as fixed goes back to its written value.
    for (const std::string& path : parsed.explore_fixed) {
        if (path == "seed" || path == "workload.start_stagger_ms") {
            const Json& from = path == "seed" ? written : written.value("workload", Json::object());
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

Json draw_for(const ExploreOptions& opts, const Json& source, const std::string& run, std::uint64_t seed) {
    return opts.budget > 0 ? draw_budget_schedule(source, run, seed, opts.budget) : draw_schedule(source, run, seed);
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

// Shrinks a violating schedule: keeps each smaller variant that still shows the violation,
// until none does, `go_on` says the time is up (a search bounded by --seconds), or `settled`
// knows the class of what is left (a smaller schedule alike was shrunk already).
Json shrink(Json schedule, const std::string& violation, int& steps,
            const std::function<bool()>& go_on = [] { return true; },
            const std::function<bool(const Json&)>& settled = [](const Json&) { return false; }) {
    for (bool progress = true; progress && go_on();) {
        progress = false;
        for (const Json& candidate : smaller(schedule)) {
            ++steps;
            if (simulate(candidate, candidate.at("seed").get<std::uint64_t>()).violation == violation) {
                schedule = candidate;
                progress = !settled(schedule);
                break;
            }
        }
    }
    return schedule;
}

// The order in which a schedule's faults land: its simulated run's nemesis.jsonl, each start
// line matched to the fault of its label.
std::vector<std::size_t> landing_order(const Json& schedule, const fs::path& dir) {
    const Scenario s = parse_scenario(schedule, "<schedule>");
    fs::remove_all(dir);
    run_simulated(s, s.runs.at(0), schedule.at("seed").get<std::uint64_t>(), dir);
    std::vector<std::size_t> order;
    std::ifstream in(dir / "nemesis.jsonl");
    for (std::string line; std::getline(in, line);) {
        const Json j = Json::parse(line, nullptr, false);
        if (!j.is_object() || j.value("type", "") != "start") continue;
        const auto& faults = s.runs.at(0).faults;
        for (std::size_t i = 0; i < faults.size(); ++i)
            if (faults[i].label() == j.value("label", "") && !std::ranges::count(order, i)) {
                order.push_back(i);
                break;
            }
    }
    return order;
}

// The shrunk schedule as a scenario anyone can run (DIR/witness-<run>-<seed>.json), and its
// simulated run as a one-cell results tree beside it (DIR/witness-<run>-<seed>/), which
// `lockbench report DIR` draws.
Json write_witness(const Json& schedule, const std::string& run, std::uint64_t seed, const fs::path& out) {
    const std::string name = "witness-" + run + "-" + std::to_string(seed);
    const fs::path file = out / (name + ".json"), tree = out / name;
    Json scenario = schedule;
    scenario.erase("failure_class");  // the file's column of the library table; a witness is not in it
    scenario["name"] = name;  // unique: schedule i of every run has the same seed
    // The case's count of faults is a precondition of the case's story (as_written.h), not of a
    // schedule drawn around it: its witness is held to nothing it did not write.
    const auto drop_fault_count = [](Json& holder) {
        if (holder.is_object() && holder.contains("expect") && holder["expect"].is_object()) holder["expect"].erase("faults_injected");
    };
    drop_fault_count(scenario);
    if (scenario.contains("runs") && scenario["runs"].is_array())
        for (Json& r : scenario["runs"]) drop_fault_count(r);
    scenario["description"] = "Shrunk by lockbench explore from schedule " + std::to_string(seed) + " of " +
                              schedule.value("name", std::string()) + ": the smallest variant found that still violates.";
    write_atomically(file, scenario.dump(2) + "\n");
    // Built beside the tree it replaces and switched in whole (results_folder.h).
    const fs::path staging = make_staging(tree);
    const Json summary = run_matrix(simulated(matrix_spec({file}, {}, 1)), {staging, Shard{0, 1}, "", false, {}});
    replace_folder(staging, tree);
    // Its one repetition's figures, read from the repetition itself: a drawn story the simulator
    // did not tell as written (a start its client missed) is left out of the cell's figures.
    const Json& cell = summary.at("cells").at(0);
    const fs::path rep_dir = fs::path(cell.at("dir").get<std::string>()) / "rep-0";
    Json figures = rep_figures(run_summary_from_json(read_json_file(tree / rep_dir / "summary.json").at("runs").at(0)));
    figures["rep"] = 0;
    figures["dir"] = rep_dir.string();
    return {{"scenario", file.filename().string()}, {"tree", tree.filename().string()}, {"figures", figures}};
}

// Seconds since a start that the caller sets: each run's search has its own.
class Stopwatch {
public:
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }

private:
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// One schedule drawn and simulated; a violating one keeps its scenario and its raw class
// (the class of its faults before shrinking: schedules alike are shrunk once).
struct Tried {
    long long index = 0;
    std::uint64_t seed = 0;
    Outcome outcome;
    Json schedule;
    std::string raw_class;
};

// A violating schedule shrunk, with its class.
struct Shrunk {
    Json schedule;
    int steps = 0;
    std::string failure_class;
};

// What the search of one run found: its line of explore.json's "runs", its first violating
// schedule shrunk (if any), every violating schedule, and its failure classes.
struct RunSearch {
    Json record;
    std::optional<Json> first;
    Json violating = Json::array();
    Json classes = Json::array();
    std::map<std::string, std::string> raw_to_class;
    long long schedules = 0, invalid = 0, shrinks = 0, unclassified = 0;
};

struct SearchContext {
    const Json& source;
    const std::string& run;
    const fs::path& scratch;
    const ExploreOptions& opts;
    double seconds_for_run;  // this run's share of --seconds (infinite without)
    WorkerPool& pool;
    Stopwatch clock;
};

Tried try_schedule(const SearchContext& c, long long index) {
    Tried t{index, derive_seed(c.opts.seed, static_cast<std::uint64_t>(index)), {}, {}, {}};
    Json schedule = draw_for(c.opts, c.source, c.run, t.seed);
    t.outcome = simulate(schedule, schedule.at("seed").get<std::uint64_t>());
    if (t.outcome.violation.empty() || t.outcome.violation == "invalid") return t;
    t.raw_class = failure_class(schedule);
    t.schedule = std::move(schedule);
    return t;
}

// Shrinks a violating schedule and names its class. Once what is left has the raw class of a
// schedule shrunk before, it takes that one's class: the same assumption that counts every
// violating schedule in the class of the first of its raw class.
Shrunk shrink_and_class(const SearchContext& c, const Tried& t, std::size_t slot,
                        const std::map<std::string, std::string>& raw_to_class) {
    Shrunk s;
    const fs::path dir = c.scratch / ("order" + std::to_string(slot));  // the landing order's run
    std::optional<std::string> known;
    const auto settled = [&](const Json& left) {
        const auto it = raw_to_class.find(failure_class(left));
        if (it != raw_to_class.end()) known = it->second;
        return known.has_value();
    };
    s.schedule = shrink(t.schedule, t.outcome.violation, s.steps, [&] { return c.clock.seconds() < c.seconds_for_run; }, settled);
    s.failure_class = known ? *known : failure_class(s.schedule, landing_order(s.schedule, dir));
    return s;
}

// Judges a chunk's schedules in index order: counts them, lists the violating ones, and picks
// those to shrink (the first of each raw class, up to max_shrinks). With stop_at_first, what
// follows the first violation is not counted, whatever else the threads ran.
std::vector<const Tried*> judge(RunSearch& r, const std::vector<Tried>& chunk, const ExploreOptions& opts, bool& stop) {
    std::vector<const Tried*> picked;
    std::set<std::string> raw_picked;
    for (const Tried& t : chunk) {
        ++r.schedules;
        if (t.outcome.violation == "invalid") ++r.invalid;
        if (t.outcome.violation.empty() || t.outcome.violation == "invalid") continue;
        r.violating.push_back({{"run", t.schedule.at("runs").at(0).at("name")}, {"schedule", t.index},
                               {"schedule_seed", t.seed}, {"violation", t.outcome.violation}, {"count", t.outcome.count}});
        if (!r.raw_to_class.contains(t.raw_class) && !raw_picked.contains(t.raw_class) &&
            r.shrinks + static_cast<long long>(picked.size()) < opts.max_shrinks) {
            picked.push_back(&t);
            raw_picked.insert(t.raw_class);
        }
        if (opts.stop_at_first) {
            stop = true;
            break;
        }
    }
    return picked;
}

// A new class's entry of explore.json's "classes", its witness written.
Json class_entry(const SearchContext& c, const Tried& t, const Shrunk& s) {
    const Json w = write_witness(s.schedule, c.run, t.seed, c.opts.out);
    if (c.opts.progress)
        std::cerr << "lockbench: explore " << c.run << ": new class after " << static_cast<int>(c.clock.seconds())
                  << " s (schedule " << t.index << ", seed " << t.seed << ", " << t.outcome.violation << "): " << s.failure_class << "\n";
    return {{"run", c.run}, {"class", s.failure_class}, {"faults", s.schedule.at("runs").at(0).at("faults")},
            {"schedules", 0}, {"first_found_s", c.clock.seconds()}, {"witness", w.at("scenario")},
            {"violation", t.outcome.violation}, {"schedule", t.index}, {"schedule_seed", t.seed}, {"shrink_steps", s.steps},
            {"figures", w.at("figures")}, {"tree", w.at("tree")}};
}

// explore.json's "violations" line of a run: its first violating schedule, shrunk.
Json first_violation(const Tried& t, const Shrunk& s, const Json& entry, double found_after_s) {
    return {{"run", entry.at("run")}, {"schedule", t.index}, {"schedule_seed", t.seed}, {"violation", t.outcome.violation},
            {"count", t.outcome.count}, {"found_after_s", found_after_s}, {"shrink_steps", s.steps},
            {"class", s.failure_class},
            {"shrunk", {{"clients", s.schedule.at("workload").value("clients", 8)},
                        {"duration_ms", s.schedule.at("workload").value("duration_ms", 0LL)},
                        {"faults", s.schedule.at("runs").at(0).at("faults")}}},
            {"witness", {{"scenario", entry.at("witness")}, {"tree", entry.at("tree")}, {"figures", entry.at("figures")}}}};
}

// Gives each shrunk schedule's raw class its class (a new one gets its entry and witness),
// then counts every violating schedule of the chunk in its class.
void classify(RunSearch& r, const SearchContext& c, const std::vector<Tried>& chunk,
              const std::vector<const Tried*>& picked, const std::vector<Shrunk>& shrunk, double found_after_s) {
    for (std::size_t m = 0; m < picked.size(); ++m) {
        ++r.shrinks;
        r.raw_to_class[picked[m]->raw_class] = shrunk[m].failure_class;
        const bool known = std::ranges::any_of(r.classes, [&](const Json& e) { return e.at("class") == shrunk[m].failure_class; });
        if (known) continue;
        r.classes.push_back(class_entry(c, *picked[m], shrunk[m]));
        if (!r.first) r.first = first_violation(*picked[m], shrunk[m], r.classes.back(), found_after_s);
    }
    for (const Tried& t : chunk) {
        if (t.raw_class.empty() || t.index > r.violating.back().at("schedule").get<long long>()) continue;
        const auto it = r.raw_to_class.find(t.raw_class);
        if (it == r.raw_to_class.end()) {
            ++r.unclassified;
            continue;
        }
        for (Json& e : r.classes)
            if (e.at("class") == it->second) e["schedules"] = e.at("schedules").get<long long>() + 1;
    }
}

// The schedule indices of the next chunk: this shard's (I modulo N), below the limit.
std::vector<long long> next_chunk(long long& position, const ExploreOptions& opts, std::size_t size) {
    std::vector<long long> out;
    for (; out.size() < size; ++position) {
        const long long index = opts.shard_index + opts.shard_count * position;
        if (index >= opts.schedules) break;
        out.push_back(index);
    }
    return out;
}

// Draws, simulates and judges the schedules of one run, a chunk at a time on every core, until
// its schedules, its share of --seconds, or (with --first) its first violation. Its clock
// starts here, so that its times say how long this run's own search took.
RunSearch search_run(const Json& source, const std::string& run, const fs::path& scratch, const ExploreOptions& opts,
                     double seconds_for_run, WorkerPool& pool) {
    SearchContext c{source, run, scratch, opts, seconds_for_run, pool, {}};
    RunSearch r;
    long long position = 0;
    double next_progress_s = 1;
    // Chunks of a fixed size, whatever the number of threads or their speed: a shrink that
    // stops at a raw class already known sees the classes of the chunks before its own, so the
    // chunks' bounds must not move for the results to stay the same. With --first, smaller:
    // what follows the first violation is thrown away.
    const std::size_t chunk_size = opts.stop_at_first ? 8 : 32;
    for (bool stop = false; !stop && c.clock.seconds() < seconds_for_run;) {
        const std::vector<long long> indices = next_chunk(position, opts, chunk_size);
        if (indices.empty()) break;
        const auto chunk = pool.map<Tried>(indices.size(), [&](std::size_t k) { return try_schedule(c, indices[k]); });
        const double found_after_s = c.clock.seconds();
        const auto picked = judge(r, chunk, opts, stop);
        const auto shrunk = pool.map<Shrunk>(picked.size(), [&](std::size_t m) { return shrink_and_class(c, *picked[m], m, r.raw_to_class); });
        if (!r.violating.empty()) classify(r, c, chunk, picked, shrunk, found_after_s);
        if (opts.progress && c.clock.seconds() >= next_progress_s) {  // about once a second
            next_progress_s = c.clock.seconds() + 1;
            std::cerr << "lockbench: explore " << run << ": " << r.schedules << " schedules, " << r.violating.size()
                      << " violating, " << r.classes.size() << " classes, " << static_cast<int>(c.clock.seconds()) << " s\n";
        }
    }
    r.record = {{"schedules", r.schedules}, {"violating", r.violating.size()}, {"invalid", r.invalid},
                {"classes", r.classes.size()}, {"shrunk", r.shrinks}, {"unclassified", r.unclassified},
                {"first_violation_s", r.first ? r.first->at("found_after_s") : Json()}, {"wall_s", c.clock.seconds()}};
    return r;
}

}  // namespace

Json explore_source(const ExploreOptions& opts) {
    return opts.source ? *opts.source : read_json_file(opts.scenario_file);
}

Json explore(const ExploreOptions& given) {
    ExploreOptions opts = given;
    if (opts.jobs <= 0) opts.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const Json source = explore_source(opts);
    const Scenario parsed = parse_scenario(source, opts.scenario_file.string());
    const auto runs = runs_to_explore(parsed, opts.algorithms);
    // The folder is built beside OUT and switched in whole at the end: a search stopped
    // half-way leaves the previous one as it was, and a finished one leaves none of its witnesses.
    const fs::path out = opts.out;
    fs::create_directories(out);
    opts.out = make_staging(out);
    const fs::path scratch = make_run_temp_dir();
    WorkerPool pool(opts.jobs);
    const Stopwatch clock;
    Json found = Json::array(), every = Json::array(), classes = Json::array(), per_run = Json::object();
    long long run_count = 0;
    try {
        for (std::size_t i = 0; i < runs.size(); ++i) {
            // Each run gets an even share of what --seconds leaves.
            const double share = opts.seconds ? std::max(0.0, *opts.seconds - clock.seconds()) / static_cast<double>(runs.size() - i)
                                              : std::numeric_limits<double>::infinity();
            RunSearch r = search_run(source, runs[i], scratch, opts, share, pool);
            run_count += r.schedules;
            if (r.first) found.push_back(std::move(*r.first));
            for (auto& v : r.violating) every.push_back(std::move(v));
            for (auto& e : r.classes) classes.push_back(std::move(e));
            per_run[runs[i]] = std::move(r.record);
        }
    } catch (...) {
        fs::remove_all(scratch);
        fs::remove_all(opts.out);
        throw;
    }
    fs::remove_all(scratch);
    for (Json* list : {&found, &every, &classes}) sort_by_run_and_schedule(*list);
    const double wall_s = clock.seconds();
    Json result = {{"scenario", parsed.name}, {"scenario_file", opts.scenario_file.string()}, {"seed", opts.seed},
                   {"budget", opts.budget}, {"shard", std::to_string(opts.shard_index) + "/" + std::to_string(opts.shard_count)},
                   {"schedules_per_run", opts.schedules == std::numeric_limits<long long>::max() ? Json() : Json(opts.schedules)},
                   {"first", opts.stop_at_first}, {"searched", runs},
                   {"schedules_run", run_count}, {"violations_found", found.size()}, {"wall_s", wall_s},
                   {"schedules_per_s", static_cast<double>(run_count) / std::max(wall_s, 1e-9)},
                   {"runs", per_run}, {"violations", found}, {"violating_schedules", every}, {"classes", classes}};
    write_atomically(opts.out / "explore.json", result.dump(2) + "\n");
    replace_folder(opts.out, out);
    return result;
}

Json replay(const ExploreOptions& opts, const std::string& run, std::uint64_t schedule_seed) {
    const Json schedule = draw_for(opts, explore_source(opts), run, schedule_seed);
    fs::create_directories(opts.out);
    write_atomically(opts.out / "scenario.json", schedule.dump(2) + "\n");
    RunOptions o{opts.out / "run", std::nullopt, "", opts.progress, {}, true};
    return run_scenario(parse_scenario(schedule, (opts.out / "scenario.json").string()), o);
}

}  // namespace lockbench::sim
