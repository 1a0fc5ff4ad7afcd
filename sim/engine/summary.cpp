#include "sim/engine/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "analysis/metrics.h"
#include "sim/engine/as_written.h"
#include "sim/engine/scenario.h"

namespace lockbench {
namespace {

// Each expectation of the run, with what was measured and whether it held.
std::vector<ExpectationCheck> judge(const RunSummary& run, const std::vector<Expectation>& expect) {
    std::vector<ExpectationCheck> checks;
    for (const Expectation& x : expect) {
        if (is_precondition(x)) continue;  // about the story, not the lock: as_written.h
        if (x.word) {   // "verdict == 2 holders": the run's verdict, a word
            const std::string word(verdict_word(run.verdict));
            checks.push_back({x.text(), 0, word == *x.word, word});
            continue;
        }
        // A figure only some runs have (a failover's, a probe's) that this run lacks: the
        // expectation cannot hold, rather than reading as 0.
        const Metric* m = find_metric(x.metric);
        if (m && m->present && !run.figures.metrics.contains(x.metric)) {
            checks.push_back({x.text(), 0, false, "none"});
            continue;
        }
        const double value = run.metric(x.metric);
        checks.push_back({x.text(), value, x.holds(value), std::nullopt});
    }
    return checks;
}

// Every expectation held, and no client's adapter failed (a run missing clients proves nothing).
bool all_held(const RunSummary& run) {
    return std::ranges::all_of(run.expectations, &ExpectationCheck::held) && run.clients_failed.empty();
}

std::string cell(double v, const char* fmt = "%.0f") {
    char buf[32];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

// A value as a difference line shows it: at most 60 characters.
std::string shown(const nlohmann::json* v) {
    if (!v) return "nothing";
    const std::string text = v->dump();
    return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

void differences_under(const nlohmann::json* stored, const nlohmann::json& recomputed, const std::string& path,
                       std::vector<std::string>& out) {
    if (recomputed.is_object()) {
        for (const auto& [key, value] : recomputed.items()) {
            const nlohmann::json* inner = stored && stored->is_object() && stored->contains(key) ? &stored->at(key) : nullptr;
            differences_under(inner, value, path.empty() ? key : path + "." + key, out);
        }
        return;
    }
    // A figure the summary lacks was added to lockbench after the summary was written
    // (lost_update_share, results version 4): there is nothing to compare it with.
    if (!stored || *stored == recomputed) return;
    out.push_back(path + ": summary.json has " + shown(stored) + ", the histories give " + shown(&recomputed));
}

}  // namespace

std::vector<std::string> figure_differences(const nlohmann::json& stored, const nlohmann::json& recomputed) {
    std::vector<std::string> out;
    differences_under(&stored, recomputed, "", out);
    return out;
}

RunSummary run_summary(const RunRecord& record, const CheckResult& result, const RunHistory& h) {
    RunSummary run;
    static_cast<RunIdentity&>(run) = record;
    run.run_dir = "runs/" + record.name;
    run.figures = run_figures(result, h);
    run.figures.metrics["faults_injected"] = static_cast<double>(record.faults_injected);
    run.clients_failed = record.clients_failed;
    run.faults = record.faults;
    run.verdict = verdict_of(run.figures, run.clients_failed);
    run.expectations = judge(run, record.expect);
    run.expectations_held = all_held(run);
    run.not_as_written = not_as_written(record, h, record.clients_failed);
    return run;
}

namespace {

// The table's columns: the metric table's, then the acquire latency's.
const Column kAcquireP50{"acq p50", 9, 2, "ms"}, kAcquireP99{"acq p99", 9, 2, "ms"};

// The verdict word's column: as wide as the longest word ("holder's write refused").
size_t verdict_width() {
    size_t widest = 0;
    for (Verdict v : verdicts()) widest = std::max(widest, verdict_word(v).size());
    return widest;
}

std::string table_line(const std::string& name, const std::vector<std::string>& cells, std::string verdict,
                       const std::string& expected) {
    std::string line = name;
    if (line.size() < 32) line.append(32 - line.size(), ' ');
    for (const std::string& c : cells) line += " " + c;
    if (const size_t width = verdict_width(); verdict.size() < width) verdict.append(width - verdict.size(), ' ');
    line += "  " + verdict + "  " + expected + "\n";
    // As the table has always been written: a line of at most 511 characters.
    if (line.size() > 511) line.resize(511);
    return line;
}

// Whether the run's expectations held (the verdict word has its own column).
std::string expectations_of(const RunSummary& r) {
    if (!r.as_written()) return "NOT AS WRITTEN (no evidence): " + r.not_as_written.front().substr(0, 200);
    if (!r.clients_failed.empty())
        return "CLIENTS FAILED: " + std::to_string(r.clients_failed.size()) + " (" +
               r.clients_failed.at(0).error.substr(0, 120) + ")";
    if (r.expectations.empty()) return "-";
    std::string verdict = all_held(r) ? "held" : "NOT HELD:";
    for (const ExpectationCheck& c : r.expectations)
        if (!c.held) verdict += " " + c.expect + " (got " + (c.word ? *c.word : cell(c.value)) + ")";
    return verdict;
}

std::string header_line() {
    std::vector<std::string> cells;
    for (const Metric& m : metrics())
        if (m.run_column) cells.push_back(table_header(*m.run_column));
    cells.push_back(table_header(kAcquireP50));
    cells.push_back(table_header(kAcquireP99));
    return table_line("run", cells, "verdict", "expected");
}

std::string run_line(const RunSummary& r) {
    std::vector<std::string> cells;
    for (const Metric& m : metrics())
        if (m.run_column) cells.push_back(table_cell(*m.run_column, r.metric(m.name)));
    cells.push_back(table_cell(kAcquireP50, r.figures.acquire_ms.p50));
    cells.push_back(table_cell(kAcquireP99, r.figures.acquire_ms.p99));
    // A run not as written is no evidence: no word for it.
    return table_line(r.name, cells, r.as_written() ? std::string(verdict_word(r.verdict)) : "-", expectations_of(r));
}

}  // namespace

std::string format_table(const nlohmann::json& summary) {
    std::string out = header_line();
    for (const auto& r : summary.at("runs")) out += run_line(run_summary_from_json(r));
    for (const auto& r : summary.value("skipped", nlohmann::json::array()))
        out += r.at("name").get<std::string>() + ": skipped (" + r.at("why").get<std::string>() + ")\n";
    return out;
}

int expectations_exit_code(const nlohmann::json& summary) {
    int code = 0;
    for (const auto& r : summary.at("runs")) {
        const RunSummary run = run_summary_from_json(r);
        if (!run.as_written()) code = kNotForcedExit;
        else if (!all_held(run)) return 1;
    }
    return code;
}

}  // namespace lockbench
