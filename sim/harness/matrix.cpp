// Running a matrix or sweep: every repetition not yet done, in rounds, into its tree.
#include "sim/harness/matrix.h"

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "analysis/run_summary.h"
#include "process/process.h"
#include "sim/engine/scenario.h"
#include "sim/harness/matrix_tree.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/runner.h"
#include "sim/live/adapter_pool.h"
#include "sim/live/server_pool.h"
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

// Expected seconds of one repetition: its run's workload (as the cell runs it, scaled to the
// lock's TTL) plus a fixed start-up share (nodes, Sentinels, clients).
double rep_weight(const Json& scenario_source, const std::string& run) {
    Json w = scenario_source.value("workload", Json::object());
    for (const Json& r : scenario_source.value("runs", Json::array()))
        if (r.value("name", std::string()) == run && r.contains("workload")) w = r.at("workload");
    return static_cast<double>(w.value("duration_ms", 3000)) / 1000.0 + 2.0;
}

// A repetition this long or longer starts within the first three quarters of its round, so
// that the round ends on short ones and the next round's (or the alone cases') wait for it is
// short.
constexpr double kLongRepetitionS = 6.0;
constexpr double kLongWithin = 0.75;

struct Todo {
    const MatrixCell* cell;
    int rep;
    double weight;
    bool alone;  // its case runs apart from the others (`"alone": true`)
};

bool runs_alone(const MatrixSpec& spec, const MatrixCell& cell) {
    const Json& source = spec.scenario_of(cell).source;
    return source.is_object() && source.value("alone", false);
}

// What kept a repetition from happening as written (its summary's "not_as_written"), or "".
std::string not_as_written_text(const Json& summary) {
    std::string text;
    for (const Json& why : summary.at("runs").at(0).value("not_as_written", Json::array()))
        text += (text.empty() ? "" : "; ") + why.get<std::string>();
    return text;
}


// A kept repetition is checked before it counts as done: one whose summary.json does not read
// as a repetition's, or names a run folder that is not there, is run again (its folder removed);
// so is one that could not run or be forced (no evidence: its adapter or the machine may have
// been fixed since).
bool set_aside_unless_evidence(const fs::path& out, const MatrixCell& cell, int rep, bool progress) {
    const fs::path dir = rep_dir(out, cell, rep);
    std::string why;
    try {
        const Json s = read_json_file(dir / "summary.json");
        const Json runs = s.is_object() ? s.value("runs", Json()) : Json();
        if (!runs.is_array() || (runs.size() != 1 && !(runs.empty() && s.contains("could_not_run"))))
            why = "its summary.json holds no run";
        for (const Json& r : runs.is_array() ? runs : Json::array())
            if (!r.is_object() || !r.contains("run_dir") || !r.at("run_dir").is_string() ||
                !fs::is_regular_file(dir / r.at("run_dir").get<std::string>() / "run.json"))
                why = "its run folder is missing";
        if (why.empty() && s.contains("could_not_run")) why = "it could not run";
        else if (why.empty() && !not_as_written_text(s).empty()) why = "it could not be forced";
    } catch (const std::exception& e) {
        why = e.what();
    }
    if (why.empty()) return false;
    if (progress)
        std::cerr << "lockbench: " << cell.id << " rep " << rep + 1
                  << (why.starts_with("it could not") ? " is no evidence (" : " is damaged (") << why << "): run again\n";
    std::error_code ec;
    fs::remove_all(dir, ec);
    return true;
}

// Every repetition not yet done, in rounds: every cell's first repetition, then every
// cell's second, and so on, so that a time budget that ends the work early leaves every
// cell with the same number of repetitions.
// Within a round, with repetitions side by side, round_order (matrix.h) sets the order; one at
// a time, the repetitions of cases that run alone come last.
std::vector<Todo> todo_in_rounds(const MatrixSpec& spec, const MatrixOptions& opts, size_t& kept, size_t& shard_cells) {
    std::vector<Todo> todo;
    for (int k = 0; k < spec.repeat; ++k) {
        const size_t round_start = todo.size();
        for (const MatrixCell& cell : spec.cells) {
            if (static_cast<int>(cell.index) % opts.shard.count != opts.shard.index) continue;
            if (k == 0) ++shard_cells;
            if (rep_done(rep_dir(opts.out, cell, k)) && !set_aside_unless_evidence(opts.out, cell, k, opts.progress)) ++kept;
            else todo.push_back({&cell, k, rep_weight(spec.scenario_of(cell).source, cell.run), runs_alone(spec, cell)});
        }
        const auto round = todo.begin() + static_cast<std::ptrdiff_t>(round_start);
        if (opts.jobs > 1) {
            std::vector<RoundRepetition> reps;
            for (auto it = round; it != todo.end(); ++it) reps.push_back({it->cell->scenario_index, it->weight, it->alone});
            std::vector<Todo> ordered;
            for (const std::size_t i : round_order(reps)) ordered.push_back(round[static_cast<std::ptrdiff_t>(i)]);
            std::ranges::copy(ordered, round);
        } else {
            std::stable_partition(round, todo.end(), [](const Todo& t) { return !t.alone; });
        }
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

// What a finished repetition found, on the progress line: its violations and whether its
// expectations held (a sweep's steps run values the scenario's `expect` was not written for).
std::string repetition_outcome(const MatrixSpec& spec, const Json& summary) {
    const auto reruns = summary.value("attempts", Json::array()).size();
    if (summary.value("runs", Json::array()).empty())
        return "COULD NOT RUN: " + summary.value("could_not_run", std::string()).substr(0, 300);
    const RunSummary r = run_summary_from_json(summary.at("runs").at(0));
    if (!r.as_written())
        return "NOT AS WRITTEN in " + std::to_string(reruns + 1) + " attempts, no evidence: " + r.not_as_written.front().substr(0, 300);
    const std::string again = reruns ? " (as written at attempt " + std::to_string(reruns + 1) + ")" : "";
    const auto v = static_cast<long long>(r.metric("mutual_exclusion_violations"));
    std::string text = std::to_string(v) + (v == 1 ? " violation" : " violations");
    if (spec.kind == "matrix") text += std::string(", expectations ") + (r.expectations_held ? "held" : "NOT held");
    if (spec.kind == "matrix" && !r.expectations_held)
        text += ": " + missed_expectations(summary.at("runs").at(0).value("expectations", Json::array()));
    return text + again;
}

// The work's clock and its estimate of the time left, by the repetitions' weights.
struct Progress {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double weight_done = 0, weight_left = 0;
    double tree_s = 0;  // spent on the tree's own files (cell.json, summary.json) between repetitions
    double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

std::string progress_head(const Progress& p, size_t done, size_t all) {
    const double elapsed = p.elapsed_s();
    const std::string eta = p.weight_done > 0 ? "~" + clock_text(elapsed / p.weight_done * p.weight_left) + " left"
                                              : "estimating time left";
    return "lockbench: [" + std::to_string(done) + "/" + std::to_string(all) + " repetitions done, " +
           clock_text(elapsed) + " elapsed, " + eta + "] ";
}

std::string repetition_name(const MatrixSpec& spec, const Todo& t) {
    return t.cell->id + " rep " + std::to_string(t.rep + 1) + "/" + std::to_string(spec.repeat) + " (seed " +
           std::to_string(rep_seed(spec, *t.cell, t.rep)) + ")";
}

// A round is started only if one more, as long as the last one took, still ends within the
// budget. The last round is the best estimate of the next: the first also starts each
// adapter alone once (the preflight), and in a three-round catalog took 279 s where the two
// after it took 260 and 264.
bool over_budget(const MatrixOptions& opts, double now_s, double last_round_s) {
    return opts.budget_s && now_s + last_round_s > *opts.budget_s;
}

// A repetition running beside others, in a child process of its own (`lockbench repetition`):
// its servers, clients and faults are its own, and it dies with this process.
struct Running {
    const Todo* todo;
    ChildProcess child;
    fs::path log;
};

// An external lock's adapter, as a run starts it (its command and parameters); "" for one of
// lockbench's own algorithms.
std::string adapter_of(const MatrixSpec& spec, const MatrixCell& cell) {
    const Json& runs = spec.scenario_of(cell).source.at("runs");
    for (const Json& r : runs)
        if (r.value("name", std::string()) == cell.run && r.contains("command"))
            return r.at("command").dump() + r.value("params", Json::object()).dump();
    return "";
}

std::string tail_of(const fs::path& file) {
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) last = line;
    return last.empty() ? "it wrote nothing" : last;
}

// Repetitions of cases that run alone side by side, at most.
constexpr int kAloneSideBySide = 2;

// Runs the repetitions of `todo` in order, up to `jobs` at once (a case that runs alone beside
// no other case's), stopping between rounds when the time budget says so. `done` is called
// in this process, one repetition at a time, as each ends.
class Scheduler {
public:
    Scheduler(const MatrixSpec& spec, const MatrixOptions& opts, const std::vector<Todo>& todo, Progress& progress)
        : spec_(spec), opts_(opts), todo_(todo), progress_(progress) {}

    // The round the budget stopped at, if it did.
    template <class Done>
    std::optional<int> run(Done done) {
        const bool children = opts_.jobs > 1 && !spec_.simulated;
        const fs::path logs = children ? make_run_temp_dir() : fs::path();
        struct RemoveLogs {
            fs::path dir;
            ~RemoveLogs() {
                std::error_code ec;
                if (!dir.empty()) fs::remove_all(dir, ec);
            }
        } remove_logs{logs};
        // Adapters kept across repetitions (adapter_pool.h), unless LOCKBENCH_FRESH_ADAPTERS=1
        // asks for a new one for every client of every repetition. Ended before its folder goes.
        const char* fresh = std::getenv("LOCKBENCH_FRESH_ADAPTERS");
        const bool pooled = !spec_.simulated && !(fresh && std::string(fresh) == "1");
        const RemoveLogs remove_pool{pooled ? make_run_temp_dir() : fs::path()};
        std::optional<AdapterPool> pool;
        if (pooled) pool.emplace(remove_pool.dir);
        // Servers kept across repetitions (server_pool.h), unless LOCKBENCH_FRESH_SERVERS=1.
        const char* fresh_servers = std::getenv("LOCKBENCH_FRESH_SERVERS");
        const bool keep_servers = !spec_.simulated && !(fresh_servers && std::string(fresh_servers) == "1");
        const RemoveLogs remove_servers{keep_servers ? make_run_temp_dir() : fs::path()};
        std::optional<ServerPool> servers;
        if (keep_servers) servers.emplace(remove_servers.dir);
        struct SayCounts {
            std::optional<AdapterPool>& pool;
            std::optional<ServerPool>& servers;
            bool progress;
            ~SayCounts() {
                if (pool) {
                    pool->end_all();  // the CPU of every adapter is counted once it has ended
                    if (progress && pool->started() > 0)
                        std::cerr << "adapters: " << pool->started() << " started, " << pool->reused() << " reused"
                                  << (pool->refused() ? ", " + std::to_string(pool->refused()) + " could not be reset" : "")
                                  << "; " << std::lround(pool->cpu_seconds()) << " CPU-seconds in all (kept adapters are in "
                                  << "no run's timing.json)\n";
                }
                if (servers) {
                    servers->end_all();
                    if (progress && servers->started() > 0) {
                        std::cerr << "servers: " << servers->started() << " services started, " << servers->reused()
                                  << " reused after a wipe proved, " << servers->not_kept() << " not kept";
                        for (const std::string& why : servers->reasons()) std::cerr << " (" << why << ")";
                        std::cerr << "; " << std::lround(servers->cpu_seconds())
                                  << " CPU-seconds in all (kept servers are in no run's timing.json)\n";
                    }
                }
            }
        } say_counts{pool, servers, opts_.progress};
        std::vector<Running> running, ended;
        for (size_t next = 0; next < todo_.size() || !running.empty() || !ended.empty();) {
            if (next < todo_.size() && !stopped_ && !at_round_start_checked(next)) continue;
            if (next < todo_.size() && !stopped_ && may_start(todo_[next], running)) {
                const Todo& t = todo_[next++];
                if (!children) {
                    Json summary = run_here(t);
                    reap_orphaned_guards();  // its clients' guards, come to us with their clients' end
                    adapters_started_.insert(adapter_of(spec_, *t.cell));
                    done(t, summary);
                    continue;
                }
                running.push_back(spawn(t, logs));
                adapters_started_.insert(adapter_of(spec_, *t.cell));
                continue;
            }
            // A repetition that ended is read and written into the tree only once its slot
            // is taken again: the next one does not wait for the tree's files.
            if (!ended.empty()) {
                Running r = std::move(ended.front());
                ended.erase(ended.begin());
                Json summary = finished(r);
                done(*r.todo, summary);
                continue;
            }
            if (running.empty()) break;  // stopped by the budget, nothing left running
            const size_t i = wait_any(running);
            ended.push_back(std::move(running[i]));
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        }
        return stopped_ ? std::optional<int>(stop_round_) : std::nullopt;
    }

    int rounds_run() const { return rounds_run_; }

private:
    // Before the first repetition of a round: whether the budget lets it start. False only
    // for the one pass that counts the round (the loop comes back to the same repetition).
    bool at_round_start_checked(size_t next) {
        if (next == 0 || todo_[next].rep == todo_[next - 1].rep || checked_ == next) return true;
        checked_ = next;
        ++rounds_run_;
        const double now = progress_.elapsed_s(), last_round = now - round_started_s_;
        round_started_s_ = now;
        if (over_budget(opts_, now, last_round)) {
            stopped_ = true;
            stop_round_ = todo_[next].rep;
        }
        return false;
    }

    // A repetition of a case that runs alone starts beside no other case's, and beside at
    // most one more of its own kind: two such side by side load the machine as one busy core
    // does, which every case's outcome must bear, in half the time.
    bool may_start(const Todo& t, const std::vector<Running>& running) const {
        const auto alone = static_cast<int>(std::ranges::count_if(running, [](const Running& r) { return r.todo->alone; }));
        const auto others = static_cast<int>(running.size()) - alone;
        if (t.alone) return others == 0 && alone < std::min(opts_.jobs, kAloneSideBySide);
        return alone == 0 && others < opts_.jobs;
    }

    // One repetition in this process: the cell's scenario cut to its run, with its seed.
    Json run_here(const Todo& t) {
        if (opts_.progress) std::cerr << progress_head(progress_, done_, todo_.size()) << repetition_name(spec_, t) << " ..." << std::flush;
        try {
            Json summary = run_tree_repetition(repetition_part(spec_, *t.cell, t.rep), opts_.out, opts_.self_exe,
                                               opts_.project_dir, preflight(t));
            if (opts_.progress) std::cerr << " " << repetition_outcome(spec_, summary) << "\n";
            ++done_;
            return summary;
        } catch (const std::exception& e) {
            if (opts_.progress) std::cerr << " failed: " << e.what() << "\n";
            record_could_not_run(opts_.out, *t.cell, t.rep, std::string("its repetition failed: ") + e.what(), Json::array());
            ++done_;
            return read_json_file(rep_dir(opts_.out, *t.cell, t.rep) / "summary.json");
        }
    }

    Running spawn(const Todo& t, const fs::path& logs) {
        const std::string name = std::to_string(t.cell->index) + "." + std::to_string(t.rep);
        const fs::path log = logs / (name + ".log"), part = logs / (name + ".part.json");
        write_atomically(part, to_json(repetition_part(spec_, *t.cell, t.rep)).dump() + "\n");
        std::vector<std::string> argv{opts_.self_exe, "repetition", opts_.out.string(), part.string()};
        if (!preflight(t)) argv.push_back("--no-preflight");
        ChildProcess child = ChildProcess::spawn({argv, log.string(), log.string()});
        return {&t, std::move(child), log};
    }

    // An adapter is started alone before the clients (to fail in one line if it cannot start)
    // in the first repetition with it that this process starts; after that the clients' own
    // start says it. Side by side, the repetitions that start while that first one still runs
    // go without (when every one of a lock's first repetitions side by side checked it, the
    // checks took 83 s of a round's 1,970 s of repetitions: 10 s of the round's 276).
    bool preflight(const Todo& t) const { return !adapters_started_.contains(adapter_of(spec_, *t.cell)); }

    static size_t wait_any(std::vector<Running>& running) {
        for (;;) {
            for (size_t i = 0; i < running.size(); ++i)
                if (!running[i].child.running()) {
                    reap_orphaned_guards();  // its clients' guards, come to us with its end
                    return i;
                }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    // A repetition that failed in a way its own attempts did not catch is that repetition's
    // failure, recorded in its cell, and the rest runs; one killed by a signal ends the matrix.
    Json finished(const Running& r) {
        const std::optional<int> status = r.child.exit_status();
        if (!status || !WIFEXITED(*status)) throw failure(*r.todo, tail_of(r.log));
        const fs::path summary = rep_dir(opts_.out, *r.todo->cell, r.todo->rep) / "summary.json";
        if (WEXITSTATUS(*status) != 0 && !fs::is_regular_file(summary))
            record_could_not_run(opts_.out, *r.todo->cell, r.todo->rep, "its repetition failed: " + tail_of(r.log), Json::array());
        Json s = read_json_file(summary);
        if (opts_.progress)
            std::cerr << progress_head(progress_, ++done_, todo_.size()) << repetition_name(spec_, *r.todo) << ": "
                      << repetition_outcome(spec_, s) << "\n";
        return s;
    }

    std::runtime_error failure(const Todo& t, const std::string& what) const {
        return std::runtime_error(t.cell->id + " rep " + std::to_string(t.rep + 1) + ": " + what +
                                  " (done repetitions are kept: run the same command to resume)");
    }

    const MatrixSpec& spec_;
    const MatrixOptions& opts_;
    const std::vector<Todo>& todo_;
    Progress& progress_;
    size_t done_ = 0;
    size_t checked_ = 0;
    int rounds_run_ = 0;  // rounds finished by this command
    double round_started_s_ = 0;  // when the round now starting began (progress_'s clock)
    bool stopped_ = false;
    int stop_round_ = 0;
    std::set<std::string> adapters_started_;  // adapter_of() of every repetition started
};

}  // namespace

std::vector<std::size_t> round_order(const std::vector<RoundRepetition>& round) {
    std::map<std::size_t, double> of_case, seen;
    for (const RoundRepetition& r : round) ++of_case[r.case_index];
    // Each repetition's place in (0, 1): the k-th of a case's n at (k + 1/2) / n, a long one's
    // drawn into the first three quarters; the alone ones' after every other's.
    std::vector<std::pair<double, std::size_t>> at;
    for (std::size_t i = 0; i < round.size(); ++i) {
        const RoundRepetition& r = round[i];
        double place = (seen[r.case_index]++ + 0.5) / of_case[r.case_index];
        if (r.seconds >= kLongRepetitionS) place *= kLongWithin;
        at.emplace_back(place + (r.alone ? 1.0 : 0.0), i);
    }
    std::ranges::stable_sort(at, {}, [](const auto& p) { return p.first; });
    std::vector<std::size_t> order;
    for (const auto& [place, i] : at) order.push_back(i);
    return order;
}

namespace {

// A repetition whose story did not happen as written is run again, at most this many times
// in all; a set-up that failed (an adapter or a server too slow to start) is tried again with
// its adapters given longer to say they are ready.
constexpr int kAttempts = 3;
constexpr int kAdapterReadyMs[kAttempts] = {10'000, 30'000, 60'000};

// An attempt that did not happen as written is kept for a reader, outside the cells:
// OUT/not-as-written/<cell>/rep-<k>.attempt-<n>/.
void set_attempt_aside(const fs::path& out, const MatrixCell& cell, int rep, int attempt) {
    const fs::path aside = out / "not-as-written" / fs::path(cell.dir).lexically_relative("cells") /
                           ("rep-" + std::to_string(rep) + ".attempt-" + std::to_string(attempt));
    std::error_code ec;
    fs::create_directories(aside.parent_path(), ec);
    fs::remove_all(aside, ec);
    fs::rename(rep_dir(out, cell, rep), aside, ec);
    if (ec) fs::remove_all(rep_dir(out, cell, rep), ec);
}

}  // namespace

void record_could_not_run(const fs::path& out, const MatrixCell& cell, int rep, const std::string& why, Json attempts) {
    const fs::path dir = rep_dir(out, cell, rep);
    fs::create_directories(dir);
    const Json summary = {{"scenario", cell.scenario}, {"runs", Json::array()}, {"could_not_run", why},
                          {"attempts", std::move(attempts)}};
    write_atomically(dir / "summary.json", summary.dump(2) + "\n");
}

Json run_tree_repetition(const RepetitionPart& part, const fs::path& out, const std::string& self_exe,
                         const fs::path& project_dir, bool adapter_preflight) {
    const MatrixCell& cell = part.cell;
    const int rep = part.rep;
    const Scenario s = parse_scenario(part.scenario.source, part.scenario.file);  // the cell's run alone
    const std::uint64_t seed = s.seed + static_cast<std::uint64_t>(rep);
    const RunOptions opts{rep_dir(out, cell, rep), seed, self_exe, false, project_dir, part.simulated, adapter_preflight};
    // The simulator replays a seed exactly: an attempt again would tell the same story.
    const int attempts = part.simulated ? 1 : kAttempts;
    Json earlier = Json::array();  // the attempts that did not happen as written, each a reason
    for (int attempt = 1;; ++attempt) {
        ::setenv("LOCKBENCH_ADAPTER_READY_MS", std::to_string(kAdapterReadyMs[attempt - 1]).c_str(), 1);
        std::string why;
        try {
            Json summary = run_scenario(s, opts);
            why = not_as_written_text(summary);
            if (why.empty() || attempt == attempts) {
                if (!earlier.empty()) {
                    summary["attempts"] = earlier;
                    write_atomically(opts.out / "summary.json", summary.dump(2) + "\n");
                }
                return summary;
            }
            set_attempt_aside(out, cell, rep, attempt);
        } catch (const std::exception& e) {
            why = std::string("set-up failed: ") + e.what();
            std::error_code ec;
            fs::remove_all(opts.out, ec);  // an attempt that failed leaves nothing of itself
            if (attempt == attempts) {
                record_could_not_run(out, cell, rep, why, earlier);
                return read_json_file(opts.out / "summary.json");
            }
        }
        earlier.push_back({{"attempt", attempt}, {"reason", why}});
    }
}

void run_repetition_of_tree(const fs::path& out, const fs::path& part_file, const std::string& self_exe,
                            const fs::path& project_dir, bool adapter_preflight) {
    const RepetitionPart part = [&] {
        try {
            return repetition_part_from_json(read_json_file(part_file));
        } catch (const Json::exception& e) {
            throw std::runtime_error(part_file.string() + ": not a repetition's part: " + e.what());
        }
    }();
    run_tree_repetition(part, out, self_exe, project_dir, adapter_preflight);
}

Json run_matrix(const MatrixSpec& spec, const MatrixOptions& opts) {
    redis_server_binary();  // fails here, in one line, before anything is written
    prepare_out(opts.out, spec);
    size_t kept = 0, shard_cells = 0;
    const std::vector<Todo> todo = todo_in_rounds(spec, opts, kept, shard_cells);
    if (opts.progress) announce_matrix(spec, opts, shard_cells, kept);
    Progress progress;
    for (const Todo& t : todo) progress.weight_left += t.weight;
    CellEntries entries;
    Scheduler scheduler(spec, opts, todo, progress);
    // The summary of every cell is rewritten at most every 20 s while repetitions end
    // (one to watch; writing it after each of a thousand repetitions cost the tree's process
    // more CPU than a dozen runs), and always at the end. A repetition is safe in its cell as
    // soon as it ends: a resumed matrix rebuilds the summary from the cells.
    constexpr auto kSummaryEvery = std::chrono::seconds(20);
    std::chrono::steady_clock::time_point summary_written{};  // the first repetition writes it
    const std::optional<int> stopped = scheduler.run([&](const Todo& t, const Json&) {
        const auto tree_start = std::chrono::steady_clock::now();
        entries[t.cell->id] = refresh_cell(opts.out, *t.cell, spec.repeat);
        if (tree_start - summary_written >= kSummaryEvery) {
            write_summary(opts.out, spec, opts.shard, std::nullopt, &entries);
            summary_written = std::chrono::steady_clock::now();
        }
        progress.tree_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - tree_start).count();
        progress.weight_done += t.weight;
        progress.weight_left -= t.weight;
    });
    if (stopped) {
        if (opts.progress)
            std::cerr << "lockbench: time budget: stopping after " << *stopped << " of " << spec.repeat
                      << " repetitions per cell (" << clock_text(progress.elapsed_s()) << " spent of "
                      << clock_text(*opts.budget_s) << ")\n";
        return write_summary(opts.out, spec, opts.shard, BudgetStop{*opts.budget_s, *stopped}, &entries);
    }
    if (opts.progress && !todo.empty())
        std::cerr << "lockbench: " << todo.size() << " repetitions in " << clock_text(progress.elapsed_s())
                  << ", of which the tree's own files " << clock_text(progress.tree_s)
                  << " (each run's phases: timing.json, scripts/profile)\n";
    if (opts.budget_s && opts.progress && scheduler.rounds_run() == 0 && progress.elapsed_s() > *opts.budget_s)
        std::cerr << "lockbench: warning: one repetition of every cell took " << clock_text(progress.elapsed_s())
                  << ", more than the time budget of " << clock_text(*opts.budget_s)
                  << ": scale the cases' time down (see docs/running.md, \"The main job's time\")\n";
    return write_summary(opts.out, spec, opts.shard, std::nullopt, &entries);
}

}  // namespace lockbench
