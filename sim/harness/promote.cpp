#include "sim/harness/promote.h"

#include <algorithm>
#include <regex>
#include <set>
#include <cstdio>

#include "sim/engine/fault_kind.h"
#include "sim/harness/compose.h"
#include "sim/harness/discover.h"
#include "sim/harness/explore.h"
#include "sim/harness/results_folder.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::vector<std::string> split_faults(const std::string& klass) {
    std::vector<std::string> out;
    for (std::size_t at = 0;;) {
        const std::size_t plus = klass.find(" + ", at);
        out.push_back(klass.substr(at, plus == std::string::npos ? std::string::npos : plus - at));
        if (plus == std::string::npos) return out;
        at = plus + 3;
    }
}

// "2 of 5 lock nodes" by the role its size plays in a quorum.
std::string node_role(int k, int n) {
    if (k == n) return "all lock nodes";
    if (k == 1) return "one lock node";
    if (n >= 3 && k == (n - 1) / 2) return "a minority of the lock nodes";
    if (k == n / 2 + 1) return "a bare majority of the lock nodes";
    return std::to_string(k) + " of " + std::to_string(n) + " lock nodes";
}

}  // namespace

std::string class_signature(const std::string& klass) {
    static const std::regex where(" at (a time|[a-z_]+)"), size(", (longer|shorter|more|less) than the (TTL|lease)"),
        nodes("([0-9]+) of ([0-9]+) lock nodes");
    // A gate forces an interleaving a case needs; it is the story's only fault when nothing else
    // is. Alone at a point only a holder passes, it holds the holder until its lease lets
    // another in: a pause.
    std::vector<std::string> tokens = split_faults(klass);
    if (std::ranges::any_of(tokens, [](const std::string& t) { return !t.starts_with("gate"); }))
        std::erase_if(tokens, [](const std::string& t) { return t.starts_with("gate"); });
    for (std::string& t : tokens)
        for (const char* point : {" at after_acquire", " at before_write", " at before_release"})
            if (t.starts_with("gate") && t.ends_with(point)) t = "pause";
    std::string out;
    for (std::string t : tokens) {
        t = std::regex_replace(t, where, "");
        t = std::regex_replace(t, size, "");
        std::smatch m;
        if (std::regex_search(t, m, nodes)) t = m.prefix().str() + node_role(std::stoi(m[1]), std::stoi(m[2])) + m.suffix().str();
        out += (out.empty() ? "" : " + ") + t;
    }
    return out;
}

CatalogClasses catalog_classes(const std::vector<CaseFile>& cases, const std::vector<LockFile>& locks) {
    CatalogClasses out;
    for (const CaseFile& c : cases) {
        if (c.source.contains("discovered")) continue;  // a promoted case covers nothing by being there
        for (const LockFile& lock : locks) {
            const Composed k = compose(c, {lock}, LockChoice::asked, Expectations::record_only);
            if (k.empty()) continue;
            for (const RunSpec& r : k.scenario.runs) {
                if (r.faults.empty()) continue;
                const std::string sig = class_signature(failure_class(one_run_scenario(k.scenario.source, k.scenario, r.name), {}));
                out.emplace(sig, CatalogClass{c.name, c.failure_class});  // one a cell: a case counts by the locks it fits
            }
        }
    }
    return out;
}

std::string catalog_class_of(const std::string& klass, const CatalogClasses& catalog) {
    // The class most of the cases alike fall in (a pause is a GC pause in most, a held
    // acquire in one); the first of those tied.
    // Failing a case of the same story, the cases whose story opens with the same fault.
    const std::string sig = class_signature(klass);
    const std::string first = split_faults(sig).front();
    for (const bool whole : {true, false}) {
        std::vector<std::pair<std::string, int>> votes;
        for (const auto& [other, c] : catalog) {
            if (!c.failure_class || (whole ? other != sig : split_faults(other).front() != first)) continue;
            auto v = std::ranges::find(votes, *c.failure_class, &std::pair<std::string, int>::first);
            if (v == votes.end()) votes.emplace_back(*c.failure_class, 1);
            else ++v->second;
        }
        const auto best = std::ranges::max_element(votes, std::less<>{}, &std::pair<std::string, int>::second);
        if (best != votes.end()) return best->first;
    }
    // The slow-holder case has no fault (its sections outlast the lease by themselves): a story
    // told by the store's link alone, other than the held write, stretches the holder's
    // section past its lease the same way.
    const std::vector<std::string> tokens = split_faults(sig);
    if (std::ranges::all_of(tokens, [](const std::string& t) { return t.starts_with("link") && t.ends_with("to the store"); }))
        return "slow-holder";
    return "new";
}

std::vector<std::string> covered_by(const std::string& klass, const CatalogClasses& catalog) {
    std::vector<std::string> out;
    const auto [from, to] = catalog.equal_range(class_signature(klass));
    for (auto it = from; it != to; ++it)
        if (std::ranges::find(out, it->second.case_name) == out.end()) out.push_back(it->second.case_name);
    return out;
}

Json faults_by_role(const Json& faults, int nodes, bool& story_client) {
    // Clients renumbered in the order the faults name them: the story's first is client 0.
    std::map<long long, long long> client;
    std::set<long long> cut;  // the lock nodes some link cut
    for (const Json& f : faults) {
        if (f.contains("client") && f.at("client").is_number_integer())
            client.emplace(f.at("client").get<long long>(), static_cast<long long>(client.size()));
        if (f.contains("nodes") && f.at("nodes").is_array())
            for (const Json& n : f.at("nodes")) cut.insert(n.get<long long>());
    }
    story_client = !client.empty();
    Json out = Json::array();
    for (Json f : faults) {
        if (f.contains("client") && f.at("client").is_number_integer()) f["client"] = client.at(f.at("client").get<long long>());
        if (f.contains("nodes") && f.at("nodes").is_array()) {
            const int k = static_cast<int>(f.at("nodes").size());
            if (k == nodes) f["nodes"] = "all";
            else if (k == 1) f["nodes"] = "one";
            else if (nodes >= 3 && k == (nodes - 1) / 2) f["nodes"] = "minority";
            else if (k == nodes / 2 + 1) f["nodes"] = "majority";
        }
        // A node struck: one a cut took from the client (the first: every role's cut holds it),
        // or one it could still lock (the last: no cut short of all holds it).
        const FaultKind* kind = find_fault_kind(f.value("fault", ""));
        if (f.contains("node") && f.at("node").is_number_integer() && kind && kind->aims_at_node)
            f["node"] = cut.contains(f.at("node").get<long long>()) ? Json(0) : Json("locked");
        out.push_back(f);
    }
    return out;
}

bool holds_the_holder(const Json& faults) {
    return std::ranges::any_of(faults, [](const Json& f) {
        const std::string point = f.value("point", "");
        const FaultKind* kind = find_fault_kind(f.value("fault", ""));
        return kind && kind->holds_clients && (point == "after_acquire" || point == "before_write" || point == "before_release");
    });
}

namespace {

std::string slug(const std::string& klass) {
    std::string out;
    for (const std::string& t : split_faults(class_signature(klass))) {
        std::string word;
        for (char ch : t) {
            if (std::isalnum(static_cast<unsigned char>(ch))) word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            else if (!word.empty() && word.back() != '-') word += '-';
        }
        while (!word.empty() && word.back() == '-') word.pop_back();
        for (const char* filler : {"-from-a-client", "-from-every-client", "-the-lock-nodes", "-lock-nodes", "-lock-node", "-of"})
            for (std::size_t at; (at = word.find(filler)) != std::string::npos;) word.erase(at, std::string(filler).size());
        out += (out.empty() ? "" : "+") + word;
    }
    if (out.size() > 80) out.resize(80);
    while (!out.empty() && (out.back() == '-' || out.back() == '+')) out.pop_back();
    // Classes alike but for a point or a size share a slug: the class's own hash sets them apart.
    const std::size_t h = std::hash<std::string>{}(klass);
    char tail[8];
    std::snprintf(tail, sizeof tail, "%06zx", h & 0xffffff);
    return out + "-" + tail;
}

// How many of three seeds of the case, simulated against the lock it was found on, violate.
int simulated_violations(const Json& case_json, const LockFile& lock, std::uint64_t seed) {
    try {
        const CaseFile c = parse_case_file(case_json, "<promoted>");
        const Composed k = compose(c, {lock}, LockChoice::asked, Expectations::record_only);
        if (k.empty()) return 0;
        const Json one = one_run_scenario(k.scenario.source, k.scenario, k.scenario.runs.at(0).name);
        int n = 0;
        for (std::uint64_t s = seed; s < seed + 3; ++s) {
            const std::string v = simulated_violation(one, s);
            n += !v.empty() && v != "invalid";
        }
        return n;
    } catch (const std::exception&) {
        return 0;  // a form the case rules refuse (a point the lock never passes) is no candidate
    }
}

}  // namespace

Json promote_witness(const Json& witness, const std::string& klass, const std::string& name, const Json& provenance,
                     std::string& how, std::string& simulated) {
    const Json& run = witness.at("runs").at(0);
    const Json& params = run.at("params");
    const long long ttl = params.contains("ttl_ms") ? params.at("ttl_ms").get<long long>() : params.value("lease_ms", 500LL);
    bool story = false;
    const Json faults = faults_by_role(run.value("faults", Json::array()), run.value("nodes", 1), story);
    Json c = {{"name", name},
              {"description", "Discovered by lockbench explore, not written by hand: " + klass + ". The schedule the "
                              "simulator found on " + run.value("name", std::string("?")) + ", shrunk, with its faults "
                              "aimed at the lock's roles (the story's client is client 0; nodes by quorum role) so that it "
                              "fits every lock it applies to."},
              {"seed", witness.at("seed")},
              {"failure_class", "discovered"},
              {"ttl_ms", ttl},
              {"workload", run.value("workload", witness.value("workload", Json::object()))},
              {"faults", faults},
              {"expect", {{"faults_injected", ">= 1"}}},
              {"discovered", provenance}};
    if (run.contains("client") || witness.contains("client")) c["client"] = run.value("client", witness.value("client", Json::object()));
    if (run.contains("persistence")) c["persistence"] = run.at("persistence");
    if (run.value("topology", "") == "sentinel") c["needs"] = {{"sentinel", true}};
    const LockFile lock = load_lock_file(run.at("lock_file").get<std::string>());
    const std::uint64_t seed = witness.at("seed").get<std::uint64_t>();
    // The forms tried, most forced first: the story's client goes first (start_after) with
    // sections long enough to be caught in; the same with the found sections; the roles alone.
    const long long duration = c.at("workload").value("duration_ms", 2000LL);
    const bool passes_acquire = std::ranges::count(points_reached(*lock.algorithm, lock.params), "after_acquire") > 0;
    std::vector<std::pair<std::string, Json>> forms;
    // A shrunk run lasts just long enough in the simulator; live, clients start and servers
    // answer slower: the forced forms last twice as long, and at least a second.
    Json longer = c;
    longer["workload"]["duration_ms"] = std::max({2 * duration, duration + ttl / 4, 1000LL});
    if (story && passes_acquire) {
        Json forced = longer;
        // The others wait at most a TTL, or half the run, for client 0 to get its lock.
        const long long wait = std::min(ttl, longer.at("workload").at("duration_ms").get<long long>() / 2);
        forced["workload"]["start_after"] = {{"client", 0}, {"point", "after_acquire"}, {"max_ms", std::max(1LL, wait)}};
        Json sections = forced;
        sections["workload"]["work_ms"] = {{"uniform", {std::max(1LL, ttl / 40), std::max(2LL, ttl / 20)}}};
        forms.emplace_back("start_after, sections of TTL/40 to TTL/20", sections);
        forms.emplace_back("start_after", forced);
    }
    Json longer_sections = longer;
    longer_sections["workload"]["work_ms"] = {{"uniform", {std::max(1LL, ttl / 40), std::max(2LL, ttl / 20)}}};
    forms.emplace_back("a longer run, sections of TTL/40 to TTL/20", longer_sections);
    forms.emplace_back("a longer run", longer);
    forms.emplace_back("roles only", c);
    for (const auto& [form, j] : forms) {
        const int n = simulated_violations(j, lock, seed);
        if (n == 3 || form == "roles only") {
            how = form;
            simulated = std::to_string(n) + " of 3 seeds on " + lock.name;
            Json kept = j;
            kept["discovered"]["forced"] = form;
            return kept;
        }
    }
    return c;  // not reached: "roles only" is always kept
}

Json promote_explore(const fs::path& explore_dir, const fs::path& dir, const CatalogClasses& catalog) {
    const Json e = read_json_file(explore_dir / "explore.json");
    if (!e.contains("classes")) throw std::runtime_error((explore_dir / "explore.json").string() + ": no classes to promote");
    // DIR is replaced whole: refuse one that holds anything but an earlier promotion.
    if (fs::exists(dir) && !empty_but_for_lock(dir) && !fs::exists(dir / "promoted.json"))
        throw std::runtime_error(dir.string() + ": --promote: not empty and not a folder --promote wrote (no promoted.json); "
                                 "name a new folder");
    fs::create_directories(dir);
    const fs::path staging = make_staging(dir);
    Json entries = Json::array(), skipped = Json::array();
    std::map<std::string, std::size_t> by_class;
    for (const Json& k : e.at("classes")) {
        const std::string klass = k.at("class");
        if (const auto it = by_class.find(klass); it != by_class.end()) {  // found on several runs: one case
            entries[it->second]["runs"].push_back(k.at("run"));
            continue;
        }
        if (holds_the_holder(k.at("faults"))) {
            skipped.push_back({{"class", klass}, {"run", k.at("run")},
                               {"why", "a gate where only a holder passes: a pause by another name, which would hold a lock that "
                                       "keeps its lease alive until the run's end"}});
            continue;
        }
        const Json witness = read_json_file(explore_dir / k.at("witness").get<std::string>());
        const std::string name = "discovered-" + slug(klass);
        const Json provenance = {{"class", klass}, {"run", k.at("run")}, {"scenario", e.value("scenario", "")},
                                 {"budget", e.value("budget", 0)}, {"seed", e.value("seed", 0)},
                                 {"schedule_seed", k.value("schedule_seed", Json())}, {"violation", k.value("violation", "")},
                                 {"falls_in", catalog_class_of(klass, catalog)}};
        std::string how, simulated;
        const Json c = promote_witness(witness, klass, name, provenance, how, simulated);
        write_atomically(staging / (name + ".json"), c.dump(2) + "\n");
        by_class[klass] = entries.size();
        entries.push_back({{"case", name + ".json"}, {"class", klass}, {"runs", {k.at("run")}}, {"violation", k.value("violation", "")},
                           {"failure_class", catalog_class_of(klass, catalog)}, {"covered_by", covered_by(klass, catalog)},
                           {"forced", how}, {"simulated", simulated}});
    }
    const Json out = {{"format", "lockbench-promoted"}, {"version", 1}, {"explore", fs::absolute(explore_dir).string()},
                      {"cases", entries}, {"skipped", skipped}};
    write_atomically(staging / "promoted.json", out.dump(2) + "\n");
    replace_folder(staging, dir);
    return out;
}

}  // namespace lockbench::sim
