#include "sim/harness/verdict.h"

#include <algorithm>
#include <iostream>
#include <map>

#include "sim/harness/compose.h"
#include "sim/harness/matrix.h"
#include "sim/harness/matrix_spec.h"
#include "sim/harness/matrix_tree.h"
#include "sim/harness/results_folder.h"

namespace fs = std::filesystem;

namespace lockbench {
namespace {

using Json = nlohmann::json;

constexpr const char* kNotApplicable = "not applicable";

std::size_t rank(const std::string& word) {
    const auto& all = verdicts();
    for (std::size_t i = 0; i < all.size(); ++i)
        if (verdict_word(all[i]) == word) return i;
    return all.size();
}

// The worst of the counted words (verdict.h: worst first).
std::string worst(const Json& counts) {
    std::string out;
    for (const auto& [word, n] : counts.items())
        if (n.get<int>() > 0 && (out.empty() || rank(word) < rank(out))) out = word;
    return out;
}

void add_counts(Json& into, const Json& counts) {
    for (const auto& [word, n] : counts.items()) into[word] = into.value(word, 0) + n.get<int>();
}

const Json* find_cell(const Json& summary, const std::string& case_name, const std::string& run) {
    for (const Json& c : summary.at("cells"))
        if (c.value("scenario", "") == case_name && c.value("run", "") == run) return &c;
    return nullptr;
}

// What a repetition's run said of itself: its summary entry.
Json rep_run_json(const fs::path& tree, const Json& rep) {
    const Json summary = read_json_file(tree / rep.at("dir").get<std::string>() / "summary.json");
    return summary.at("runs").at(0);
}

// The witness that shows a verdict: the first overlap for "2 holders", else the first stale
// write accepted or foreign release ("unsafe"), else the first of any kind.
Json showing(const Json& witnesses, const std::string& verdict) {
    const std::vector<std::string> kinds = verdict == verdict_word(Verdict::two_holders)
                                               ? std::vector<std::string>{"mutual_exclusion"}
                                               : std::vector<std::string>{"stale_write", "foreign_release"};
    for (const std::string& kind : kinds)
        for (const Json& w : witnesses)
            if (w.value("kind", "") == kind) return w;
    return witnesses.empty() ? Json() : witnesses.at(0);
}

// The first repetition with the cell's worst verdict, as a concrete case: the witness that
// shows it, the folder it is in, and the one command that replays it live.
void add_witness(Json& entry, const fs::path& tree, const Json& cell) {
    for (const Json& rep : cell.at("reps")) {
        if (rep.value("verdict", "") != entry.at("verdict")) continue;
        const Json run = rep_run_json(tree, rep);
        const fs::path dir = tree / rep.at("dir").get<std::string>();
        Json w = {{"rep", rep.at("rep")}, {"seed", rep.at("seed")}, {"dir", rep.at("dir")},
                  {"run_dir", (fs::path(rep.at("dir").get<std::string>()) / run.at("run_dir").get<std::string>()).string()}};
        if (const Json first = showing(run.at("witnesses"), entry.at("verdict")); !first.is_null()) w["first"] = first;
        entry["witness"] = w;
        entry["replay"] = "lockbench run " + (dir / "scenario.json").string() + " --algorithm " + cell.at("run").get<std::string>() +
                          " --seed " + rep.at("seed").dump() + " --out results/replay-" + cell.at("run").get<std::string>();
        return;
    }
}

// Every repetition's failed expectations, "rep 2: faults_injected == 1 (got 0)".
Json failed_expectations(const Json& cell) {
    Json out = Json::array();
    for (const Json& rep : cell.at("reps"))
        for (const Json& e : rep.value("expectations", Json::array()))
            if (!e.value("held", true))
                out.push_back("rep " + std::to_string(rep.at("rep").get<int>() + 1) + ": " + e.at("expect").get<std::string>() +
                              " (got " + (e.at("value").is_string() ? e.at("value").get<std::string>() : e.at("value").dump()) + ")");
    return out;
}

Json case_entry(const fs::path& tree, const Json& cell, const CaseFile& c, const CaseVariant& v, const LockFile& lock) {
    const Json& agg = cell.at("aggregate");
    Json e = {{"case", c.name}, {"variant", v.name}, {"class", c.failure_class ? Json(*c.failure_class) : Json()},
              {"cell", cell.at("id")}, {"repetitions", cell.at("reps").size()},
              {"counts", agg.value("verdicts", Json::object())},
              {"expectations_held", agg.value("expectations_held_reps", 0)}, {"description", c.description}};
    e["verdict"] = worst(e.at("counts"));
    if (const RecordedOutcome* r = recorded_outcome(lock, c.name, v.name, c.failure_class)) e["recorded"] = r->text();
    if (const auto p = predicted_verdict(v, lock)) {
        e["predicted"] = verdict_word(p->first);
        e["predicted_why"] = p->second;
    }
    const std::string word = e.at("verdict");
    if (word == verdict_word(Verdict::two_holders) || word == verdict_word(Verdict::unsafe)) {
        if (!c.remedy.empty()) e["remedy"] = c.remedy;
        add_witness(e, tree, cell);
    }
    e["failed"] = failed_expectations(cell);
    return e;
}

// The library as its adapter's ready line described it (run.json's "adapter"), or "built-in".
Json library_of(const fs::path& tree, const Json& summary) {
    for (const Json& cell : summary.at("cells"))
        for (const Json& rep : cell.value("reps", Json::array())) {
            const Json run = rep_run_json(tree, rep);
            return run.contains("adapter") ? run.at("adapter") : Json{{"library", "built-in"}};
        }
    return Json::object();
}

// A lock's recorded word for a class: the one its applicable cases of that class share, or
// each with its case where they differ; "—" and why when none applies.
Json reference_row(const LockFile& ref, const std::vector<CaseFile>& cases) {
    Json classes = Json::object();
    for (const std::string& klass : failure_classes()) {
        std::vector<std::string> words, why;
        for (const CaseFile& c : cases) {
            if (c.failure_class != klass) continue;
            for (const CaseVariant& v : c.variants) {
                if (const auto no = why_not(c, v, ref, LockChoice::asked)) {
                    why.push_back(c.name + ": " + *no);
                    continue;
                }
                const RecordedOutcome* r = recorded_outcome(ref, c.name, v.name, c.failure_class);
                const std::string w = r ? r->text() : "not recorded";
                if (std::ranges::find(words, w) == words.end()) words.push_back(w);
            }
        }
        std::string text;
        for (const auto& w : words) text += (text.empty() ? "" : " / ") + w;
        classes[klass] = words.empty() ? Json{{"verdict", "—"}, {"why", why}} : Json{{"verdict", text}};
    }
    return {{"lock", ref.name}, {"description", ref.description}, {"classes", classes}};
}

Json class_entries(const Json& cases, const Json& not_applicable) {
    Json out = Json::array();
    for (const std::string& klass : failure_classes()) {
        Json counts = Json::object(), names = Json::array();
        int reps = 0;
        Json recorded = Json::array();
        for (const Json& e : cases) {
            if (e.at("class") != klass) continue;
            add_counts(counts, e.at("counts"));
            reps += e.at("repetitions").get<int>();
            names.push_back(e.at("cell"));
            if (e.contains("recorded") && std::ranges::find(recorded, e.at("recorded")) == recorded.end())
                recorded.push_back(e.at("recorded"));
        }
        if (names.empty()) {
            Json why = Json::array();
            for (const Json& n : not_applicable)
                if (n.value("class", Json()) == klass) why.push_back(n.at("case").get<std::string>() + ": " + n.at("why").get<std::string>());
            out.push_back({{"class", klass}, {"verdict", kNotApplicable}, {"why", why}});
            continue;
        }
        Json entry = {{"class", klass}, {"verdict", worst(counts)}, {"repetitions", reps}, {"counts", counts}, {"cases", names}};
        if (!recorded.empty()) entry["recorded"] = recorded;
        out.push_back(std::move(entry));
    }
    return out;
}

Json differences(const Json& cases) {
    Json out = Json::array();
    for (const Json& e : cases) {
        const std::string name = variant_label(e.at("case").get<std::string>(), e.at("variant").get<std::string>());
        if (e.contains("recorded") && !e.at("recorded").get<std::string>().starts_with("any")) {
            const int match = e.at("counts").value(e.at("recorded").get<std::string>(), 0);
            if (match != e.at("repetitions").get<int>()) {
                std::string got;
                for (const auto& [w, n] : e.at("counts").items())
                    got += (got.empty() ? "" : ", ") + w + " " + std::to_string(n.get<int>()) + "/" + e.at("repetitions").dump();
                out.push_back(name + ": the lock file records " + e.at("recorded").get<std::string>() + "; got " + got);
                continue;
            }
        }
        for (const Json& f : e.at("failed"))
            if (f.get<std::string>().find("verdict ==") == std::string::npos)
                out.push_back(name + ": the case did not happen as written: " + f.get<std::string>());
    }
    return out;
}

// Why a variant does not apply, as the matrix recorded it when it composed the cases
// (summary.json's not_applicable): composed once, read here.
std::optional<std::string> recorded_why_not(const Json& summary, const std::string& case_name, const std::string& variant) {
    for (const Json& n : summary.value("not_applicable", Json::array()))
        if (n.value("case", "") == case_name && n.value("variant", "") == variant) return n.value("why", "");
    return std::nullopt;
}

}  // namespace

std::vector<LockFile> reference_locks(const std::vector<LockFile>& locks) {
    std::vector<LockFile> out;
    for (const LockFile& l : locks)
        if (l.reference) out.push_back(l);
    return out;
}

Json verdict_of_tree(const fs::path& tree, const LockFile& lock, const std::vector<CaseFile>& cases,
                     const std::vector<LockFile>& reference) {
    const Json summary = read_json_file(tree / "summary.json");
    Json entries = Json::array(), missing = Json::array(), unforced = Json::array();
    for (const CaseFile& c : cases)
        for (const CaseVariant& v : c.variants) {
            const Json* cell = find_cell(summary, c.name, run_name(lock.name, v.name));
            // A repetition that could not be forced is no evidence: named, never a verdict.
            for (const Json& r : cell ? cell->value("could_not_force", Json::array()) : Json::array())
                unforced.push_back(cell->at("id").get<std::string>() + " rep " + std::to_string(r.value("rep", 0) + 1) +
                                   ": could not force: " + r.value("reason", std::string()));
            if (cell && !cell->at("reps").empty()) {
                entries.push_back(case_entry(tree, *cell, c, v, lock));
                continue;
            }
            if (cell && !cell->value("could_not_force", Json::array()).empty()) continue;
            missing.push_back({{"case", c.name}, {"variant", v.name}, {"class", c.failure_class ? Json(*c.failure_class) : Json()},
                               {"why", recorded_why_not(summary, c.name, v.name).value_or("not run")}});
        }
    Json refs = Json::array();
    for (const LockFile& r : reference) refs.push_back(reference_row(r, cases));
    return {{"format", "lockbench-verdict"}, {"version", 2}, {"lock", lock.name}, {"lock_file", lock.path},
            {"description", lock.description}, {"facts", lock_facts(lock)}, {"library", library_of(tree, summary)},
            {"repeat", summary.value("repeat", 0)}, {"classes", class_entries(entries, missing)}, {"cases", entries},
            {"not_applicable", missing}, {"reference", refs}, {"differences", differences(entries)},
            {"could_not_force", unforced},
            {"discovered", Json::array()}, {"discover", Json()}};
}

namespace {

// "2 holders 1/3, safe 2/3": a class's or a case's counts, worst word first.
std::string counts_text(const Json& entry) {
    if (!entry.contains("counts")) return entry.value("verdict", std::string(kNotApplicable));
    std::vector<std::pair<std::string, int>> counts;
    for (const auto& [word, n] : entry.at("counts").items()) counts.emplace_back(word, n.get<int>());
    std::ranges::sort(counts, {}, [](const auto& c) { return rank(c.first); });
    std::string out;
    for (const auto& [word, n] : counts)
        out += (out.empty() ? "" : ", ") + word + " " + std::to_string(n) + "/" + entry.at("repetitions").dump();
    return out;
}

const Json* case_of(const Json& verdict, const Json& entry) {
    for (const Json& c : verdict.at("cases"))
        if (c.at("case") == entry.at("case") && c.at("variant") == entry.at("variant")) return &c;
    return nullptr;
}

// What a verdict says of a case it has no entry for: it does not apply, or no repetition of it
// could be made to happen as written.
Json absent(const Json& verdict, const Json& entry) {
    for (const Json& n : verdict.at("not_applicable"))
        if (n.at("case") == entry.at("case") && n.at("variant") == entry.at("variant")) return {{"verdict", kNotApplicable}};
    return {{"verdict", "could not force"}};
}

}  // namespace

Json versus(const Json& mine, const Json& theirs, const std::string& theirs_path) {
    Json classes = Json::array(), cases = Json::array();
    bool same = true;
    for (const Json& here : mine.at("classes")) {
        const auto there = std::ranges::find_if(theirs.at("classes"), [&](const Json& c) { return c.at("class") == here.at("class"); });
        const Json none = {{"verdict", kNotApplicable}};
        const Json& other = there != theirs.at("classes").end() ? *there : none;
        if (here.at("verdict") == kNotApplicable && other.at("verdict") == kNotApplicable) continue;
        const bool differs = here.at("verdict") != other.at("verdict");
        same = same && !differs;
        classes.push_back({{"class", here.at("class")}, {"here", counts_text(here)}, {"there", counts_text(other)}, {"differs", differs}});
    }
    int cases_same = 0;  // the cases both ran with the same verdict (each class's among them)
    for (const Json& here : mine.at("cases")) {
        const Json* other = case_of(theirs, here);
        if (other && other->at("verdict") == here.at("verdict")) {
            ++cases_same;
            continue;
        }
        same = same && !other;  // a case both ran (a known bug's, a variant's) differs as a class does
        cases.push_back({{"case", here.at("case")}, {"variant", here.at("variant")}, {"class", here.at("class")},
                         {"here", counts_text(here)}, {"there", counts_text(other ? *other : absent(theirs, here))}});
    }
    for (const Json& there : theirs.at("cases"))
        if (!case_of(mine, there))
            cases.push_back({{"case", there.at("case")}, {"variant", there.at("variant")}, {"class", there.at("class")},
                             {"here", counts_text(absent(mine, there))}, {"there", counts_text(there)}});
    return {{"lock", theirs.at("lock")}, {"library", theirs.value("library", Json::object()).value("library", "built-in")},
            {"verdict", theirs_path}, {"classes", classes}, {"cases", cases}, {"cases_same", cases_same},
            {"same", same}};
}

namespace {

// A verdict's folder is that verdict's own. One that holds this lock's verdict made under
// other settings (other cases, another --repeat, or the lock file's record changed: a run's
// expectations carry it) is emptied and made afresh, saying so, as `scripts/run` starts afresh;
// refused, recording a lock's row (step 6 of README's "Your own lock") would leave its next
// verdict nowhere to go. The same settings resume; a folder that is not an earlier verdict of
// this lock (no verdict.json, as a matrix's of that lock alone has none, or another lock's) is
// left to prepare_out, which refuses it. Its lock file stays: this process holds it.
void start_afresh_if_other_settings(const fs::path& out, const MatrixSpec& spec, const LockFile& lock) {
    if (!fs::is_regular_file(header_path(out)) || !fs::is_regular_file(out / kVerdictFile)) return;
    const Json header = read_results_header(out);
    const Json locks = header.at("spec").value("locks", Json::object());
    if (header.at("spec_id") == spec.id || !locks.is_object() || locks.size() != 1 || !locks.contains(lock.name)) return;
    std::cerr << "lockbench: " << out.string() << " holds a verdict of " << lock.name
              << " made with other settings (its cases, --repeat, or the lock file's record): made afresh\n";
    for (const auto& entry : fs::directory_iterator(out))
        if (entry.path().filename() != kLockFileName) fs::remove_all(entry.path());
}

}  // namespace

Json run_verdict(const LockFile& lock, const std::vector<CaseFile>& cases, const std::vector<LockFile>& reference,
                 const VerdictOptions& opts) {
    std::vector<Scenario> scenarios;
    std::vector<NotApplicable> missing;
    for (const CaseFile& c : cases) {
        Composed k = compose(c, {lock}, LockChoice::asked, Expectations::record_only);
        missing.insert(missing.end(), k.not_applicable.begin(), k.not_applicable.end());
        if (!k.empty()) scenarios.push_back(std::move(k.scenario));
    }
    if (scenarios.empty()) throw std::runtime_error(lock.label() + ": no case of the catalog applies to it (`lockbench list --lock` says why)");
    const Json locks = {{lock.name, {{"description", lock.description}, {"lock_file", lock.path}, {"facts", lock_facts(lock)}}}};
    const MatrixSpec spec = matrix_spec_of(scenarios, to_json(missing), locks, opts.repeat);
    start_afresh_if_other_settings(opts.out, spec, lock);
    run_matrix(spec, {opts.out, Shard{0, 1}, opts.self_exe, opts.progress, opts.project_dir, std::nullopt, opts.jobs});
    Json verdict = verdict_of_tree(opts.out, lock, cases, reference);
    write_atomically(opts.out / kVerdictFile, verdict.dump(2) + "\n");
    return verdict;
}

}  // namespace lockbench
