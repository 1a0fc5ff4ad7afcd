#include "sim/engine/run_setup.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/engine/store.h"
#include "sim/engine/workload.h"

namespace lockbench {

std::uint64_t client_seed(std::uint64_t run_seed, int client) {
    return derive_seed(run_seed, 1000 + static_cast<std::uint64_t>(client));
}

std::unique_ptr<Lock> make_client_lock(const RunSpec& run, const std::string& lock_key, int client) {
    return run.algorithm->make(run.params, {lock_key, client, std::chrono::milliseconds(run.timeouts.command_ms)});
}

WorkerSpec worker_spec(const RunSpec& run, int client, std::uint64_t seed, Instant start) {
    WorkerSpec w{client, seed, run.workload, std::chrono::milliseconds(run.timeouts.store_ms), start,
                 run.check_lease_before_write, run.renew};
    w.resource_check = run.resource_check;
    w.reports_entered = std::ranges::any_of(run.faults, &FaultSpec::keeps_after_end);
    return w;
}

Command store_log_command() { return {"LRANGE", StoreKeys{}.log, "0", "-1"}; }
Command store_counter_command() { return {"GET", StoreKeys{}.counter}; }
// The holder, for a fault aimed at it: the client inside its section now, by the store's own
// log, whose last record is an enter while a section is open (a write's record comes with its
// exit, in one script); none while none is.
Command store_holder_command() { return {"LRANGE", StoreKeys{}.log, "-1", "-1"}; }

std::optional<int> holder_from(const Value& reply) {
    if (reply.type != Value::Type::array || reply.elements.size() != 1) return std::nullopt;
    const nlohmann::json last = nlohmann::json::parse(reply.elements[0].str, nullptr, false);
    if (!last.is_object() || last.value("kind", "") != "enter" || !last.contains("client") ||
        !last.at("client").is_number_integer())
        return std::nullopt;
    return last.at("client").get<int>();
}

long long write_store_log(const std::filesystem::path& run_dir, const Value& log, const Value& counter) {
    std::ofstream out(run_dir / "store.jsonl");
    for (const Value& e : log.elements) out << e.str << '\n';
    return counter.is_nil() ? 0 : std::stoll(counter.str);
}

RunRecord run_record(const Scenario& s, const RunSpec& run, std::uint64_t seed, const RunOutcome& outcome) {
    RunRecord r;
    r.name = run.name;
    r.algorithm = run.algorithm->name;
    r.params = run.params.json();
    r.nodes = run.nodes;
    r.clients = run.workload.clients;
    r.seed = seed;
    r.scenario = s.name;
    r.failure_class = s.failure_class;
    r.table_row = run.table_row;
    r.lock = run.lock;
    r.variant = run.variant;
    r.renews_in_background = run.algorithm->background_task && run.algorithm->background_task(r.params);
    r.lock_key = s.lock_key;
    r.expect = run.expect;
    r.workload = run.workload_source;
    r.command_timeout_ms = run.timeouts.command_ms;
    r.connect_timeout_ms = run.timeouts.connect_ms;
    r.command = run.command;
    if (outcome.adapter.is_object()) r.adapter = outcome.adapter;
    if (run.renew) r.renew = run.renew->to_json();
    r.resource_check = resource_check_name(run.resource_check);
    r.clients_failed = outcome.clients_failed;
    r.sim_events = outcome.sim_events;
    r.faults = outcome.faults;
    r.faults_injected = outcome.faults_injected;
    r.unmet = outcome.unmet;
    r.final_counter = outcome.final_counter;
    return r;
}

}  // namespace lockbench
