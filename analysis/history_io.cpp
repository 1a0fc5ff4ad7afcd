#include "analysis/history_io.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace lockbench {

const char* op_name(OpKind k) {
    switch (k) {
        case OpKind::acquire: return "acquire";
        case OpKind::release: return "release";
        case OpKind::read: return "read";
        case OpKind::write: return "write";
    }
    return "?";
}

const char* event_type_name(EventType t) {
    switch (t) {
        case EventType::invoke: return "invoke";
        case EventType::ok: return "ok";
        case EventType::fail: return "fail";
        case EventType::info: return "info";
    }
    return "?";
}

const char* store_kind_name(StoreKind k) {
    switch (k) {
        case StoreKind::enter: return "enter";
        case StoreKind::write: return "write";
        case StoreKind::reject: return "reject";
        case StoreKind::exit: return "exit";
    }
    return "?";
}

int RunHistory::lease_index(const std::string& name, int client) {
    auto [it, added] = lease_ids.try_emplace(name, static_cast<int>(leases.size()));
    if (added) {
        leases.push_back(name);
        lease_client.push_back(client);
    }
    return it->second;
}

OpKind parse_op(const std::string& s) {
    for (OpKind k : {OpKind::acquire, OpKind::release, OpKind::read, OpKind::write})
        if (s == op_name(k)) return k;
    throw std::runtime_error("unknown op \"" + s + "\"");
}

EventType parse_event_type(const std::string& s) {
    for (EventType t : {EventType::invoke, EventType::ok, EventType::fail, EventType::info})
        if (s == event_type_name(t)) return t;
    throw std::runtime_error("unknown event type \"" + s + "\"");
}

namespace {

StoreKind parse_store_kind(const std::string& s) {
    for (StoreKind k : {StoreKind::enter, StoreKind::write, StoreKind::reject, StoreKind::exit})
        if (s == store_kind_name(k)) return k;
    throw std::runtime_error("unknown store record kind \"" + s + "\"");
}

std::optional<long long> opt_int(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    return it->get<long long>();
}

std::uint32_t node_mask(const nlohmann::json& j) {
    std::uint32_t mask = 0;
    if (auto it = j.find("nodes"); it != j.end())
        for (const auto& n : *it) {
            const int node = n.get<int>();
            if (node < 0 || node >= 32) throw std::runtime_error("node " + std::to_string(node) + " out of range 0..31");
            mask |= 1u << node;
        }
    return mask;
}

template <typename F>
void for_each_line(const std::filesystem::path& path, F&& f) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path.string() + ": cannot open");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        try {
            f(nlohmann::json::parse(line));
        } catch (const std::exception& e) {
            throw std::runtime_error(path.string() + ":" + std::to_string(n) + ": " + e.what());
        }
    }
}

}  // namespace

void parse_client_event(const nlohmann::json& j, RunHistory& h) {
    const std::string op = j.at("op").get<std::string>();
    // Fault points (for the timeline) and an adapter's failure (in the summary's
    // clients_failed) are not for the checker.
    if (op == "point" || op == "adapter") return;
    ClientEvent e;
    e.t_ns = j.at("t_ns").get<long long>();
    e.client = j.at("client").get<int>();
    e.op = parse_op(op);
    e.type = parse_event_type(j.at("type").get<std::string>());
    if (auto it = j.find("lease"); it != j.end()) e.lease = h.lease_index(it->get<std::string>(), e.client);
    e.depth = j.value("depth", 1);
    e.fence = opt_int(j, "fence");
    e.nodes = node_mask(j);
    h.clients = std::max(h.clients, e.client + 1);
    h.events.push_back(e);
}

void parse_store_entry(const nlohmann::json& j, RunHistory& h) {
    StoreEntry s;
    s.seq = j.at("seq").get<long long>();
    s.kind = parse_store_kind(j.at("kind").get<std::string>());
    s.client = j.at("client").get<int>();
    s.lease = h.lease_index(j.at("lease").get<std::string>(), s.client);
    s.fence = opt_int(j, "fence");
    s.read = j.value("read", 0LL);
    s.prev = j.value("prev", 0LL);
    s.t_us = j.contains("t_us") ? j.at("t_us").get<long long>()
                                : j.value("t_s", 0LL) * 1000000 + j.value("t_usec", 0LL);
    h.store.push_back(s);
}

RunHistory load_run_history(const std::filesystem::path& run_dir) {
    RunHistory h;
    const auto run_json = run_dir / "run.json";
    std::ifstream in(run_json);
    if (!in) throw std::runtime_error(run_json.string() + ": cannot open (not a lockbench run folder?)");
    const nlohmann::json run = nlohmann::json::parse(in, nullptr, false);
    if (run.is_discarded() || !run.contains("final_counter"))
        throw std::runtime_error(run_json.string() + ": not a lockbench run record");
    h.final_counter = run.at("final_counter").get<long long>();
    h.clients = run.value("clients", 0);

    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(run_dir / "history")) files.push_back(f.path());
    std::ranges::sort(files);
    for (const auto& f : files) for_each_line(f, [&](const nlohmann::json& j) { parse_client_event(j, h); });
    std::ranges::stable_sort(h.events, {}, &ClientEvent::t_ns);
    for_each_line(run_dir / "store.jsonl", [&](const nlohmann::json& j) { parse_store_entry(j, h); });
    std::ranges::stable_sort(h.store, {}, &StoreEntry::seq);
    return h;
}

}  // namespace lockbench
