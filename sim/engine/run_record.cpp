#include "sim/engine/run_record.h"

namespace lockbench {

using Json = nlohmann::json;

Json to_json(const RunRecord& r) {
    Json expect = Json::array();
    for (const auto& e : r.expect)
        expect.push_back({{"metric", e.metric}, {"op", e.op}, {"value", e.word ? Json(*e.word) : Json(e.value)}});
    Json j = {{"scenario", r.scenario}, {"lock_key", r.lock_key}, {"expect", expect}, {"workload", r.workload},
              {"command_timeout_ms", r.command_timeout_ms}, {"connect_timeout_ms", r.connect_timeout_ms}};
    add_identity(j, r);
    if (!r.renew.is_null()) j["renew"] = r.renew;
    if (!r.clients_failed.empty()) j["clients_failed"] = to_json(r.clients_failed);
    if (r.sim_events) {
        j["backend"] = "sim";
        j["sim_events"] = *r.sim_events;
    }
    j["faults"] = r.faults;
    j["faults_injected"] = r.faults_injected;
    if (!r.unmet.empty()) j["unmet"] = r.unmet;
    j["final_counter"] = r.final_counter;
    return j;
}

RunRecord run_record_from_json(const Json& j) {
    RunRecord r;
    static_cast<RunIdentity&>(r) = run_identity_from_json(j);
    r.scenario = j.value("scenario", std::string());
    r.lock_key = j.value("lock_key", std::string());
    for (const Json& e : j.value("expect", Json::array())) {
        Expectation x{e.at("metric").get<std::string>(), e.at("op").get<std::string>(), 0, std::nullopt};
        if (e.at("value").is_string()) x.word = e.at("value").get<std::string>();
        else x.value = e.at("value").get<double>();
        r.expect.push_back(std::move(x));
    }
    r.workload = j.value("workload", Json::object());
    r.command_timeout_ms = j.value("command_timeout_ms", 0LL);
    r.connect_timeout_ms = j.value("connect_timeout_ms", 0LL);
    r.renew = j.value("renew", Json());
    r.clients_failed = client_failures_from_json(j.value("clients_failed", Json::array()));
    if (j.contains("sim_events")) r.sim_events = j.at("sim_events").get<std::size_t>();
    r.faults = j.value("faults", Json::array());
    r.faults_injected = j.value("faults_injected", 0LL);
    r.unmet = j.value("unmet", std::vector<std::string>{});
    r.final_counter = j.value("final_counter", 0LL);
    return r;
}

}  // namespace lockbench
