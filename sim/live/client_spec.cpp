#include "sim/live/client_spec.h"

namespace lockbench {

using Json = nlohmann::json;

Json to_json(const ClientSpec& s) {
    Json j = {{"run", s.run}, {"lock_key", s.lock_key}, {"lock_ports", s.lock_ports}, {"project_dir", s.project_dir}};
    if (s.preflight) {
        j["preflight"] = true;
        if (s.check) j["check"] = *s.check;
        j["adapter_described"] = s.adapter_described;
    } else {
        j.update({{"client", s.client}, {"seed", s.seed}, {"store_port", s.store_port},
                  {"start_barrier", s.start_barrier}, {"control_socket", s.control_socket}, {"armed", s.armed},
                  {"history", s.history}});
    }
    if (!s.adapter_stderr.empty()) j["adapter_stderr"] = s.adapter_stderr;
    if (!s.preflight && !s.adapter_described.empty()) j["adapter_described"] = s.adapter_described;
    if (!s.adapter_env.empty()) j["adapter_env"] = s.adapter_env;
    if (s.discovery) {
        j["sentinels"] = s.discovery->sentinels;
        j["address_map"] = s.discovery->address_map;
    }
    return j;
}

ClientSpec client_spec_from_json(const Json& j) {
    ClientSpec s;
    s.preflight = j.value("preflight", false);
    if (j.contains("check")) s.check = j.at("check");
    s.run = j.at("run");
    s.lock_key = j.at("lock_key").get<std::string>();
    s.lock_ports = j.at("lock_ports").get<std::vector<int>>();
    s.project_dir = j.value("project_dir", std::string());
    s.adapter_stderr = j.value("adapter_stderr", std::string());
    if (s.preflight) {
        s.adapter_described = j.at("adapter_described").get<std::string>();
    } else {
        s.client = j.at("client").get<int>();
        s.seed = j.at("seed").get<std::uint64_t>();
        s.store_port = j.at("store_port").get<int>();
        s.start_barrier = j.at("start_barrier").get<std::string>();
        s.control_socket = j.at("control_socket").get<std::string>();
        s.armed = j.at("armed").get<std::vector<std::string>>();
        s.history = j.at("history").get<std::string>();
        s.adapter_described = j.value("adapter_described", std::string());
    }
    s.adapter_env = j.value("adapter_env", std::map<std::string, std::string>{});
    if (j.contains("sentinels"))
        s.discovery = SentinelPorts{j.at("sentinels").get<std::vector<int>>(),
                                    j.at("address_map").get<std::map<std::string, int>>()};
    return s;
}

}  // namespace lockbench
