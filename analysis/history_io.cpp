#include "analysis/history_io.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "analysis/record_check.h"

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

// Calls f(json, line number) for each non-empty line; anything f throws comes back naming
// the file and the line.
template <typename F>
void for_each_line(const std::filesystem::path& path, F&& f) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path.string() + ": cannot open");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        try {
            f(nlohmann::json::parse(line), n);
        } catch (const std::exception& e) {
            throw std::runtime_error(path.string() + ":" + std::to_string(n) + ": " + e.what());
        }
    }
}

}  // namespace

void parse_client_event(const nlohmann::json& j, RunHistory& h) {
    const std::string op = j.at("op").get<std::string>();
    // Fault points (for the timeline), an adapter's failure (in the summary's
    // clients_failed), renewals and a lock's "lost" announcements (for the timeline: the
    // store's log shows what a lost lease led to) are not for the checker.
    if (op == "point" || op == "adapter" || op == "renew" || op == "lost") return;
    ClientEvent e;
    e.t_ns = j.at("t_ns").get<long long>();
    e.client = j.at("client").get<int>();
    e.op = parse_op(op);
    e.type = parse_event_type(j.at("type").get<std::string>());
    if (auto it = j.find("lease"); it != j.end()) e.lease = h.lease_index(it->get<std::string>(), e.client);
    e.depth = j.value("depth", 1);
    e.fence = opt_int(j, "fence");
    e.nodes = node_mask(j);
    if (auto it = j.find("validity_ms"); it != j.end() && it->is_number()) e.validity_ms = it->get<double>();
    if (auto it = j.find("key_ttl_ms"); it != j.end())
        for (const auto& t : *it) e.key_ttl_ms.push_back(t.is_null() ? std::nullopt : std::optional(t.get<long long>()));
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
    s.max_fence = opt_int(j, "max_fence");
    s.read = j.value("read", 0LL);
    s.prev = j.value("prev", 0LL);
    s.t_us = j.contains("t_us") ? j.at("t_us").get<long long>()
                                : j.value("t_s", 0LL) * 1000000 + j.value("t_usec", 0LL);
    h.store.push_back(s);
}

namespace {

// run.json's final counter and client count, or one line naming the file and the field.
void read_run_record(const std::filesystem::path& run_json, RunHistory& h) {
    std::ifstream in(run_json);
    if (!in) throw std::runtime_error(run_json.string() + ": cannot open (not a lockbench run folder?)");
    const nlohmann::json run = nlohmann::json::parse(in, nullptr, false);
    if (run.is_discarded() || !run.is_object() || !run.contains("final_counter") || !run.contains("clients"))
        throw std::runtime_error(run_json.string() + ": not a lockbench run record");
    for (const auto& [field, max] : {std::pair<const char*, long long>{"final_counter", 1LL << 62}, {"clients", 100000}}) {
        const nlohmann::json& v = run.at(field);
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > max)
            throw std::runtime_error(run_json.string() + ": " + field + " is " + v.dump().substr(0, 40) +
                                     ", expected a whole number from 0 to " + std::to_string(max));
    }
    h.final_counter = run.at("final_counter").get<long long>();
    h.clients = run.at("clients").get<int>();
}

// The client a history file belongs to: history/client-N.jsonl, N below run.json's clients.
int history_client(const std::filesystem::path& file, int clients) {
    const std::string name = file.filename().string();
    const std::string prefix = "client-", suffix = ".jsonl";
    const bool shaped = name.size() > prefix.size() + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix);
    const std::string digits = shaped ? name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()) : "";
    if (digits.empty() || digits.size() > 6 || !std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; }))
        throw std::runtime_error(file.string() + ": not a client history (expected history/client-N.jsonl)");
    const int client = std::stoi(digits);
    if (client >= clients)
        throw std::runtime_error(file.string() + ": client " + digits + ", but run.json says " +
                                 std::to_string(clients) + " clients");
    return client;
}

// A client with no file is no damage by itself (one killed before it opened its history):
// if it did anything in the store, the store's log names it.
std::vector<std::filesystem::path> history_files(const std::filesystem::path& run_dir, int clients) {
    const auto dir = run_dir / "history";
    if (!std::filesystem::is_directory(dir)) throw std::runtime_error(dir.string() + ": missing");
    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(dir)) files.push_back(f.path());
    std::ranges::sort(files);
    for (const auto& f : files) history_client(f, clients);
    return files;
}

}  // namespace

RunHistory load_run_history(const std::filesystem::path& run_dir) {
    RunHistory h;
    const auto run_json = run_dir / "run.json";
    read_run_record(run_json, h);
    RecordCheck records(h, run_dir);
    const auto fail_on = [](const std::optional<std::string>& wrong) {
        if (wrong) throw std::runtime_error(*wrong);
    };
    for (const auto& f : history_files(run_dir, h.clients)) {
        records.begin_history(history_client(f, h.clients));
        for_each_line(f, [&](const nlohmann::json& j, int line) {
            const size_t before = h.events.size();
            parse_client_event(j, h);
            if (h.events.size() > before) fail_on(records.history_event(h.events.back(), {f.string(), line}));
        });
    }
    std::ranges::stable_sort(h.events, {}, &ClientEvent::t_ns);
    const auto store = run_dir / "store.jsonl";
    for_each_line(store, [&](const nlohmann::json& j, int line) {
        parse_store_entry(j, h);
        fail_on(records.store_entry(h.store.back(), {store.string(), line}));
    });
    if (const auto wrong = records.finish(h.final_counter, run_json.string())) throw std::runtime_error(*wrong);
    return h;
}

}  // namespace lockbench
