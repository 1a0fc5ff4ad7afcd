#include "analysis/history_io.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "analysis/digest.h"
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

}  // namespace

std::ifstream open_results_file(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw std::runtime_error(path.string() + ": not a regular file (lockbench reads only files it wrote)");
    return std::ifstream(path);
}

namespace {

// Calls f(json, line number) for each non-empty line; anything f throws comes back naming
// the file and the line.
template <typename F>
void for_each_line(const std::filesystem::path& path, F&& f) {
    std::ifstream in = open_results_file(path);
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

namespace {

// The fields a client record carries that the checker reads as numbers.
bool numeric_client_field(std::string_view key) {
    return key == "depth" || key == "fence" || key == "validity_ms" || key == "t_ns" || key == "client";
}

}  // namespace

bool ClientEventBuilder::read_by_checker(std::string_view op) {
    // Fault points (for the timeline), an adapter's failure (in the summary's
    // clients_failed), renewals and a lock's "lost" announcements (for the timeline: the
    // store's log shows what a lost lease led to) are not for the checker.
    return !(op == "point" || op == "adapter" || op == "renew" || op == "lost");
}

bool ClientEventBuilder::begin(long long t_ns, int client, std::string_view op, std::string_view type) {
    if (!read_by_checker(op)) return false;
    event_ = ClientEvent{};
    event_.t_ns = t_ns;
    event_.client = client;
    event_.op = parse_op(std::string(op));
    event_.type = parse_event_type(std::string(type));
    return true;
}

void ClientEventBuilder::str(std::string_view key, std::string_view value) {
    if (key == "lease") event_.lease = h_.lease_index(std::string(value), event_.client);
    else if (key == "lock_says") {
        if (value != "held" && value != "not held") throw std::runtime_error("lock_says is \"held\" or \"not held\"");
        event_.lock_says_held = value == "held";
    }
    else if (numeric_client_field(key)) throw std::runtime_error(std::string(key) + " is a string, expected a number");
}

void ClientEventBuilder::num(std::string_view key, long long value) {
    if (key == "depth") event_.depth = static_cast<int>(value);
    else if (key == "fence") event_.fence = value;
    else if (key == "validity_ms") event_.validity_ms = static_cast<double>(value);
    else if (key == "lease") throw std::runtime_error("lease is a number, expected a string");
}

void ClientEventBuilder::real(std::string_view key, double value) {
    if (key == "validity_ms") event_.validity_ms = value;
    else if (key == "depth" || key == "fence") throw std::runtime_error(std::string(key) + " is not a whole number");
}

void ClientEventBuilder::ints(std::string_view key, const std::vector<std::optional<long long>>& values) {
    if (key == "key_ttl_ms") event_.key_ttl_ms = values;
}

void ClientEventBuilder::finish() {
    h_.clients = std::max(h_.clients, event_.client + 1);
    h_.events.push_back(std::move(event_));
}

void parse_client_event(const nlohmann::json& j, RunHistory& h) {
    const std::string op = j.at("op").get<std::string>();
    if (!ClientEventBuilder::read_by_checker(op)) return;  // before its other fields, which it may lack
    ClientEventBuilder b(h);
    b.begin(j.at("t_ns").get<long long>(), j.at("client").get<int>(), op, j.at("type").get<std::string>());
    for (const auto& [key, v] : j.items()) {
        if (key == "t_ns" || key == "client" || key == "op" || key == "type") continue;
        if (key == "nodes") b.nodes(node_mask(j));
        else if (key == "key_ttl_ms") {
            std::vector<std::optional<long long>> ttls;
            for (const auto& t : v) ttls.push_back(t.is_null() ? std::nullopt : std::optional(t.get<long long>()));
            b.ints(key, ttls);
        } else if (v.is_string()) b.str(key, v.get_ref<const std::string&>());
        else if (v.is_number_integer()) b.num(key, v.get<long long>());
        else if (v.is_number_float()) b.real(key, v.get<double>());
    }
    b.finish();
}

void StoreEntryBuilder::str(std::string_view key, std::string_view value) {
    if (key == "kind") {
        entry_.kind = parse_store_kind(std::string(value));
        kind_ = true;
    } else if (key == "lease") {
        lease_ = std::string(value);
    } else if (key == "seq" || key == "client" || key == "fence") {
        throw std::runtime_error(std::string(key) + " is a string, expected a number");
    }
}

void StoreEntryBuilder::num(std::string_view key, long long value) {
    if (key == "seq") seq_ = true, entry_.seq = value;
    else if (key == "client") client_ = true, entry_.client = static_cast<int>(value);
    else if (key == "fence") entry_.fence = value;
    else if (key == "max_fence") entry_.max_fence = value;
    else if (key == "read") entry_.read = value;
    else if (key == "prev") entry_.prev = value;
    else if (key == "t_us") t_us_ = value;
    else if (key == "t_s") t_s_ = value;
    else if (key == "t_usec") t_usec_ = value;
    else if (key == "kind" || key == "lease") throw std::runtime_error(std::string(key) + " is a number, expected a string");
}

void StoreEntryBuilder::finish() {
    for (const auto& [present, field] : {std::pair{seq_, "seq"}, {kind_, "kind"}, {client_, "client"},
                                         {lease_.has_value(), "lease"}})
        if (!present) throw std::runtime_error(std::string("no field ") + field);
    entry_.lease = h_.lease_index(*lease_, entry_.client);
    entry_.t_us = t_us_.value_or(t_s_ * 1000000 + t_usec_);
    h_.store.push_back(entry_);
}

void parse_store_entry(const nlohmann::json& j, RunHistory& h) {
    if (!j.is_object()) throw std::runtime_error("a store record is a JSON object");
    StoreEntryBuilder b(h);
    for (const auto& [key, v] : j.items()) {
        if (v.is_string()) b.str(key, v.get_ref<const std::string&>());
        else if (v.is_number_integer()) b.num(key, v.get<long long>());
        else if (v.is_number_float()) b.num(key, static_cast<long long>(v.get<double>()));
    }
    b.finish();
}

namespace {

// A cursor over one flat JSON object as encode_flat writes it (sim/virtual/model_node.cpp).
class FlatReader {
public:
    explicit FlatReader(std::string_view text) : s_(text) {}
    void expect(char c) {
        if (i_ >= s_.size() || s_[i_] != c) throw std::runtime_error(std::string("expected '") + c + "' at byte " + std::to_string(i_));
        ++i_;
    }
    bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
    std::string_view string(std::string& scratch) {
        expect('"');
        const std::size_t from = i_;
        while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\') ++i_;
        if (at('"')) return s_.substr(from, i_++ - from);
        scratch.assign(s_.substr(from, i_ - from));  // escapes: rare (a lease name with a quote)
        while (i_ < s_.size() && s_[i_] != '"') {
            if (s_[i_] != '\\') scratch += s_[i_++];
            else if (i_ + 1 < s_.size() && s_[i_ + 1] == 'u' && i_ + 6 <= s_.size())
                scratch += static_cast<char>(std::stoi(std::string(s_.substr(i_ + 2, 4)), nullptr, 16)), i_ += 6;
            else if (i_ + 1 < s_.size()) scratch += s_[i_ + 1], i_ += 2;
            else break;
        }
        expect('"');
        return scratch;
    }
    // A number (as a whole number), or nothing for true / false / null.
    std::optional<long long> number() {
        const std::size_t from = i_;
        while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}') ++i_;
        const std::string_view v = s_.substr(from, i_ - from);
        if (v == "true" || v == "false" || v == "null") return std::nullopt;
        long long whole = 0;  // the usual case, without a string
        if (const auto r = std::from_chars(v.data(), v.data() + v.size(), whole); r.ec == std::errc() && r.ptr == v.data() + v.size())
            return whole;
        const std::string text(v);
        std::size_t used = 0;
        const double d = std::stod(text, &used);
        if (used != text.size()) throw std::runtime_error("not a number: " + text);
        return static_cast<long long>(d);
    }

private:
    std::string_view s_;
    std::size_t i_ = 0;
};

}  // namespace

void parse_store_text(std::string_view line, RunHistory& h) {
    FlatReader r(line);
    StoreEntryBuilder b(h);
    std::string key_scratch, value_scratch;
    r.expect('{');
    while (!r.at('}')) {
        if (r.at(',')) r.expect(',');
        const std::string_view key = r.string(key_scratch);
        r.expect(':');
        if (r.at('"')) b.str(key, r.string(value_scratch));
        else if (const auto n = r.number()) b.num(key, *n);
    }
    b.finish();
}

namespace {

// run.json's final counter and client count, or one line naming the file and the field.
void read_run_record(const std::filesystem::path& run_json, RunHistory& h) {
    std::ifstream in = open_results_file(run_json);
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
    const nlohmann::json params = run.value("params", nlohmann::json::object());
    for (const char* key : {"ttl_ms", "lease_ms"})
        if (params.is_object() && params.contains(key) && params.at(key).is_number_integer() && params.at(key).get<long long>() > 0) {
            h.ttl_ms = params.at(key).get<long long>();
            break;
        }
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

std::string run_files_digest(const std::filesystem::path& run_dir) {
    std::vector<std::filesystem::path> files{run_dir / "run.json", run_dir / "store.jsonl", run_dir / "sentinel.jsonl"};
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(run_dir / "history", ec)) files.push_back(f.path());
    std::sort(files.begin() + 3, files.end());
    Fnv1a digest;
    const auto add = [&](std::string_view bytes) { digest.add(bytes); };
    add(std::filesystem::is_directory(run_dir / "history") ? "history/" : "no history/");
    std::string bytes;
    for (const auto& f : files) {
        add(f.lexically_relative(run_dir).string());
        if (!std::filesystem::exists(f)) {
            add("-");
            continue;
        }
        std::ifstream in = open_results_file(f);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        add(std::to_string(bytes.size()));
        add(bytes);
    }
    return digest.hex();
}

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
    if (const auto sentinel = run_dir / "sentinel.jsonl"; std::filesystem::exists(sentinel))
        for_each_line(sentinel, [&](const nlohmann::json& j, int) {
            if (h.failover_ns || j.value("event", "") != "+switch-master") return;
            if (!j.contains("t_ns") || !j.at("t_ns").is_number_integer()) throw std::runtime_error("t_ns: expected a whole number");
            h.failover_ns = j.at("t_ns").get<long long>();
        });
    return h;
}

}  // namespace lockbench
