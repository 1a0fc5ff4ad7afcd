// The table `matrix`, `sweep` and `merge` print: a row per cell, its columns the metric
// table's cell columns (analysis/metrics.h), the violation rate and the acquire latency.
#include <algorithm>
#include <cstdio>

#include "analysis/metrics.h"
#include "sim/engine/summary.h"  // kNotForcedExit
#include "sim/harness/matrix.h"

namespace lockbench {
namespace {

using Json = nlohmann::json;

const Column kRate{"violating (95%)", 16}, kAcquireP99{"acq p99", 9, 2, "ms"};

std::string padded(std::string text, int width) {
    if (static_cast<int>(text.size()) < width) text.append(static_cast<size_t>(width) - text.size(), ' ');
    return text;
}

std::string right(const std::string& text, int width) {
    return static_cast<int>(text.size()) < width ? std::string(static_cast<size_t>(width) - text.size(), ' ') + text : text;
}

// "2/5 [0.12,0.77]": how many repetitions violated, and the rate's 95 % interval.
std::string rate_text(const Json& a, int done) {
    char rate[48];
    std::snprintf(rate, sizeof rate, "%lld/%d [%.2f,%.2f]", a.at("violating_reps").get<long long>(), done,
                  a.at("violation_rate_ci95").at(0).get<double>(), a.at("violation_rate_ci95").at(1).get<double>());
    return rate;
}

// As the table has always been written: a line of at most 639 characters.
std::string ended(std::string line) {
    line += "\n";
    if (line.size() > 639) line.resize(639);
    return line;
}

std::string header_line(int width, bool sweep) {
    std::string line = padded("cell", width) + " " + right("reps", 5);
    for (const Metric& m : metrics()) {
        if (!m.cell_column) continue;
        line += " " + table_header(*m.cell_column);
        if (m.aggregation == Aggregation::spread_rate) line += " " + table_header(kRate);
    }
    return ended(line + " " + table_header(kAcquireP99) + "  " + (sweep ? "value" : "expected"));
}

// Over the repetitions that happened as written; those that could not be forced are named.
std::string verdict_of(const Json& c, bool sweep) {
    const Json& a = c.at("aggregate");
    const int done = c.value("reps_as_written", c.at("reps_done").get<int>());
    if (sweep) return c.at("value").dump();
    const auto unforced = c.value("could_not_force", Json::array()).size();
    const std::string also = unforced ? ", " + std::to_string(unforced) + " could not be forced" : "";
    if (done == 0 && unforced > 0) return "COULD NOT FORCE: " + c.at("could_not_force").at(0).value("reason", std::string()).substr(0, 160);
    if (const int failed = a.value("clients_failed_reps", 0); failed > 0)
        return "CLIENTS FAILED in " + std::to_string(failed) + "/" + std::to_string(done) + also;
    if (done > 0 && a.at("has_expectations").get<bool>())
        return (a.at("expectation_held").get<bool>()
                    ? "held"
                    : "NOT HELD in " + std::to_string(done - a.at("expectations_held_reps").get<int>()) + "/" +
                          std::to_string(done)) + also;
    return "-" + also;
}

std::string cell_line(const Json& c, int width, bool sweep) {
    const Json& a = c.at("aggregate");
    const int done = c.at("reps_done").get<int>();
    char reps[32];
    std::snprintf(reps, sizeof reps, "%2d/%-2d", done, c.at("repeat").get<int>());
    std::string line = padded(c.at("id").get<std::string>(), width) + " " + reps;
    if (done == 0) return ended(line + " not run");
    for (const Metric& m : metrics()) {
        if (!m.cell_column) continue;
        line += " " + table_cell(*m.cell_column, a.at(std::string(m.aggregate_key())).at("mean").get<double>());
        if (m.aggregation == Aggregation::spread_rate) line += " " + right(rate_text(a, done), kRate.width);
    }
    line += " " + table_cell(kAcquireP99, a.at("acquire_ms").at("p99").get<double>());
    return ended(line + "  " + verdict_of(c, sweep));
}

}  // namespace

std::string format_matrix_table(const Json& summary) {
    const bool sweep = summary.at("kind") == "sweep";
    int width = 4;
    for (const auto& c : summary.at("cells")) width = std::max(width, static_cast<int>(c.at("id").get<std::string>().size()));
    std::string out = header_line(width, sweep);
    for (const auto& c : summary.at("cells")) out += cell_line(c, width, sweep);
    return out;
}

std::string missed_expectations(const Json& expectations) {
    std::string text;
    for (const Json& e : expectations) {
        if (e.value("held", true)) continue;
        const Json v = e.value("value", Json());
        std::string value = v.is_string() ? v.get<std::string>() : v.dump();
        if (v.is_number()) {  // 7, not 7.0
            char number[32];
            std::snprintf(number, sizeof number, "%g", v.get<double>());
            value = number;
        }
        text += (text.empty() ? "" : ", ") + e.value("expect", std::string("?")) + " (" + value + ")";
    }
    return text.empty() ? "none named" : text;
}

std::string format_missed(const Json& summary) {
    if (summary.at("kind") == "sweep") return "";
    std::string lines;
    int count = 0;
    for (const auto& c : summary.at("cells"))
        for (const auto& r : c.value("reps", Json::array())) {
            if (r.value("expectations_held", true)) continue;
            ++count;
            lines += "  " + c.at("id").get<std::string>() + " rep " + std::to_string(r.at("rep").get<int>() + 1) + ": " +
                     missed_expectations(r.value("expectations", Json::array())) + " (" +
                     r.value("dir", std::string()) + ")\n";
        }
    std::string out;
    if (count > 0)
        out = "expectations NOT held in " + std::to_string(count) + (count == 1 ? " repetition" : " repetitions") +
              ":\n" + lines;
    return out + format_not_as_written(summary);
}

std::string format_not_as_written(const Json& summary) {
    std::string rerun, forced;
    int reruns = 0, unforced = 0;
    for (const auto& c : summary.at("cells")) {
        const std::string id = c.at("id").get<std::string>();
        for (const auto& a : c.value("not_as_written", Json::array())) {
            ++reruns;
            if (reruns <= 20)
                rerun += "  " + id + " rep " + std::to_string(a.value("rep", 0) + 1) + " attempt " +
                         std::to_string(a.value("attempt", 0)) + ": " + a.value("reason", std::string()) + "\n";
        }
        for (const auto& r : c.value("could_not_force", Json::array())) {
            ++unforced;
            forced += "  " + id + " rep " + std::to_string(r.value("rep", 0) + 1) + ": could not force: " +
                      r.value("reason", std::string()) + " (" + r.value("dir", std::string()) + ")\n";
        }
    }
    std::string out;
    if (reruns > 0)
        out += "not as written, run again: " + std::to_string(reruns) + (reruns == 1 ? " attempt" : " attempts") +
               (reruns > 20 ? " (the first 20; every one is in summary.json)" : "") + ":\n" + rerun;
    if (unforced > 0)
        out += "could not be forced (no evidence, counted in no verdict): " + std::to_string(unforced) +
               (unforced == 1 ? " repetition" : " repetitions") + ":\n" + forced;
    return out;
}

int matrix_exit_code(const Json& summary) {
    if (summary.at("kind") == "sweep") return 0;
    int code = 0;
    for (const auto& c : summary.at("cells")) {
        const Json& a = c.at("aggregate");
        if (c.value("reps_as_written", c.at("reps_done").get<int>()) > 0 && a.at("has_expectations").get<bool>() &&
            !a.at("expectation_held").get<bool>())
            return 1;
        if (a.value("clients_failed_reps", 0) > 0) return 1;  // an adapter broke: that cell is not trusted
        if (!c.value("could_not_force", Json::array()).empty()) code = kNotForcedExit;
    }
    return code;
}

}  // namespace lockbench
