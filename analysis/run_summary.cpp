#include "analysis/run_summary.h"

#include "analysis/metrics.h"

namespace lockbench {
namespace {

using Json = nlohmann::json;

Json metric_json(const Metric& m, double v) {
    if (m.is_count()) return static_cast<long long>(v);
    return v;
}

}  // namespace

Json to_json(const std::vector<ClientFailure>& failures) {
    Json out = Json::array();
    for (const ClientFailure& f : failures) out.push_back({{"client", f.client}, {"error", f.error}});
    return out;
}

std::vector<ClientFailure> client_failures_from_json(const Json& j) {
    std::vector<ClientFailure> out;
    for (const Json& f : j) out.push_back({f.at("client").get<int>(), f.at("error").get<std::string>()});
    return out;
}

Json to_json(const std::vector<ExpectationCheck>& checks) {
    Json out = Json::array();
    for (const ExpectationCheck& c : checks)
        out.push_back({{"expect", c.expect}, {"value", c.word ? Json(*c.word) : Json(c.value)}, {"held", c.held}});
    return out;
}

double RunFigures::metric(std::string_view name) const {
    const auto it = metrics.find(name);
    return it == metrics.end() ? 0 : it->second;
}

Json to_json(const RunFigures& f) {
    Json j = {{"ops", Json::object()}, {"safety", Json::object()}, {"availability", Json::object()}};
    for (const Metric& m : metrics())
        if (const auto it = f.metrics.find(m.name); it != f.metrics.end())
            j[std::string(group_name(m.group))][std::string(m.name)] = metric_json(m, it->second);
    j["availability"]["windows_ms"] = f.windows_ms;
    j["latency_ms"] = {{"acquire", to_json(f.acquire_ms)}, {"acquire_wait", to_json(f.acquire_wait_ms)},
                       {"release", to_json(f.release_ms)}};
    j["duration_s"] = f.duration_s;
    j["sections_per_s"] = f.sections_per_s;
    j["witnesses"] = f.witnesses;
    return j;
}

namespace {

RunFigures figures_from_json(const Json& j) {
    RunFigures f;
    for (const Metric& m : metrics()) {
        if (m.group == MetricGroup::validity && !j.contains("validity")) continue;  // only where probed
        const Json& group = j.at(std::string(group_name(m.group)));
        if (group.contains(std::string(m.name))) f.metrics[std::string(m.name)] = group.at(std::string(m.name)).get<double>();
    }
    f.windows_ms = j.at("availability").value("windows_ms", Json::array());
    const Json& latency = j.at("latency_ms");
    f.acquire_ms = percentiles_from_json(latency.at("acquire"));
    f.acquire_wait_ms = percentiles_from_json(latency.at("acquire_wait"));
    f.release_ms = percentiles_from_json(latency.at("release"));
    f.duration_s = j.at("duration_s").get<double>();
    f.sections_per_s = j.at("sections_per_s").get<double>();
    f.witnesses = j.value("witnesses", Json::array());
    return f;
}

}  // namespace

void add_identity(Json& j, const RunIdentity& id) {
    j["name"] = id.name;
    j["algorithm"] = id.algorithm;
    j["params"] = id.params;
    j["nodes"] = id.nodes;
    j["clients"] = id.clients;
    j["seed"] = id.seed;
    if (!id.command.empty()) j["command"] = id.command;  // an external library's adapter
    if (id.resource_check != "fence") j["resource_check"] = id.resource_check;
    if (id.adapter.is_object()) j["adapter"] = id.adapter;
    if (id.failure_class) j["failure_class"] = *id.failure_class;
    if (id.lock) j["lock"] = *id.lock;
    if (id.variant) j["variant"] = *id.variant;
    if (id.table_row) j["table_row"] = *id.table_row;
    j["renews_in_background"] = id.renews_in_background;  // always: its absence marks an older record
}

RunIdentity run_identity_from_json(const Json& j) {
    RunIdentity id;
    id.name = j.at("name").get<std::string>();
    id.algorithm = j.at("algorithm").get<std::string>();
    id.params = j.at("params");
    id.nodes = j.at("nodes").get<int>();
    id.clients = j.at("clients").get<int>();
    id.seed = j.at("seed").get<std::uint64_t>();
    id.command = j.value("command", std::vector<std::string>{});
    id.resource_check = j.value("resource_check", std::string("fence"));
    if (j.contains("adapter") && j.at("adapter").is_object()) id.adapter = j.at("adapter");
    if (j.contains("failure_class")) id.failure_class = j.at("failure_class").get<std::string>();
    if (j.contains("lock")) id.lock = j.at("lock").get<std::string>();
    if (j.contains("variant")) id.variant = j.at("variant").get<std::string>();
    if (j.contains("table_row")) id.table_row = j.at("table_row").get<std::string>();
    id.renews_in_background = j.value("renews_in_background", false);
    return id;
}

Json to_json(const RunSummary& s) {
    Json run = {{"run_dir", s.run_dir}};
    add_identity(run, s);
    run.update(to_json(s.figures));
    run["clients_failed"] = to_json(s.clients_failed);
    run["faults"] = s.faults;
    run["expectations"] = to_json(s.expectations);
    run["expectations_held"] = s.expectations_held;
    if (!s.not_as_written.empty()) run["not_as_written"] = s.not_as_written;
    run["verdict"] = verdict_word(s.verdict);
    return run;
}

RunSummary run_summary_from_json(const Json& j) {
    RunSummary s;
    static_cast<RunIdentity&>(s) = run_identity_from_json(j);
    s.run_dir = j.at("run_dir").get<std::string>();
    s.figures = figures_from_json(j);
    s.clients_failed = client_failures_from_json(j.value("clients_failed", Json::array()));
    s.faults = j.value("faults", Json::array());
    for (const Json& c : j.at("expectations")) {
        ExpectationCheck e{c.at("expect").get<std::string>(), 0, c.at("held").get<bool>(), std::nullopt};
        if (c.at("value").is_string()) e.word = c.at("value").get<std::string>();
        else e.value = c.at("value").get<double>();
        s.expectations.push_back(std::move(e));
    }
    s.expectations_held = j.at("expectations_held").get<bool>();
    s.not_as_written = j.value("not_as_written", std::vector<std::string>{});
    // Written since results version 6; an older summary's is what its figures give.
    const std::optional<Verdict> written = j.contains("verdict") ? parse_verdict(j.at("verdict").get<std::string>()) : std::nullopt;
    s.verdict = written.value_or(verdict_of(s.figures, s.clients_failed));
    return s;
}

}  // namespace lockbench
