#include "sim/engine/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "sim/engine/scenario.h"

namespace lockbench {
namespace {

double metric_value(const nlohmann::json& run, const std::string& metric) {
    for (const char* group : {"ops", "safety", "availability"})
        if (run.at(group).contains(metric)) return run.at(group).at(metric).get<double>();
    return 0;
}

// Each expectation of the run, with what was measured and whether it held.
nlohmann::json judge(const nlohmann::json& run, const nlohmann::json& expect) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& e : expect) {
        const Expectation x{e.at("metric"), e.at("op"), e.at("value")};
        const double value = metric_value(run, x.metric);
        checks.push_back({{"expect", x.text()}, {"value", value}, {"held", x.holds(value)}});
    }
    return checks;
}

// Every expectation held, and no client's adapter failed (a run missing clients proves nothing).
bool all_held(const nlohmann::json& run) {
    return std::ranges::all_of(run.at("expectations"), [](const auto& c) { return c.at("held").template get<bool>(); }) &&
           run.value("clients_failed", nlohmann::json::array()).empty();
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
    if (stored && *stored == recomputed) return;
    out.push_back(path + ": summary.json has " + shown(stored) + ", the histories give " + shown(&recomputed));
}

}  // namespace

std::vector<std::string> figure_differences(const nlohmann::json& stored, const nlohmann::json& recomputed) {
    std::vector<std::string> out;
    differences_under(&stored, recomputed, "", out);
    return out;
}

nlohmann::json run_summary(const nlohmann::json& record, const CheckResult& result, const RunHistory& h) {
    nlohmann::json run = {
        {"name", record.at("name")}, {"algorithm", record.at("algorithm")}, {"params", record.at("params")},
        {"nodes", record.at("nodes")}, {"clients", record.at("clients")}, {"seed", record.at("seed")},
        {"run_dir", "runs/" + record.at("name").get<std::string>()},
    };
    if (record.contains("command")) run["command"] = record.at("command");  // an external library's adapter
    run.update(to_json(result, h));
    run["ops"]["faults_injected"] = record.value("faults_injected", 0);
    // Clients whose adapter broke the protocol: each with its one-line reason.
    run["clients_failed"] = record.value("clients_failed", nlohmann::json::array());
    run["faults"] = record.value("faults", nlohmann::json::array());
    run["expectations"] = judge(run, record.value("expect", nlohmann::json::array()));
    run["expectations_held"] = all_held(run);
    return run;
}

std::string format_table(const nlohmann::json& summary) {
    std::ostringstream out;
    char line[512];
    std::snprintf(line, sizeof line, "%-32s %8s %8s %6s %6s %5s %9s %7s %9s %9s %9s  %s\n", "run",
                  "acquired", "sections", "viol", "lost", "stale", "rejected", "foreign", "unavail", "acq p50",
                  "acq p99", "expected");
    out << line;
    for (const auto& r : summary.at("runs")) {
        const auto& s = r.at("safety");
        const auto& acq = r.at("latency_ms").at("acquire");
        std::string verdict = all_held(r) ? "held" : "NOT HELD:";
        for (const auto& c : r.at("expectations"))
            if (!c.at("held").get<bool>())
                verdict += " " + c.at("expect").get<std::string>() + " (got " + cell(c.at("value").get<double>()) + ")";
        if (r.at("expectations").empty()) verdict = "-";
        if (const auto failed = r.value("clients_failed", nlohmann::json::array()); !failed.empty())
            verdict = "CLIENTS FAILED: " + std::to_string(failed.size()) + " (" +
                      failed.at(0).at("error").get<std::string>().substr(0, 120) + ")";
        std::snprintf(line, sizeof line, "%-32s %8s %8s %6s %6s %5s %9s %7s %7sms %7sms %7sms  %s\n",
                      r.at("name").get<std::string>().c_str(),
                      cell(r.at("ops").at("acquired").get<double>()).c_str(),
                      cell(r.at("ops").at("sections_completed").get<double>()).c_str(),
                      cell(s.at("mutual_exclusion_violations").get<double>()).c_str(),
                      cell(s.at("lost_updates").get<double>()).c_str(),
                      cell(s.at("stale_writes_accepted").get<double>()).c_str(),
                      cell(s.at("stale_writes_rejected").get<double>()).c_str(),
                      cell(s.at("foreign_releases").get<double>()).c_str(),
                      cell(r.at("availability").at("unavailable_ms").get<double>()).c_str(),
                      cell(acq.at("p50").get<double>(), "%.2f").c_str(),
                      cell(acq.at("p99").get<double>(), "%.2f").c_str(), verdict.c_str());
        out << line;
    }
    for (const auto& r : summary.value("skipped", nlohmann::json::array()))
        out << r.at("name").get<std::string>() << ": skipped (" << r.at("why").get<std::string>() << ")\n";
    return out.str();
}

int expectations_exit_code(const nlohmann::json& summary) {
    for (const auto& r : summary.at("runs"))
        if (!all_held(r)) return 1;
    return 0;
}

}  // namespace lockbench
