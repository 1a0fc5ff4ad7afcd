#include "sim/engine/lock_file.h"

#include <algorithm>
#include <regex>

#include "sim/engine/case_file.h"
#include "sim/engine/scenario_fields.h"

namespace fs = std::filesystem;

namespace lockbench {

using namespace scenario_parse;

namespace {

using Json = nlohmann::json;

bool boolean(Fields& f, const std::string& key, bool fallback) {
    return f.value<bool>(key, fallback, [](const Json& x) { return x.is_boolean(); }, "true or false");
}

std::string one_of(Fields& f, const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed) {
    const std::string v = f.string(key, fallback);
    if (std::ranges::find(allowed, v) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
        f.fail(f.at(key), "expected one of " + list + ", got " + quoted_excerpt(v));
    }
    return v;
}

LockOffers parse_offers(const Json& j, const std::string& file) {
    Fields f(j, "offers", file);
    LockOffers o;
    o.fencing = boolean(f, "fencing", false);
    o.renews = boolean(f, "renews", false);
    if (const Json* extend = f.get("extend")) {
        if (!extend->is_array()) f.fail(f.at("extend"), "expected an array of \"add\" and \"replace\", got " + excerpt(*extend));
        for (const Json& m : *extend) {
            if (m != "add" && m != "replace")
                f.fail(f.at("extend"), "expected \"add\" or \"replace\", got " + excerpt(m));
            if (std::ranges::find(o.extend, m.get<std::string>()) != o.extend.end())
                f.fail(f.at("extend"), excerpt(m) + " twice");
            o.extend.push_back(m.get<std::string>());
        }
    }
    o.release = one_of(f, "release", o.release, {"token", "plain", "client-clock"});
    o.expiry = one_of(f, "expiry", o.expiry, {"server", "client"});
    o.checks_elapsed = boolean(f, "checks_elapsed", false);
    o.validity = boolean(f, "validity", false);
    o.replicated = boolean(f, "replicated", false);
    o.asks_first = boolean(f, "asks_first", false);
    f.finish();
    return o;
}

RecordedOutcome parse_recorded(const Json& v, const std::string& path, const std::string& file) {
    const auto bad = [&] {
        throw ScenarioError(file + ": " + path + ": expected one of " + verdict_word_list() +
                            ", or \"any: <why its outcome is up to the machine>\", got " + excerpt(v));
    };
    if (!v.is_string()) bad();
    const std::string text = v.get<std::string>();
    if (text.starts_with("any")) {
        const std::string reason = text.size() > 5 && text.substr(3, 2) == ": " ? text.substr(5) : "";
        if (reason.empty()) bad();
        return {std::nullopt, reason};
    }
    const std::optional<Verdict> verdict = parse_verdict(text);
    if (!verdict) bad();
    return {verdict, ""};
}

std::map<std::string, RecordedOutcome> parse_expected(const Json& j, const std::string& file) {
    Fields f(j, "expected", file, Fields::Keys::names);
    std::map<std::string, RecordedOutcome> out;
    for (const auto& [key, v] : j.items()) {
        f.get(key);
        check_name(f, f.at(key), key);
        out[key] = parse_recorded(v, f.at(key), file);
    }
    f.finish();
    return out;
}

// The algorithm's TTL parameter: the case sets it, so the file must not.
std::string ttl_param_of(const AlgorithmInfo& a) {
    for (const char* name : {"ttl_ms", "lease_ms"})
        if (std::ranges::any_of(a.params, [&](const ParamSpec& p) { return p.name == name; })) return name;
    return "";
}

void parse_params(Fields& f, LockFile& lock) {
    const Json* given = f.get("params");
    lock.params = given ? *given : Json::object();
    if (!lock.params.is_object()) f.fail(f.at("params"), "expected an object, got " + excerpt(lock.params));
    if (lock.params.contains(lock.ttl_param))
        f.fail(f.at("params") + "." + lock.ttl_param, "the case sets the TTL (and scales it to the lock's \"ttl_unit\"): "
                                                       "leave " + lock.ttl_param + " out");
    // Checked as a run would take them, with the TTL a case would add.
    Json with_ttl = lock.params;
    with_ttl[lock.ttl_param] = 1000;
    Params resolved;
    std::string error;
    const bool external = lock.algorithm == &external_algorithm();
    if (!resolve_params(lock.algorithm->params, with_ttl, resolved, error, external))
        f.fail(f.at("params") + error.substr(0, error.find(':')), error.substr(error.find(':') + 2));
}

void parse_command(Fields& f, LockFile& lock) {
    const Json* command = f.get("command");
    if (lock.algorithm != &external_algorithm()) {
        if (command) f.fail(f.at("command"), "only an \"external\" lock runs a command (an adapter)");
        return;
    }
    if (!command) f.fail(f.at("command"), "required with \"algorithm\": \"external\": the adapter's argv, e.g. "
                                          "[\"/usr/bin/python3\", \"adapter.py\"] (relative to this file's folder)");
    if (!command->is_array() || command->empty() ||
        !std::ranges::all_of(*command, [](const Json& a) { return a.is_string() && !a.get<std::string>().empty(); }))
        f.fail(f.at("command"), "expected a non-empty array of non-empty strings, got " + excerpt(*command));
    lock.command = command->get<std::vector<std::string>>();
    check_adapter_launch(f, lock.command, lock.params);
}

void parse_service_and_nodes(Fields& f, LockFile& lock) {
    const std::string name = one_of(f, "service", "redis", service_names());
    lock.service = *parse_service(name);
    const ServiceInfo& service = service_info(lock.service);
    const bool external = lock.algorithm == &external_algorithm();
    if (!service.own_algorithms && !external)
        f.fail(f.at("service"), "lockbench's own algorithms speak " + services_with(&ServiceInfo::own_algorithms, false) + "; a " +
                                name + " lock is an external adapter's");
    lock.nodes = static_cast<int>(f.integer("nodes", lock.algorithm->default_nodes, 1, kMaxNodes));
    if (const auto why = servers_refused(service, lock.nodes)) f.fail(f.at("nodes"), *why);
    if (f.get("pgbouncer")) {
        lock.pgbouncer = one_of(f, "pgbouncer", "", {"transaction", "session"});
        if (!service.pooler)
            f.fail(f.at("pgbouncer"), "PgBouncer pools a database's connections: it needs \"service\": " + services_with(&ServiceInfo::pooler));
    }
    if (f.get("server")) {
        const std::string program = f.string("server", "");
        if (!service.server_program)
            f.fail(f.at("server"), "only the servers of " + services_with(&ServiceInfo::server_program) + " run a program a lock names");
        if (program.empty() || has_unprintable(program))
            f.fail(f.at("server"), "expected the path of the servers' program (relative to this file's folder), got " + quoted_excerpt(program));
        lock.server = (lock.dir / program).lexically_normal();
    }
    if (service.needs_program && lock.server.empty())
        f.fail(f.at("service"), std::string("a ") + service.name + " lock names the program its servers run (\"server\", relative to this file's folder): lockbench has none of its own");
    const std::string topology = one_of(f, "topology", "plain", {"plain", "sentinel"});
    lock.needs_replica = topology == "sentinel";
    lock.sentinel = boolean(f, "sentinel", lock.needs_replica);
    if ((lock.sentinel || lock.needs_replica) && (!service.node_options || lock.nodes != 1))
        f.fail(f.at(f.get("sentinel") ? "sentinel" : "topology"),
               "Sentinel watches one Redis master: it needs \"service\": " + services_with(&ServiceInfo::node_options) + " and one node");
    if (lock.needs_replica && !lock.sentinel)
        f.fail(f.at("sentinel"), "a lock that runs on a master with a replica follows it through Sentinel");
}

void check_file_name(const LockFile& lock) {
    static const std::regex ok("[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}");
    if (!std::regex_match(lock.name, ok))
        throw ScenarioError(lock.path + ": a lock's name is its file's name, the row of the verdict table: "
                            "at most 200 letters, digits and . _ + = - (not starting with . or -), got " +
                            excerpt_text(lock.name));
}

}  // namespace

std::string RecordedOutcome::text() const {
    return verdict ? std::string(verdict_word(*verdict)) : "any: " + any_reason;
}

bool LockFile::fenced() const { return params.contains("fence") && params.at("fence") == true; }

LockFile parse_lock_file(const Json& j, const fs::path& file) {
    const std::string path = file.string();
    Fields f(j, "", path);
    LockFile lock;
    lock.path = path;
    lock.name = file.stem().string();
    check_file_name(lock);
    lock.dir = fs::absolute(file).parent_path();
    lock.source = j;
    lock.description = f.string("description", "");
    const std::string algorithm = f.required_string("algorithm");
    lock.algorithm = algorithm == "external" ? &external_algorithm() : find_algorithm(algorithm);
    if (!lock.algorithm) {
        std::string list;
        for (const auto& a : algorithms()) list += (list.empty() ? "" : ", ") + a.name;
        f.fail(f.at("algorithm"), "unknown algorithm " + quoted_excerpt(algorithm) + " (known: " + list + ", external)");
    }
    lock.ttl_param = ttl_param_of(*lock.algorithm);
    parse_params(f, lock);
    parse_command(f, lock);
    parse_service_and_nodes(f, lock);
    lock.check_lease_before_write = boolean(f, "check_lease_before_write", false);
    lock.token_checked = one_of(f, "resource_check", "fence", {"fence", "token"}) == "token";
    if (lock.token_checked && lock.fenced())
        f.fail(f.at("resource_check"), "the store checks one token: its fencing token (params.fence) or, "
                                       "for a lock that has none, its random one (\"token\"), not both");
    if (lock.token_checked && lock.algorithm->one_token_per_client)
        f.fail(f.at("resource_check"), "\"token\" cannot check " + lock.algorithm->name +
                                       ": its token is the client's, the same for every lease of one client");
    if (const Json* renew = f.get("renew")) {
        parse_renew(*renew, f.at("renew"), path);
        lock.renew = *renew;
    }
    lock.whole_seconds = one_of(f, "ttl_unit", "ms", {"ms", "s"}) == "s";
    lock.min_ttl_ms = f.integer("min_ttl_ms", lock.whole_seconds ? 1000 : 1, 1, kMaxDurationMs);
    if (const Json* offers = f.get("offers")) lock.offers = parse_offers(*offers, path);
    if (lock.algorithm != &external_algorithm() && lock.fenced() != lock.offers.fencing)
        f.fail(f.at("offers") + ".fencing", std::string("the algorithm hands out a fencing token exactly when its "
               "\"fence\" parameter is true; say ") + (lock.fenced() ? "true" : "false"));
    if (lock.renew && !lock.offers.renews)
        f.fail(f.at("offers") + ".renews", "a lock renewed by its \"renew\" policy renews on its own while its holder runs: "
                                         "say true");
    if (lock.fenced() && !lock.offers.fencing)
        f.fail(f.at("params") + ".fence", "the store can check a fencing token only where the lock hands one out "
                                          "(\"offers\": {\"fencing\": true})");
    const std::string joins = one_of(f, "joins", "all", {"all", "named", "none"});
    lock.joins = joins == "named" ? Joins::named : joins == "none" ? Joins::none : Joins::all;
    lock.reference = boolean(f, "reference", false);
    if (const Json* expected = f.get("expected")) lock.expected = parse_expected(*expected, path);
    f.finish();
    return lock;
}

LockFile load_lock_file(const fs::path& file) {
    return parse_lock_file(read_input_json(file, "lock file"), file);
}

std::vector<LockFile> load_lock_folder(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::ranges::sort(files, {}, [](const fs::path& p) { return p.stem().string(); });  // token-lua before token-lua+fence
    std::vector<LockFile> locks;
    for (const fs::path& f : files) locks.push_back(load_lock_file(f));
    return locks;
}

Json lock_facts(const LockFile& lock) {
    const LockOffers& o = lock.offers;
    return {{"lock", lock.name},
            {"algorithm", lock.algorithm->name},
            {"params", lock.params},
            {"service", service_name(lock.service)},
            {"nodes", lock.nodes},
            {"sentinel", lock.sentinel},
            {"pgbouncer", lock.pgbouncer},
            {"check_lease_before_write", lock.check_lease_before_write},
            {"resource_check", lock.token_checked ? "token" : "fence"},
            {"fence", lock.checked()},
            {"fencing", o.fencing},
            {"renews", o.renews},
            {"extend", o.extend},
            {"release", o.release},
            {"expiry", o.expiry},
            {"checks_elapsed", o.checks_elapsed},
            {"validity", o.validity || lock.algorithm != &external_algorithm()},
            {"replicated", o.replicated},
            {"asks_first", o.asks_first}};
}

const RecordedOutcome* recorded_outcome(const LockFile& lock, const std::string& case_name, const std::string& variant,
                                        const std::optional<std::string>& failure_class) {
    std::vector<std::string> keys;
    if (!variant.empty()) keys.push_back(variant_label(case_name, variant));
    keys.push_back(case_name);
    if (failure_class) keys.push_back(*failure_class);
    for (const std::string& k : keys)
        if (const auto it = lock.expected.find(k); it != lock.expected.end()) return &it->second;
    return nullptr;
}

}  // namespace lockbench
