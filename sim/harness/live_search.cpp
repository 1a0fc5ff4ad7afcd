#include "sim/harness/live_search.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>

#include "sim/engine/fault_kind.h"
#include "sim/harness/compose.h"
#include "sim/harness/discover.h"
#include "sim/harness/explore.h"
#include "sim/harness/promote.h"
#include "sim/harness/results_folder.h"
#include "sim/harness/runner.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr long long kTtl = 300;  // the search case's TTL: its durations are written for it

// A candidate: its faults (by role, for the case) or a schedule drawn for the lock as it runs.
struct Candidate {
    std::string source;                 // "model:LOCK", "literature" or "drawn"
    Json faults;                        // the case's faults (roles), when it is one
    std::optional<Json> schedule;       // a drawn explicit one-run scenario
};

// The literature's classes, each from the vocabulary: what the lease-lock debate names.
std::vector<Candidate> literature() {
    const auto one = [](Json f) { return Candidate{"literature", Json::array({std::move(f)}), std::nullopt}; };
    return {
        one({{"fault", "pause"}, {"point", "before_write"}, {"client", 0}, {"occurrence", 1}, {"duration_ms", 3 * kTtl}}),
        one({{"fault", "link"}, {"point", "before_acquire"}, {"client", 0}, {"occurrence", 1}, {"mode", "hold"},
             {"direction", "downstream"}, {"nodes", "all"}, {"duration_ms", 700}, {"until", "another-enters"}, {"max_ms", 900}}),
        one({{"fault", "link"}, {"point", "before_write"}, {"client", 0}, {"occurrence", 1}, {"mode", "hold"},
             {"direction", "upstream"}, {"store", true}, {"duration_ms", 700}, {"until", "another-enters"}, {"max_ms", 900}}),
        one({{"fault", "clock"}, {"point", "after_acquire"}, {"client", 0}, {"occurrence", 1}, {"node", "locked"}, {"jump_ms", 3 * kTtl}}),
        one({{"fault", "clock"}, {"point", "after_acquire"}, {"client", 0}, {"occurrence", 1}, {"jump_ms", -3 * kTtl}}),
        one({{"fault", "crash"}, {"point", "after_acquire"}, {"client", 0}, {"occurrence", 1}, {"node", "locked"},
             {"restart_after_ms", 0}}),
        one({{"fault", "link"}, {"point", "after_acquire"}, {"client", 0}, {"occurrence", 1}, {"mode", "blackhole"},
             {"nodes", "all"}, {"duration_ms", 3 * kTtl}}),
    };
}

// What a fault is, where it lands and whom it strikes: a coverage key.
struct TriedFault {
    std::string fault, point, target;
    auto operator<=>(const TriedFault&) const = default;
};

TriedFault tried_key(const Json& f, int nodes) {
    // Its kind's words, as the search's classes say them (fault_kind.h), without the scale.
    const std::string kind = f.value("fault", std::string("?"));
    const FaultKind* k = find_fault_kind(kind);
    const std::string what = k ? k->words(f, FaultWords{.nodes = nodes, .exact = true}) : kind;
    std::string target = f.contains("client") ? "client " + f.at("client").dump()
                         : f.contains("point")  ? "whoever reaches it"
                                                : "every client";
    if (f.contains("node") && k && k->aims_at_node) target += ", node " + f.at("node").dump();
    return {what, f.contains("point") ? f.at("point").get<std::string>() : "at a time", target};
}

class Search {
public:
    Search(const LockFile& lock, const std::vector<CaseFile>& catalog, const std::vector<LockFile>& locks, const LiveSearchOptions& o)
        : lock_(lock), opts_(o), dir_(o.out / "discover"), catalog_(catalog_classes(catalog, locks)) {}

    Json run(const std::vector<LockFile>& locks);

private:
    double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
    bool time_left() const { return elapsed() + last_run_s_ < opts_.seconds; }
    std::optional<Json> explicit_for(const Candidate& c, std::string& why) const;
    std::optional<Json> run_live(const Json& scenario, std::uint64_t seed, double* seconds = nullptr);
    void try_candidate(const Candidate& c);
    std::vector<Candidate> model_classes(const LockFile& model);
    static bool violates(const Json& run) {
        const std::string v = run.value("verdict", "");
        return v == "2 holders" || v == "unsafe";
    }

    const LockFile& lock_;
    LiveSearchOptions opts_;
    fs::path dir_;
    CatalogClasses catalog_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    double last_run_s_ = 0;
    long long runs_ = 0, tried_ = 0, not_applicable_ = 0, known_ = 0, failed_ = 0;
    std::map<TriedFault, std::pair<long long, long long>> coverage_;  // tried, violated
    Json discovered_ = Json::array();
    std::map<std::string, std::size_t> classes_;
    std::string model_;
};

std::optional<Json> Search::explicit_for(const Candidate& c, std::string& why) const {
    if (c.schedule) return *c.schedule;
    Json j = search_case();
    j["faults"] = c.faults;
    try {
        const CaseFile parsed = parse_case_file(j, "<search>");
        const Composed k = compose(parsed, {lock_}, LockChoice::asked, Expectations::record_only);
        if (k.empty()) {
            why = k.not_applicable.empty() ? "not applicable" : k.not_applicable.front().why;
            return std::nullopt;
        }
        return one_run_scenario(k.scenario.source, k.scenario, k.scenario.runs.at(0).name);
    } catch (const std::exception& e) {
        why = e.what();
        return std::nullopt;
    }
}

std::optional<Json> Search::run_live(const Json& scenario, std::uint64_t seed, double* seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    Scenario s;
    try {
        s = parse_scenario(scenario, "<search>");
    } catch (const ScenarioError&) {
        ++not_applicable_;  // a draw the scenario rules refuse for this lock (a clock etcd cannot step)
        return std::nullopt;
    }
    const fs::path out = dir_ / "runs" / std::to_string(++runs_);
    RunOptions ro{out, seed, opts_.self_exe, false, opts_.project_dir};
    Json summary;
    try {
        summary = run_scenario(s, ro);
    } catch (const std::exception& e) {  // a run that could not finish is no verdict: said, and the search goes on
        if (opts_.progress) std::cerr << "lockbench: discover: run " << runs_ << " failed: " << e.what() << "\n";
        ++failed_;
        return std::nullopt;
    }
    last_run_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (seconds) *seconds = last_run_s_;
    return summary.at("runs").at(0);
}

void Search::try_candidate(const Candidate& c) {
    std::string why;
    const std::optional<Json> scenario = explicit_for(c, why);
    if (!scenario) {
        ++not_applicable_;
        return;
    }
    if (holds_the_holder(scenario->at("runs").at(0).at("faults"))) {  // promote.h: a pause by another name
        ++not_applicable_;
        return;
    }
    // A class found already is not run again: the time goes to what is not known yet.
    if (classes_.contains(failure_class(*scenario))) {
        ++known_;
        return;
    }
    const std::uint64_t seed = opts_.seed + static_cast<std::uint64_t>(tried_);
    const std::optional<Json> result = run_live(*scenario, seed);
    if (!result) return;  // refused for this lock, or failed to run: counted where it happened
    ++tried_;
    const Json& run = scenario->at("runs").at(0);
    const int nodes = run.value("nodes", 1);
    const bool bad = violates(*result);
    for (const Json& f : run.at("faults")) {
        auto& [n, v] = coverage_[tried_key(f, nodes)];
        ++n;
        v += bad;
    }
    std::string klass = failure_class(*scenario);
    if (opts_.progress)
        std::cerr << "lockbench: discover [" << static_cast<int>(elapsed()) << "/" << static_cast<int>(opts_.seconds) << " s] #" << tried_
                  << " (" << c.source << ") " << klass << ": " << result->value("verdict", std::string("?")) << "\n";
    if (!bad) return;
    if (const auto it = classes_.find(klass); it != classes_.end()) {
        discovered_[it->second]["schedules"] = discovered_[it->second]["schedules"].get<int>() + 1;
        return;
    }
    // Shrunk live: a fault that violates alone is the story.
    Json witness = *scenario;
    const Json faults = run.at("faults");
    for (std::size_t i = 0; faults.size() > 1 && i < faults.size() && time_left(); ++i) {
        Json alone = witness;
        alone["runs"][0]["faults"] = Json::array({faults[i]});
        if (const auto r = run_live(alone, seed); r && violates(*r)) {
            witness = alone;
            break;
        }
    }
    klass = failure_class(witness);
    if (const auto it = classes_.find(klass); it != classes_.end()) {
        discovered_[it->second]["schedules"] = discovered_[it->second]["schedules"].get<int>() + 1;
        return;
    }
    const double found_s = elapsed();
    int violating = 1, repetitions = 1;
    for (int i = 1; i <= opts_.confirm && time_left(); ++i, ++repetitions)
        if (const auto r = run_live(witness, seed + 1000 * static_cast<std::uint64_t>(i)); r && violates(*r)) ++violating;
    const std::string name = "witness-" + std::to_string(discovered_.size() + 1);
    witness["name"] = name;
    witness["seed"] = seed;
    witness["description"] = "Found by lockbench verdict --discover against " + lock_.name + " (" + c.source + "), shrunk live: " + klass + ".";
    write_atomically(dir_ / (name + ".json"), witness.dump(2) + "\n");
    classes_[klass] = discovered_.size();
    discovered_.push_back({{"class", klass}, {"failure_class", catalog_class_of(klass, catalog_)},
                           {"faults", witness.at("runs").at(0).at("faults")}, {"witness", (fs::path("discover") / (name + ".json")).string()},
                           {"first_found_s", found_s}, {"repetitions_violating", violating}, {"repetitions", repetitions},
                           {"source", c.source}, {"schedules", 1}, {"verdict", result->value("verdict", "")}});
    if (opts_.progress)
        std::cerr << "lockbench: discover: new class after " << static_cast<int>(found_s) << " s (" << discovered_.back().at("failure_class").get<std::string>()
                  << "): " << klass << ", violated " << violating << " of " << repetitions << "\n";
}

// The simulator's classes for the lock's model, searched on the same case for a few seconds,
// most schedules first, their faults by role.
std::vector<Candidate> Search::model_classes(const LockFile& model) {
    Json j = search_case();
    const CaseFile parsed = parse_case_file(j, "<search>");
    const Composed k = compose(parsed, {model}, LockChoice::asked, Expectations::record_only);
    if (k.empty()) return {};
    ExploreOptions o;
    o.scenario_file = "<search>";
    o.source = k.scenario.source;
    o.out = dir_ / "model";
    o.progress = false;
    o.budget = 2;
    o.seconds = std::clamp(opts_.seconds / 10, 3.0, 20.0);
    o.schedules = std::numeric_limits<long long>::max();
    const Json e = explore(o);
    std::vector<Json> classes(e.at("classes").begin(), e.at("classes").end());
    std::ranges::stable_sort(classes, std::greater<>{}, [](const Json& c) { return c.value("schedules", 0); });
    std::vector<Candidate> out;
    for (const Json& c : classes) {
        bool story = false;
        out.push_back({"model:" + model.name, faults_by_role(c.at("faults"), model.nodes, story), std::nullopt});
    }
    return out;
}

Json Search::run(const std::vector<LockFile>& locks) {
    fs::remove_all(dir_);  // an earlier search's witnesses are not this one's (the caller holds OUT's lock)
    fs::create_directories(dir_);
    // The simulator's classes (most schedules first) and the literature's, in turn.
    std::vector<Candidate> model, queue;
    if (const LockFile* m = model_of(lock_, locks)) {
        model_ = m->name;
        if (opts_.progress) std::cerr << "lockbench: discover: the simulator's classes for " << m->name << " first\n";
        model = model_classes(*m);
    }
    const std::vector<Candidate> lit = literature();
    for (std::size_t i = 0; i < std::max(model.size(), lit.size()); ++i) {
        if (i < model.size()) queue.push_back(model[i]);
        if (i < lit.size()) queue.push_back(lit[i]);
    }
    for (std::size_t i = 0; i < queue.size() && time_left(); ++i) try_candidate(queue[i]);
    // Then schedules of up to two faults, drawn for the lock as it runs.
    Json base = search_case();
    const CaseFile parsed = parse_case_file(base, "<search>");
    const Composed k = compose(parsed, {lock_}, LockChoice::asked, Expectations::record_only);
    for (std::uint64_t i = 0; !k.empty() && time_left(); ++i) {
        Json drawn;
        try {
            drawn = draw_budget_schedule(k.scenario.source, k.scenario.runs.at(0).name, derive_seed(opts_.seed, i), 2);
        } catch (const std::exception&) {
            ++not_applicable_;
            continue;
        }
        try_candidate({"drawn", Json(), drawn});
    }
    Json coverage = Json::array();
    for (const auto& [key, n] : coverage_)
        coverage.push_back({{"fault", key.fault}, {"point", key.point}, {"target", key.target}, {"tried", n.first}, {"violated", n.second}});
    const Json out = {{"discovered", discovered_},
                      {"discover", {{"seconds", opts_.seconds}, {"wall_s", elapsed()}, {"schedules_tried", tried_},
                                    {"live_runs", runs_}, {"not_applicable", not_applicable_}, {"skipped_known", known_}, {"runs_failed", failed_},
                                    {"model", model_.empty() ? Json() : Json(model_)}, {"coverage", coverage}}}};
    write_atomically(dir_ / "discover.json", out.dump(2) + "\n");
    return out;
}

}  // namespace

Json search_case() {
    return {{"name", "discover"},
            {"description", "lockbench verdict --discover: the live search's own case, four clients and a 300 ms TTL, "
                            "client 0 first; the faults are the search's."},
            {"ttl_ms", kTtl},
            {"seed", 1},
            {"client", {{"command_timeout_ms", 1000}}},
            {"params", {{"node_timeout_ms", 1000}}},
            {"workload", {{"clients", 4}, {"duration_ms", 1500}, {"work_ms", {{"uniform", {20, 40}}}},
                          {"retry_ms", {{"uniform", {2, 6}}}},
                          {"start_after", {{"client", 0}, {"point", "after_acquire"}, {"max_ms", 400}}}}},
            {"faults", Json::array()}};
}

const LockFile* model_of(const LockFile& lock, const std::vector<LockFile>& own) {
    if (!service_info(lock.service).simulated) return nullptr;  // the simulator models Redis nodes only
    std::string name = "token-lua";
    if (lock.nodes >= 3) name = lock.offers.checks_elapsed ? "redlock" : "redlock+no-validity-check";
    else if (lock.offers.expiry == "client") name = "getset";
    else if (lock.fenced()) name = "token-lua+fence";
    else if (lock.offers.renews) name = "reentrant";
    if (lock.algorithm != &external_algorithm()) name = lock.name;  // lockbench's own: itself
    for (const LockFile& l : own)
        if (l.name == name && l.algorithm != &external_algorithm()) return &l;
    return nullptr;
}

Json live_search(const LockFile& lock, const std::vector<CaseFile>& catalog, const std::vector<LockFile>& locks,
                 const LiveSearchOptions& opts) {
    Search s(lock, catalog, locks, opts);
    return s.run(locks);
}

}  // namespace lockbench::sim
