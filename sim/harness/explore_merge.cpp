// `lockbench merge OUT SHARD...` for the folders of `explore --shard I/N`: one explore.json as
// if one search had run every shard's schedules. Counts add up; the violating schedules are
// listed in index order; a class found by several shards keeps the witness of the lowest
// schedule index and adds up its schedules; a run's first violation is its lowest index's.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/harness/explore.h"
#include "sim/harness/results_folder.h"

namespace lockbench::sim {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

struct ShardFile {
    fs::path dir;
    Json e;
    int index = 0, count = 1;
};

// One shard's explore.json, its fields checked: a file that is not one names itself and the
// field, in one line.
ShardFile read_shard(const fs::path& dir) {
    ShardFile s{dir, read_json_file(dir / "explore.json")};
    const std::string where = (dir / "explore.json").string();
    if (!s.e.is_object() || !s.e.contains("classes"))
        throw std::runtime_error(where + ": classes: missing (written before failure classes, or not an explore.json); run explore again");
    for (const char* list : {"classes", "violations", "violating_schedules", "searched"})
        if (!s.e.contains(list) || !s.e.at(list).is_array()) throw std::runtime_error(where + ": " + list + ": expected an array");
    if (!s.e.contains("runs") || !s.e.at("runs").is_object()) throw std::runtime_error(where + ": runs: expected an object");
    for (const char* number : {"schedules_run", "wall_s"})
        if (!s.e.contains(number) || !s.e.at(number).is_number()) throw std::runtime_error(where + ": " + number + ": expected a number");
    const Json shard = s.e.value("shard", Json());
    char rest = 0;
    if (!shard.is_string() || std::sscanf(shard.get<std::string>().c_str(), "%d/%d%c", &s.index, &s.count, &rest) != 2 ||
        s.count < 1 || s.index < 0 || s.index >= s.count)
        throw std::runtime_error(where + ": shard: expected I/N with 0 <= I < N, got " + shard.dump());
    return s;
}

// Every shard of one search, each once: the same scenario, seed, budget and N.
void check_shards(const std::vector<ShardFile>& shards) {
    std::set<int> seen;
    const ShardFile& first = shards.front();
    for (const ShardFile& s : shards) {
        const std::string where = (s.dir / "explore.json").string();
        for (const char* field : {"scenario", "seed", "budget", "schedules_per_run", "first", "searched"})
            if (s.e.value(field, Json()) != first.e.value(field, Json()))
                throw std::runtime_error(where + ": " + field + ": differs from " + (first.dir / "explore.json").string() +
                                         ": not a shard of the same search");
        if (s.count != first.count) throw std::runtime_error(where + ": shard: of " + std::to_string(s.count) + ", not " + std::to_string(first.count));
        if (!seen.insert(s.index).second) throw std::runtime_error(where + ": shard " + std::to_string(s.index) + " given twice");
    }
    if (static_cast<int>(seen.size()) != first.count)
        throw std::runtime_error((first.dir / "explore.json").string() + ": shard: " + std::to_string(seen.size()) + " of " +
                                 std::to_string(first.count) + " shards given; merge needs all of them");
}

void add_count(Json& to, const Json& from, const char* field) {
    to[field] = to.value(field, 0LL) + from.value(field, 0LL);
}

Json merge_runs(const std::vector<ShardFile>& shards) {
    Json runs = Json::object();
    for (const ShardFile& s : shards)
        for (const auto& [name, r] : s.e.at("runs").items()) {
            Json& m = runs[name];
            if (m.is_null()) m = Json::object();
            for (const char* f : {"schedules", "violating", "invalid", "shrunk", "unclassified"}) add_count(m, r, f);
            m["wall_s"] = std::max(m.value("wall_s", 0.0), r.value("wall_s", 0.0));
            if (!r.at("first_violation_s").is_null() &&
                (!m.contains("first_violation_s") || m["first_violation_s"].is_null() || r["first_violation_s"] < m["first_violation_s"]))
                m["first_violation_s"] = r["first_violation_s"];
            if (!m.contains("first_violation_s")) m["first_violation_s"] = nullptr;
        }
    return runs;
}

// Keeps, per key, the entry of the lowest schedule index; `add` merges the others into it.
template <class Key, class Add>
Json lowest_per(const std::vector<ShardFile>& shards, const char* list, Key key, Add add, std::map<std::string, fs::path>& from) {
    std::map<std::string, Json> kept;
    std::vector<std::string> order;
    for (const ShardFile& s : shards)
        for (const Json& e : s.e.at(list)) {
            const std::string k = key(e);
            auto it = kept.find(k);
            if (it == kept.end()) {
                order.push_back(k);
                kept[k] = e;
                from[k] = s.dir;
                continue;
            }
            Json other = e;
            if (e.at("schedule").get<long long>() < it->second.at("schedule").get<long long>()) {
                std::swap(other, it->second);
                from[k] = s.dir;
            }
            add(it->second, other);
        }
    Json out = Json::array();
    for (const std::string& k : order) out.push_back(kept.at(k));
    sort_by_run_and_schedule(out);
    return out;
}

// Copies a witness (its scenario and its tree) into the merged folder, once per merge, over
// whatever a previous merge left there.
void copy_witness(const fs::path& from, const std::string& scenario, const std::string& tree, const fs::path& out,
                  std::set<std::string>& copied) {
    if (!copied.insert(scenario).second) return;
    fs::copy_file(from / scenario, out / scenario, fs::copy_options::overwrite_existing);
    const fs::path staging = make_staging(out / tree);
    fs::copy(from / tree, staging, fs::copy_options::recursive);
    replace_folder(staging, out / tree);
}

}  // namespace

void sort_by_run_and_schedule(Json& list) {
    const auto key = [](const Json& e) { return std::make_pair(e.at("run").get<std::string>(), e.at("schedule").get<long long>()); };
    std::stable_sort(list.begin(), list.end(), [&](const Json& a, const Json& b) { return key(a) < key(b); });
}

Json merge_explore(const std::vector<fs::path>& dirs, const fs::path& out) {
    std::vector<ShardFile> shards;
    for (const fs::path& d : dirs) shards.push_back(read_shard(d));
    check_shards(shards);
    std::map<std::string, fs::path> class_from, first_from;
    const auto class_key = [](const Json& e) { return e.at("run").get<std::string>() + "\n" + e.at("class").get<std::string>(); };
    Json classes = lowest_per(shards, "classes", class_key, [](Json& kept, const Json& other) {
        kept["schedules"] = kept.at("schedules").get<long long>() + other.at("schedules").get<long long>();
        kept["first_found_s"] = std::min(kept.at("first_found_s").get<double>(), other.at("first_found_s").get<double>());
    }, class_from);
    Json firsts = lowest_per(shards, "violations", [](const Json& e) { return e.at("run").get<std::string>(); },
                             [](Json&, const Json&) {}, first_from);
    fs::create_directories(out);
    std::set<std::string> copied;
    for (const Json& c : classes) copy_witness(class_from.at(class_key(c)), c.at("witness"), c.at("tree"), out, copied);
    for (const Json& v : firsts)
        copy_witness(first_from.at(v.at("run")), v.at("witness").at("scenario"), v.at("witness").at("tree"), out, copied);
    Json every = Json::array();
    for (const ShardFile& s : shards)
        for (const Json& v : s.e.at("violating_schedules")) every.push_back(v);
    sort_by_run_and_schedule(every);
    Json runs = merge_runs(shards);
    for (auto& [name, r] : runs.items())
        r["classes"] = std::ranges::count_if(classes, [&](const Json& c) { return c.at("run") == name; });
    const Json& first = shards.front().e;
    long long total = 0;
    double wall = 0;
    for (const ShardFile& s : shards) {
        total += s.e.at("schedules_run").get<long long>();
        wall = std::max(wall, s.e.at("wall_s").get<double>());
    }
    Json merged = {{"scenario", first.at("scenario")}, {"scenario_file", first.at("scenario_file")}, {"seed", first.at("seed")},
                   {"budget", first.value("budget", 0)}, {"shard", "0/1"}, {"merged_shards", shards.size()},
                   {"schedules_per_run", first.at("schedules_per_run")}, {"first", first.at("first")},
                   {"searched", first.at("searched")},
                   {"schedules_run", total}, {"violations_found", firsts.size()}, {"wall_s", wall},
                   {"schedules_per_s", static_cast<double>(total) / std::max(wall, 1e-9)}, {"runs", runs},
                   {"violations", firsts}, {"violating_schedules", every}, {"classes", classes}};
    write_atomically(out / "explore.json", merged.dump(2) + "\n");
    return merged;
}

}  // namespace lockbench::sim
