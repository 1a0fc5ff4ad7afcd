// What a live run tells each `lockbench client` process (client_main.h): the file it writes
// for each client, as a struct, converted to and from JSON here and nowhere else.
//
//   live_run.cpp ──► ClientSpec ──► to_json ──► TMP/<run>.client-N.json ──► client_spec_from_json ──► client_main
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockbench {

// Topology "sentinel": where to ask for the master, and this client's own way to each
// server Sentinel may name.
struct SentinelPorts {
    std::vector<int> sentinels;
    std::map<std::string, int> address_map;   // "127.0.0.1:PORT" as Sentinel names it → the port to dial
};

struct ClientSpec {
    // Only start the external library's adapter, see that it says it is ready, and end it:
    // a preflight spec holds the run, the key, the ports, project_dir and adapter_stderr.
    bool preflight = false;
    // With preflight: hold two adapters to the protocol (adapter_check.h: what the lock file
    // says it offers, {"extend": [...], "fencing": bool}) and write what failed, one line
    // each, to `adapter_described`'s file as {"failures": [...], "ready": {...}}.
    std::optional<nlohmann::json> check;
    // This client's run as it stands alone (RunSpec::source: its lock, workload, timeouts and
    // faults; parse_standalone_run), never the whole scenario.
    nlohmann::json run;
    std::string lock_key;
    int client = 0;
    std::uint64_t seed = 0;               // the client's own (client_seed)
    std::vector<int> lock_ports;          // this client's path to each lock node (its proxy, or the node)
    int store_port = 0;
    std::string start_barrier;            // StartBarrier's prefix
    std::string control_socket;           // the nemesis's, for the points it armed
    std::vector<std::string> armed;
    std::string history;                  // where the client writes its history
    std::string project_dir;              // where an adapter's command runs
    std::string adapter_stderr;           // where the adapter's stderr goes (the run folder's adapter/)
    std::string adapter_described;        // where to write what its ready line said (a preflight's; client 0's when there is none)
    std::optional<SentinelPorts> discovery;
    // Added to the adapter's environment: what the service says its clients need
    // (LockService::client_env: a database server's user and password).
    std::map<std::string, std::string> adapter_env;
};

nlohmann::json to_json(const ClientSpec& spec);
// Throws nlohmann::json's exception naming the first missing field.
ClientSpec client_spec_from_json(const nlohmann::json& j);

}  // namespace lockbench
