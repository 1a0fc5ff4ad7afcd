// etcd members owned by lockbench; see etcd.h.
//
//   start_etcd ── free ports ── spawn etcd ×N ──┬─ all /health true, a leader ─▶ ready
//       ▲                                       ├─ one exited: "address already in use"
//       └────────── fresh ports, fresh data ────┘
//                                               └─ exited otherwise, or timed out ─▶ throw
#include "sim/live/etcd.h"

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "faults/listeners.h"
#include "process/process.h"
#include "sim/live/http_client.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Bounds, not expectations: three members come up in about 2 s on an idle machine.
constexpr auto start_timeout = 20s;
constexpr auto restart_timeout = 10s;
// A paused member accepts the connection and never answers: it must not hang a question.
constexpr auto probe_timeout = 200ms;
constexpr auto poll_interval = 20ms;
constexpr int start_attempts = 3;

// A member that could not bind a port found free a moment before: worth fresh ports.
struct PortTaken : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Any HTTP answer at all: a member answers /health (true or false) once it serves clients.
bool answers_health(int port) { return http_request(port, "GET", "/health", "", probe_timeout).has_value(); }

bool healthy(int port) {
    const auto r = http_request(port, "GET", "/health", "", probe_timeout);
    return r && r->status == 200 && r->body.find("\"health\":\"true\"") != std::string::npos;
}

struct MemberStatus {
    std::string member_id;  // uint64s, as the JSON gateway spells them: strings
    std::string leader_id;
    unsigned long long raft_term = 0;
};

std::optional<MemberStatus> member_status(int port) {
    const auto r = http_request(port, "POST", "/v3/maintenance/status", "{}", probe_timeout);
    if (!r || r->status != 200) return std::nullopt;
    const auto json = nlohmann::json::parse(r->body, nullptr, false);
    if (!json.is_object() || !json.contains("header") || !json.contains("leader")) return std::nullopt;
    const auto& header = json["header"];
    // Asked from the fault thread: an answer of another shape is no answer, never an exception.
    try {
        return MemberStatus{header.at("member_id").get<std::string>(), json["leader"].get<std::string>(),
                            std::stoull(header.at("raft_term").get<std::string>())};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Which of the members answering on `ports` leads: a member that was paused through an
// election may still think it leads until it hears the new term, so the highest term's claim
// is the true one. Unset entries are members not asked (killed or paused).
std::optional<int> leader_of(const std::vector<std::optional<int>>& ports) {
    std::optional<int> found;
    unsigned long long found_term = 0;
    for (std::size_t i = 0; i < ports.size(); ++i) {
        if (!ports[i]) continue;
        const auto status = member_status(*ports[i]);
        if (!status || status->member_id != status->leader_id) continue;
        if (!found || status->raft_term > found_term) found = static_cast<int>(i), found_term = status->raft_term;
    }
    return found;
}

// ---- Kept across repetitions: wiped, and proved wiped -----------------------------------------

// A JSON answer of the gateway, or none (no answer, not 200, not JSON).
std::optional<nlohmann::json> ask(int port, std::string_view path, const nlohmann::json& body) {
    const auto r = http_request(port, "POST", path, body.dump(), 2000ms);
    if (!r || r->status != 200) return std::nullopt;
    auto json = nlohmann::json::parse(r->body, nullptr, false);
    if (json.is_discarded() || !json.is_object()) return std::nullopt;
    return json;
}

// Every key: from "\0" to the end of the keyspace ("\0" as range_end), base64.
const nlohmann::json kEveryKey = {{"key", "AA=="}, {"range_end", "AA=="}};

// What a member says of itself that a run can leave behind: the keys and leases it holds, its
// watchers and watch streams (and the watchers' backlog), the revision of its users and roles
// (a user or a role added moves it), its alarms and the cluster's members. As new, right after
// the start, and again after a wipe: the two must be equal; a wipe that fails says what
// differs. The store's revision is not among them: it only grows (a wipe is a delete, and a
// delete is a revision); a lock compares its revisions with each other, never with a number.
struct MemberState {
    long long keys = -1, leases = -1;
    std::map<std::string, std::string> figures;  // from /metrics
    std::string alarms, members;
    bool operator==(const MemberState&) const = default;
};

constexpr const char* kFigures[] = {"etcd_debugging_mvcc_keys_total", "etcd_debugging_mvcc_watcher_total",
                                    "etcd_debugging_mvcc_watch_stream_total", "etcd_debugging_mvcc_slow_watcher_total",
                                    "etcd_debugging_mvcc_pending_events_total", "etcd_debugging_auth_revision"};

std::optional<MemberState> state_of(int port) {
    MemberState s;
    nlohmann::json count_every_key = kEveryKey;
    count_every_key["count_only"] = true;
    const auto count = ask(port, "/v3/kv/range", count_every_key);
    const auto leases = ask(port, "/v3/lease/leases", nlohmann::json::object());
    const auto alarms = ask(port, "/v3/maintenance/alarm", {{"action", "GET"}});
    const auto members = ask(port, "/v3/cluster/member/list", nlohmann::json::object());
    const auto metrics = http_request(port, "GET", "/metrics", "", 2000ms);
    if (!count || !leases || !alarms || !members || !metrics || metrics->status != 200) return std::nullopt;
    s.keys = std::stoll(count->value("count", std::string("0")));  // a zero is left out of the answer
    s.leases = leases->contains("leases") ? static_cast<long long>((*leases)["leases"].size()) : 0;
    s.alarms = alarms->value("alarms", nlohmann::json::array()).dump();
    std::vector<std::string> ids;
    for (const auto& m : members->value("members", nlohmann::json::array())) ids.push_back(m.value("ID", ""));
    std::sort(ids.begin(), ids.end());
    s.members = nlohmann::json(ids).dump();
    for (const char* name : kFigures) {
        const std::string line = std::string("\n") + name + " ";
        const auto at = metrics->body.find(line);
        if (at == std::string::npos) return std::nullopt;
        const auto from = at + line.size();
        s.figures[name] = metrics->body.substr(from, metrics->body.find('\n', from) - from);
    }
    return s;
}

// What differs: "keys 2 (new: 0), etcd_debugging_auth_revision 2 (new: 1)".
std::string differences(const MemberState& now, const MemberState& then) {
    std::string out;
    const auto add = [&](const std::string& name, const std::string& a, const std::string& b) {
        if (a != b) out += (out.empty() ? "" : ", ") + name + " " + a + " (new: " + b + ")";
    };
    add("keys", std::to_string(now.keys), std::to_string(then.keys));
    add("leases", std::to_string(now.leases), std::to_string(then.leases));
    add("alarms", now.alarms, then.alarms);
    add("members", now.members, then.members);
    for (const auto& [name, value] : then.figures) add(name, now.figures.contains(name) ? now.figures.at(name) : "?", value);
    return out;
}

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Tells this run's cluster from any other that might reach the same ports.
std::string cluster_token() {
    static std::atomic<int> counter{0};
    return "lockbench-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
           std::to_string(Clock::now().time_since_epoch().count());
}

class EtcdCluster;

class EtcdMember final : public LockServer {
public:
    EtcdMember(EtcdCluster& cluster, std::string name, fs::path dir, int client_port, SpawnOptions spawn)
        : cluster_(cluster), name_(std::move(name)), dir_(std::move(dir)), client_port_(client_port),
          spawn_(std::move(spawn)) {}

    const std::string& name() const override { return name_; }
    int port() const override { return client_port_; }
    pid_t pid() const override { return process_.pid(); }
    void kill() override {
        process_.signal(SIGKILL);
        killed_ = true;  // it may take a moment to die: it answers nothing meanwhile
    }
    void restart(bool keep_data) override;
    bool pause() override {
        paused_ = true;
        return process_.stop();  // in place once every Go thread has stopped
    }
    void resume() override {
        process_.signal(SIGCONT);
        paused_ = false;
    }
    fs::path log_path() const override { return dir_ / "etcd.log"; }

    void spawn() {
        process_ = ChildProcess::spawn(spawn_);
        paused_ = killed_ = false;
    }
    bool running() { return process_.running(); }
    bool answering() { return running() && !paused_ && !killed_; }
    // Whether this member, not another run's etcd that bound the port first, is what answers
    // there (ours then exits with "address already in use": throw_exited()).
    bool holds_its_port() { return listens_on(process_.pid(), client_port_); }
    // One line: what went wrong, and how the log ended (the log goes with the run's folder).
    std::runtime_error failure(const std::string& what) const {
        return std::runtime_error("etcd member " + name_ + " (client port " + std::to_string(client_port_) +
                                  ") " + what + "; its log ended: " + log_tail(log_path()));
    }
    void throw_exited(const std::string& when) const {
        if (read_all(log_path()).find("address already in use") != std::string::npos)
            throw PortTaken(failure("could not bind its port " + when).what());
        throw failure("exited " + when);
    }

private:
    EtcdCluster& cluster_;
    std::string name_;
    fs::path dir_;
    int client_port_;
    SpawnOptions spawn_;
    ChildProcess process_;
    bool paused_ = false;
    bool killed_ = false;
};

class EtcdCluster final : public LockService {
public:
    EtcdCluster(const ServiceConfig& config, const std::string& binary);
    void start();
    std::vector<LockServer*> servers() override {
        std::vector<LockServer*> out;
        for (auto& m : members_) out.push_back(m.get());
        return out;
    }
    std::optional<int> leader() override;
    std::optional<std::string> wipe() override;
    // Right after the start: what each member says as new.
    void record_as_new();
    // Whether the members up and not paused make a majority: without one a member that
    // (re)starts cannot serve clients at all, so waiting for its answer would be in vain.
    bool quorum_can_form() {
        std::size_t up = 0;
        for (auto& m : members_) up += m->answering() ? 1 : 0;
        return up > members_.size() / 2;
    }

private:
    bool ready();
    std::vector<std::unique_ptr<EtcdMember>> members_;
    std::vector<MemberState> as_new_;
};

SpawnOptions member_spawn(const std::string& binary, const std::string& name, const fs::path& dir, int client_port,
                          int peer_port, const std::string& initial_cluster, const std::string& token) {
    const auto url = [](int port) { return "http://127.0.0.1:" + std::to_string(port); };
    SpawnOptions opts;
    opts.argv = {binary, "--name", name, "--data-dir", (dir / "data").string(),
                 "--listen-client-urls", url(client_port), "--advertise-client-urls", url(client_port),
                 "--listen-peer-urls", url(peer_port), "--initial-advertise-peer-urls", url(peer_port),
                 "--initial-cluster", initial_cluster, "--initial-cluster-state", "new",
                 "--initial-cluster-token", token,
                 "--heartbeat-interval", std::to_string(etcd_heartbeat.count()),
                 "--election-timeout", std::to_string(etcd_election_timeout.count()),
                 "--logger", "zap", "--log-outputs", "stderr"};
    opts.stdout_path = opts.stderr_path = (dir / "etcd.log").string();
    return opts;
}

// Free ports, no two alike: the kernel may hand out a port just closed again.
std::vector<int> distinct_free_ports(int count) {
    std::vector<int> ports;
    while (static_cast<int>(ports.size()) < count)
        if (const int port = find_free_port(); std::find(ports.begin(), ports.end(), port) == ports.end())
            ports.push_back(port);
    return ports;
}

EtcdCluster::EtcdCluster(const ServiceConfig& config, const std::string& binary) {
    const std::vector<int> ports = distinct_free_ports(2 * config.size);
    const std::vector<int> client_ports(ports.begin(), ports.begin() + config.size);
    const std::vector<int> peer_ports(ports.begin() + config.size, ports.end());
    std::string initial_cluster;
    for (int i = 0; i < config.size; ++i) {
        initial_cluster += (i ? "," : "") + ("etcd" + std::to_string(i)) + "=http://127.0.0.1:" +
                           std::to_string(peer_ports[static_cast<std::size_t>(i)]);
    }
    const std::string token = cluster_token();
    for (int i = 0; i < config.size; ++i) {
        const std::string name = "etcd" + std::to_string(i);
        const fs::path dir = config.dir / name;
        fs::remove_all(dir / "data");  // an earlier attempt's member belongs to another cluster
        fs::create_directories(dir);
        SpawnOptions spawn = member_spawn(binary, name, dir, client_ports[i], peer_ports[i], initial_cluster, token);
        if (!config.env.empty()) spawn.extra_env = config.env[static_cast<std::size_t>(i)];
        members_.push_back(std::make_unique<EtcdMember>(*this, name, dir, client_ports[i], std::move(spawn)));
    }
}

void EtcdCluster::start() {
    for (auto& m : members_) m->spawn();
    const auto deadline = Clock::now() + start_timeout;
    while (!ready()) {
        for (auto& m : members_)
            if (!m->running()) m->throw_exited("during start-up");
        if (Clock::now() >= deadline) {
            for (auto& m : members_)
                if (!healthy(m->port())) throw m->failure("did not report healthy within 20 s");
            throw members_[0]->failure("and the others elected no leader within 20 s");
        }
        std::this_thread::sleep_for(poll_interval);
    }
}

bool EtcdCluster::ready() {
    for (auto& m : members_)
        if (!healthy(m->port()) || !m->holds_its_port()) return false;
    return leader().has_value();
}

std::optional<int> EtcdCluster::leader() {
    std::vector<std::optional<int>> ports;
    for (auto& m : members_) ports.push_back(m->answering() ? std::optional<int>(m->port()) : std::nullopt);
    return leader_of(ports);
}

void EtcdCluster::record_as_new() {
    as_new_.assign(members_.size(), {});
    if (const auto unsettled = first_unsettled(members_.size(), Clock::now() + start_timeout, poll_interval, [&](size_t i) {
            const auto state = state_of(members_[i]->port());
            return state && (as_new_[i] = *state, true);
        }))
        throw members_[*unsettled]->failure("did not say what it holds after its start");
}

// As new: every lease revoked (a killed client's would otherwise last its TTL), which deletes
// the keys on it; every other key deleted; the history compacted away, so that no later run
// can read or watch an earlier one's revisions; then every member answering as right after
// its start. The run's clients are gone by now, and their watches with them.
std::optional<std::string> EtcdCluster::wipe() {
    constexpr auto kSettled = 3s;
    if (as_new_.size() != members_.size()) return std::string("not started to be kept");
    const auto lead = leader();
    if (!lead) return std::string("no member leads");
    const int port = members_[static_cast<std::size_t>(*lead)]->port();
    const auto leases = ask(port, "/v3/lease/leases", nlohmann::json::object());
    if (!leases) return std::string("its leases could not be listed");
    for (const auto& lease : leases->value("leases", nlohmann::json::array())) {
        const auto id = lease.value("ID", "");
        // One that expired since the list answers "lease not found" (404): gone either way.
        const auto r = http_request(port, "POST", "/v3/lease/revoke", nlohmann::json{{"ID", id}}.dump(), 2000ms);
        if (!r || (r->status != 200 && r->body.find("lease not found") == std::string::npos))
            return "lease " + id + " could not be revoked" + (r ? ": " + r->body : std::string());
    }
    const auto deleted = ask(port, "/v3/kv/deleterange", kEveryKey);
    if (!deleted) return std::string("its keys could not be deleted");
    const auto revision = deleted->value("header", nlohmann::json::object()).value("revision", "");
    // A run that wrote nothing leaves the revision compacted already: nothing to compact.
    const auto compacted = http_request(port, "POST", "/v3/kv/compaction",
                                        nlohmann::json{{"revision", revision}, {"physical", true}}.dump(), 5000ms);
    if (!compacted || (compacted->status != 200 &&
                       compacted->body.find("required revision has been compacted") == std::string::npos))
        return "its history could not be compacted at revision " + revision + (compacted ? ": " + compacted->body : "");
    std::optional<MemberState> now;  // a follower applies what its leader did a moment later
    const auto unsettled = first_unsettled(members_.size(), Clock::now() + kSettled, 50ms, [&](std::size_t i) {
        return (now = state_of(members_[i]->port())) && *now == as_new_[i];
    });
    if (!unsettled) return std::nullopt;
    return members_[*unsettled]->name() + (now ? " says " + differences(*now, as_new_[*unsettled]) : " did not answer");
}

// An etcd member always restarts from its data directory: one that lost its data could not
// rejoin under its old member id (the cluster would need a member remove and add), so
// keep_data=false restarts it with its data too. Its data directory exists, so its
// --initial-cluster-state "new" is ignored and it rejoins as the member it was. It has come
// back once it answers /health, true or false; or, when the members up do not make a
// majority, once it listens (it serves no client until a quorum forms).
void EtcdMember::restart(bool /*keep_data*/) {
    process_.kill_and_reap();
    spawn();
    const auto deadline = Clock::now() + restart_timeout;
    for (;;) {
        if (!running()) throw_exited("during restart");
        if (answers_health(client_port_) && holds_its_port()) return;
        if (!cluster_.quorum_can_form() && holds_its_port()) return;
        if (Clock::now() >= deadline) throw failure("did not answer /health within 10 s of its restart");
        std::this_thread::sleep_for(poll_interval);
    }
}


}  // namespace

std::optional<int> etcd_leader(const std::vector<int>& ports) {
    return leader_of(std::vector<std::optional<int>>(ports.begin(), ports.end()));
}

std::string etcd_binary() {
    if (const char* configured = std::getenv("LOCKBENCH_ETCD"); configured && *configured) {
        if (!is_executable_file(configured))
            throw std::runtime_error(std::string("LOCKBENCH_ETCD=") + configured + ": no such executable");
        return configured;
    }
    if (auto found = find_on_path("etcd")) return *found;
    throw std::runtime_error("etcd not found on PATH: run scripts/setup (or apt-get install etcd-server)");
}

std::unique_ptr<LockService> start_etcd(const ServiceConfig& config) {
    if (config.peer_proxies)
        throw std::runtime_error("etcd: peer link faults are not supported: every member names the same peer "
                                 "URLs, so they cannot go through per-link proxies (pause or kill a member instead)");
    if (config.size < 1) throw std::runtime_error("etcd: size must be at least 1, not " + std::to_string(config.size));
    if (!config.env.empty() && static_cast<int>(config.env.size()) != config.size)
        throw std::runtime_error("etcd: env has " + std::to_string(config.env.size()) + " entries for " +
                                 std::to_string(config.size) + " members");
    const std::string binary = config.program.empty() ? etcd_binary() : config.program.string();
    if (!is_executable_file(binary))
        throw std::runtime_error("etcd: " + binary + ": no such executable (scripts/setup builds the lock files' servers)");
    for (int attempt = 1;; ++attempt) {
        auto cluster = std::make_unique<EtcdCluster>(config, binary);
        try {
            cluster->start();
            if (config.kept) cluster->record_as_new();
            return cluster;
        } catch (const PortTaken&) {
            if (attempt == start_attempts) throw;
        }
    }
}

}  // namespace lockbench
