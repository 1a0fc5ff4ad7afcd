// ZooKeeper servers owned by lockbench; see zookeeper.h and lock_service.h.
//
//   start_zookeeper ── ports ── zoo.cfg + myid per server ── spawn every JVM ──┐
//                                                                            ▼
//        ready ◄── (ensemble) some server's srvr says "Mode: leader" ◄── each answers ruok
#include "sim/live/zookeeper.h"

#include "sim/live/http_client.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

// The multi-threaded C client (libzookeeper_mt) declares its synchronous calls under THREADED.
#define THREADED
#include <zookeeper/zookeeper.h>

#include "faults/link_proxy.h"
#include "faults/listeners.h"
#include "process/process.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Three JVMs starting at once on two busy cores took up to ~20 s in trials; an idle machine
// needs about 2 s for one.
constexpr auto start_timeout = 60s;
constexpr auto poll_interval = 50ms;
constexpr auto ruok_timeout = 500ms;
// A paused server accepts a connection (the kernel does) and never answers: leader() must not
// wait on it for long.
constexpr auto srvr_timeout = 200ms;

// ZooKeeper's jar and the logging binding it needs: without slf4j-log4j12 SLF4J falls back to
// its no-op logger and the server's log stays empty. /etc/zookeeper/conf holds the
// log4j.properties whose CONSOLE appender writes to stdout (our log file). The classpath with
// /usr/share/zookeeper/*.jar fails (maven's MessageUtils missing), hence these four.
constexpr const char* zookeeper_classpath =
    "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:"
    "/usr/share/java/log4j-1.2.jar";

// The rest of the first line of a four-letter word's answer that begins with `key`.
std::optional<std::string> line_after(const std::string& text, const std::string& key) {
    for (size_t at = 0; at < text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        if (text.compare(at, key.size(), key) == 0) return text.substr(at + key.size(), end - at - key.size());
        at = end + 1;
    }
    return std::nullopt;
}

struct ServerPorts {
    int client = 0;
    int quorum = 0;
    int election = 0;
};

// ---- Configuration ----------------------------------------------------------------------------

// Ports for every server, all distinct, and below the ephemeral range: a server binds its
// quorum port only once it leads, and a restarted server binds all three again.
std::vector<ServerPorts> pick_ports(int servers) {
    const std::vector<int> free = ports_below_ephemeral(3 * servers);
    std::vector<ServerPorts> ports;
    for (size_t i = 0; i < free.size(); i += 3) ports.push_back({free[i], free[i + 1], free[i + 2]});
    return ports;
}

// How server `self` reaches server `peer`: its real ports, or its hub's proxies to them.
std::pair<int, int> peer_address(int self, int peer, const std::vector<ServerPorts>& ports, ProxyHub* hub) {
    const ServerPorts& p = ports[static_cast<size_t>(peer)];
    if (!hub || self == peer) return {p.quorum, p.election};
    const std::string link = "s" + std::to_string(self) + "-s" + std::to_string(peer) + "-";
    return {hub->add(link + "quorum", {"127.0.0.1", p.quorum}).port(),
            hub->add(link + "election", {"127.0.0.1", p.election}).port()};
}

// Timings: tickTime 100 ms, so a follower that hears nothing from its leader for syncLimit
// ticks (1 s) gives up on it, and a restarted server has initLimit ticks (2 s) to sync.
// Sessions: ZooKeeper grants between min and max, 200 ms .. 20 s (its defaults, 2 and 20
// ticks, would refuse anything under 200 ms and over 2 s).
std::string zoo_cfg(int self, const fs::path& dir, const std::vector<ServerPorts>& ports, ProxyHub* hub) {
    std::string cfg =
        "tickTime=100\ninitLimit=20\nsyncLimit=10\n"
        "minSessionTimeout=200\nmaxSessionTimeout=20000\n"
        "dataDir=" + (dir / "data").string() + "\n" +
        "clientPort=" + std::to_string(ports[static_cast<size_t>(self)].client) + "\n" +
        // Every listener on loopback: the client port, the quorum and election ports (their
        // own server line's address, not 0.0.0.0), no admin server (Jetty, 8080 otherwise).
        "clientPortAddress=127.0.0.1\nquorumListenOnAllIPs=false\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=*\n"
        // Each server's static view of its peers is its own (through its own proxies): no
        // dynamic reconfiguration may spread one server's view to the others.
        "reconfigEnabled=false\n"
        // lockbench kills processes, never the machine: what a killed server wrote is in the
        // page cache and survives it, so fsync would only slow three JVMs on two cores down.
        "forceSync=no\npreAllocSize=1024\n";
    if (ports.size() == 1) return cfg;
    for (int peer = 0; peer < static_cast<int>(ports.size()); ++peer) {
        const auto [quorum, election] = peer_address(self, peer, ports, hub);
        cfg += "server." + std::to_string(peer + 1) + "=127.0.0.1:" + std::to_string(quorum) + ":" +
               std::to_string(election) + "\n";
    }
    return cfg;
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}


// ---- One server -------------------------------------------------------------------------------

class ZooKeeperServer final : public LockServer {
public:
    ZooKeeperServer(int index, fs::path dir, int client_port, std::vector<std::string> env, std::string java)
        : name_("zk" + std::to_string(index)), dir_(std::move(dir)), client_port_(client_port),
          env_(std::move(env)), java_(std::move(java)) {}

    const std::string& name() const override { return name_; }
    int port() const override { return client_port_; }
    pid_t pid() const override {
        std::lock_guard lock(mutex_);
        return process_.pid();
    }
    fs::path log_path() const override { return dir_ / "zookeeper.log"; }

    void kill() override {
        std::lock_guard lock(mutex_);
        process_.signal(SIGKILL);
        paused_ = false;
        killed_ = true;  // it may take a moment to die: it answers nothing meanwhile
    }
    bool pause() override {
        std::lock_guard lock(mutex_);
        paused_ = true;
        return process_.stop();  // in place once every JVM thread has stopped
    }
    void resume() override {
        std::lock_guard lock(mutex_);
        process_.signal(SIGCONT);
        paused_ = false;
    }

    // keep_data is not meaningful for ZooKeeper: its data folder is the server's transaction
    // log, and a voter that lost it would rejoin having forgotten what it acknowledged (a
    // fault of the operator's, not of a crash, and one ZooKeeper does not claim to survive).
    // A killed server restarts from its log, so the data is kept either way.
    void restart(bool /*keep_data*/) override {
        {
            std::lock_guard lock(mutex_);
            process_.kill_and_reap();
            paused_ = false;
        }
        launch();
        wait_until_answers(Clock::now() + start_timeout);
    }

    void launch() {
        std::lock_guard lock(mutex_);
        SpawnOptions opts;
        // -XX:-UsePerfData: no /tmp/hsperfdata_*. -XX:TieredStopAtLevel=1: the quick compiler
        // only; a server that lives seconds never repays C2's compiling (30 % less CPU, and
        // answering ruok 0.1 s sooner, measured on a standalone server).
        opts.argv = {java_, "-Xmx128m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-XX:TieredStopAtLevel=1",
                     "-Dzookeeper.log.dir=" + dir_.string(), "-Dzookeeper.root.logger=INFO,CONSOLE", "-cp", zookeeper_classpath,
                     "org.apache.zookeeper.server.quorum.QuorumPeerMain", (dir_ / "zoo.cfg").string()};
        opts.stdout_path = opts.stderr_path = log_path().string();
        opts.extra_env = env_;
        process_ = ChildProcess::spawn(opts);
        paused_ = killed_ = false;
    }

    // Returns once it answers ruok; throws, quoting its log, if it exits or the deadline passes.
    // The answer counts only while this JVM holds the port: another run's server that bound it
    // first answers too, until ours exits with "Address already in use" (then lost_a_port()).
    void wait_until_answers(Clock::time_point deadline) {
        for (;;) {
            if (!running()) throw failure("exited during start-up");
            if (four_letter_word(client_port_, "ruok", ruok_timeout) == "imok" && listens_on(pid(), client_port_))
                return;
            if (Clock::now() >= deadline) throw failure("did not answer ruok within 60 s");
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // Its client port while it runs and is not paused: whom leader() may ask.
    std::optional<int> askable_port() {
        std::lock_guard lock(mutex_);
        if (paused_ || killed_ || !process_.running()) return std::nullopt;
        return client_port_;
    }

    std::runtime_error failure(const std::string& what) const {
        return std::runtime_error("zookeeper server " + name_ + " on port " + std::to_string(client_port_) +
                                  " " + what + "; its log ended: " + log_tail(log_path(), 3));
    }

    // Whether it exited because another program bound one of its ports between pick_ports()
    // and its start (another test's or run's server, on this machine).
    bool lost_a_port() const {
        std::ifstream log(log_path());
        const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        return text.find("Address already in use") != std::string::npos;
    }

private:
    bool running() {
        std::lock_guard lock(mutex_);
        return process_.running();
    }

    std::string name_;
    fs::path dir_;
    int client_port_;
    std::vector<std::string> env_;
    std::string java_;
    mutable std::mutex mutex_;  // the nemesis's fault thread and the run's thread both reach it
    ChildProcess process_;
    bool paused_ = false;
    bool killed_ = false;
};

// ---- The service ------------------------------------------------------------------------------

// The epoch of a srvr answer's "Zxid: 0x..." (its high 32 bits): a new leader's epoch is
// higher than that of the one it replaced.
long long zxid_epoch(const std::string& srvr) {
    const auto zxid = srvr_field(srvr, "Zxid");
    return zxid ? static_cast<long long>(std::strtoull(zxid->c_str(), nullptr, 16) >> 32) : -1;
}

// A leader cut off from its followers still says "leader" until it notices (syncLimit),
// while the others may have elected a new one already: the newest epoch wins. Servers with no
// port are not asked (paused or down).
std::optional<int> leader_of(const std::vector<std::optional<int>>& ports) {
    std::optional<int> leader;
    long long leader_epoch = -1;
    for (size_t i = 0; i < ports.size(); ++i) {
        if (!ports[i]) continue;
        const auto srvr = four_letter_word(*ports[i], "srvr", srvr_timeout);
        if (!srvr) continue;
        const auto mode = srvr_field(*srvr, "Mode");
        if (mode != "leader" && mode != "standalone") continue;
        if (const long long epoch = zxid_epoch(*srvr); epoch > leader_epoch) {
            leader = static_cast<int>(i);
            leader_epoch = epoch;
        }
    }
    return leader;
}

// ---- Kept across repetitions: wiped, and proved wiped -----------------------------------------

// What a server says of itself that a run can leave behind: its znodes, ephemeral znodes,
// watches and mode; the sessions are the leader's count, the ensemble's. As new, right after
// the start, and again after a wipe: the two must be equal.
struct ServerState {
    long long znodes = -1, ephemerals = -1, watches = -1;
    std::string mode;
    bool operator==(const ServerState&) const = default;
};

// A figure of a `mntr` answer: "name<TAB>value" lines.
std::optional<long long> mntr_value(const std::string& mntr, const std::string& name) {
    const auto value = line_after(mntr, name + "\t");
    return value ? std::optional<long long>(std::strtoll(value->c_str(), nullptr, 10)) : std::nullopt;
}

std::optional<ServerState> state_of(int port) {
    const auto mntr = four_letter_word(port, "mntr", ruok_timeout);
    const auto srvr = four_letter_word(port, "srvr", ruok_timeout);
    if (!mntr || !srvr) return std::nullopt;
    const auto znodes = mntr_value(*mntr, "zk_znode_count"), ephemerals = mntr_value(*mntr, "zk_ephemerals_count"),
               watches = mntr_value(*mntr, "zk_watch_count");
    const auto mode = srvr_field(*srvr, "Mode");
    if (!znodes || !ephemerals || !watches || !mode) return std::nullopt;
    return ServerState{*znodes, *ephemerals, *watches, *mode};
}

std::string describe(const ServerState& s) {
    return std::to_string(s.znodes) + " znodes, " + std::to_string(s.ephemerals) + " ephemeral, " +
           std::to_string(s.watches) + " watches, " + s.mode;
}

// The sessions the ensemble holds, as its leader counts them; none if it cannot be asked.
std::optional<long long> global_sessions(int leader_port) {
    const auto mntr = four_letter_word(leader_port, "mntr", ruok_timeout);
    return mntr ? mntr_value(*mntr, "zk_global_sessions") : std::nullopt;
}

// ZooKeeper's C client (Debian's libzookeeper-mt, the server's own version), for the one thing
// the four-letter words cannot do: delete what a run created. Its own log, one stream for the
// whole process, is not kept: what fails comes back as an error code, which the wipe reports.
class WipeSession {
public:
    explicit WipeSession(int port) {
        static FILE* const quiet = [] {
            FILE* f = std::fopen("/dev/null", "w");
            zoo_set_log_stream(f);
            zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
            return f;
        }();
        (void)quiet;
        const std::string host = "127.0.0.1:" + std::to_string(port);
        zh_ = zookeeper_init(host.c_str(), nullptr, 5000, nullptr, nullptr, 0);
        const auto deadline = Clock::now() + 5s;
        while (zh_ && zoo_state(zh_) != ZOO_CONNECTED_STATE && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    }
    ~WipeSession() {
        if (zh_) zookeeper_close(zh_);
    }
    bool connected() const { return zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE; }

    // What a run may have changed of the root itself, which no delete undoes: its data's
    // version and length, its ACL's version. "" if it cannot be read.
    std::string root() {
        Stat stat{};
        if (zoo_exists(zh_, "/", 0, &stat) != ZOK) return "";
        return "version " + std::to_string(stat.version) + ", " + std::to_string(stat.dataLength) + " bytes, ACL version " +
               std::to_string(stat.aversion);
    }

    // Deletes `path`'s children, theirs first, and then `path` unless it is the root; the
    // first znode it could not delete, with ZooKeeper's reason.
    std::optional<std::string> delete_below(const std::string& path, bool and_itself) {
        String_vector children{};
        if (const int rc = zoo_get_children(zh_, path.c_str(), 0, &children); rc != ZOK && rc != ZNONODE)
            return path + ": " + zerror(rc);
        std::optional<std::string> failed;
        for (int i = 0; i < children.count && !failed; ++i) {
            const std::string child = (path == "/" ? "" : path) + "/" + children.data[i];
            if (child == "/zookeeper") continue;  // ZooKeeper's own (config, quota), as new
            failed = delete_below(child, true);
        }
        deallocate_String_vector(&children);
        if (failed || !and_itself) return failed;
        if (const int rc = zoo_delete(zh_, path.c_str(), -1); rc != ZOK && rc != ZNONODE) return path + ": " + zerror(rc);
        return std::nullopt;
    }

private:
    zhandle_t* zh_ = nullptr;
};

class ZooKeeperService final : public LockService {
public:
    std::vector<LockServer*> servers() override {
        std::vector<LockServer*> out;
        for (auto& s : servers_) out.push_back(s.get());
        return out;
    }

    std::optional<int> leader() override {
        std::vector<std::optional<int>> ports;
        for (auto& s : servers_) ports.push_back(s->askable_port());
        return leader_of(ports);
    }

    // As new: every server answering as right after its start (its znodes, ephemeral znodes,
    // watches and mode), after what the run's clients left is deleted and every session they
    // held has ended (a killed client's ends when its timeout runs out, at most 20 s: past
    // kSessionsGone it is not waited for).
    std::optional<std::string> wipe() override {
        constexpr auto kSessionsGone = 10s, kSettled = 3s;
        if (as_new_.size() != servers_.size()) return std::string("not started to be kept");
        const auto lead = leader();
        if (!lead) return std::string("no server leads");
        const int port = servers_[static_cast<size_t>(*lead)]->port();
        const auto sessions_below = [&](long long n, Clock::duration bound) {
            const auto deadline = Clock::now() + bound;
            for (;;) {
                if (const auto s = global_sessions(port); s && *s <= n) return true;
                if (Clock::now() >= deadline) return false;
                std::this_thread::sleep_for(50ms);
            }
        };
        if (!sessions_below(0, kSessionsGone))
            return "sessions still open " + std::to_string(std::chrono::seconds(kSessionsGone).count()) + " s after the run";
        {
            WipeSession session(port);
            if (!session.connected()) return std::string("the C client could not connect");
            if (const auto failed = session.delete_below("/", false)) return "could not delete " + *failed;
            if (const std::string root = session.root(); root != root_as_new_)
                return "/ says " + root + " where new it said " + root_as_new_;
        }
        if (!sessions_below(0, kSettled)) return std::string("the wipe's own session did not end");
        std::optional<ServerState> now;
        const auto unsettled = first_unsettled(servers_.size(), Clock::now() + kSettled, 50ms, [&](size_t i) {
            return (now = state_of(servers_[i]->port())) && *now == as_new_[i];
        });
        if (!unsettled) return std::nullopt;
        return servers_[*unsettled]->name() + " says " + (now ? describe(*now) : "nothing") + " where new it said " +
               describe(as_new_[*unsettled]);
    }

    // Right after the start: what each server says as new, once every one serves (a follower
    // still syncing with its leader answers mntr with no figures).
    void record_as_new(Clock::time_point deadline) {
        as_new_.assign(servers_.size(), {});
        if (const auto unsettled = first_unsettled(servers_.size(), deadline, poll_interval, [&](size_t i) {
                const auto state = state_of(servers_[i]->port());
                return state && (as_new_[i] = *state, true);
            }))
            throw servers_[*unsettled]->failure("did not answer mntr and srvr after its start");
        WipeSession session(servers_.front()->port());
        if (!session.connected() || (root_as_new_ = session.root()).empty())
            throw servers_.front()->failure("could not be read by ZooKeeper's C client after its start");
    }

    std::vector<std::unique_ptr<ZooKeeperServer>> servers_;
    std::vector<ServerState> as_new_;
    std::string root_as_new_;
};

void check_config(const ServiceConfig& config) {
    if (config.size < 1) throw std::runtime_error("zookeeper: size must be at least 1");
    if (!config.env.empty() && static_cast<int>(config.env.size()) != config.size)
        throw std::runtime_error("zookeeper: env has " + std::to_string(config.env.size()) +
                                 " entries for " + std::to_string(config.size) + " servers");
}

}  // namespace

// ---- Free functions ---------------------------------------------------------------------------

std::optional<int> zookeeper_leader(const std::vector<int>& ports) {
    return leader_of(std::vector<std::optional<int>>(ports.begin(), ports.end()));
}

// The server answers and closes the connection, as an HTTP/1.0 server does.
std::optional<std::string> four_letter_word(int port, const std::string& word, std::chrono::milliseconds timeout) {
    return loopback_exchange(port, word, timeout);
}

std::optional<std::string> srvr_field(const std::string& srvr, const std::string& name) {
    return line_after(srvr, name + ": ");
}

std::string zookeeper_java() {
    std::string java;
    if (const char* configured = std::getenv("LOCKBENCH_JAVA"); configured && *configured) java = configured;
    else if (auto found = find_on_path("java")) java = *found;
    if (java.empty() || !is_executable_file(java))
        throw std::runtime_error("java not found (LOCKBENCH_JAVA or PATH): run scripts/setup (or apt-get install "
                                 "default-jre-headless zookeeper)");
    if (!fs::exists("/usr/share/java/zookeeper.jar"))
        throw std::runtime_error("/usr/share/java/zookeeper.jar not found: run scripts/setup (or apt-get install "
                                 "zookeeper)");
    return java;
}

namespace {

// A port picked free was bound by someone else before the server did: start again on others.
struct PortTaken : std::runtime_error {
    using std::runtime_error::runtime_error;
};
constexpr int port_retries = 3;

std::unique_ptr<LockService> start_zookeeper_once(const ServiceConfig& config, const std::string& java) {
    const std::vector<ServerPorts> ports = pick_ports(config.size);
    auto service = std::make_unique<ZooKeeperService>();
    for (int i = 0; i < config.size; ++i) {
        const fs::path dir = config.dir / ("zk" + std::to_string(i));
        fs::remove_all(dir);  // a try before this one's
        fs::create_directories(dir / "data");
        write_file(dir / "zoo.cfg", zoo_cfg(i, dir, ports, config.peer_proxies));
        write_file(dir / "data" / "myid", std::to_string(i + 1) + "\n");
        auto env = config.env.empty() ? std::vector<std::string>{} : config.env[static_cast<size_t>(i)];
        service->servers_.push_back(
            std::make_unique<ZooKeeperServer>(i, dir, ports[static_cast<size_t>(i)].client, std::move(env), java));
    }
    // All JVMs start at once: their start-up, not the election, is most of the wait.
    for (auto& server : service->servers_) server->launch();
    const auto deadline = Clock::now() + start_timeout;
    for (auto& server : service->servers_) {
        try {
            server->wait_until_answers(deadline);
        } catch (const std::runtime_error& e) {
            if (server->lost_a_port()) throw PortTaken(e.what());
            throw;
        }
    }
    while (!service->leader()) {
        if (Clock::now() >= deadline)
            throw service->servers_.front()->failure("and its peers elected no leader within 60 s");
        std::this_thread::sleep_for(poll_interval);
    }
    if (config.kept) service->record_as_new(deadline);
    return service;
}

}  // namespace

std::unique_ptr<LockService> start_zookeeper(const ServiceConfig& config) {
    check_config(config);
    const std::string java = zookeeper_java();
    for (int attempt = 1;; ++attempt) {
        try {
            return start_zookeeper_once(config, java);
        } catch (const PortTaken& e) {
            if (attempt > port_retries) throw std::runtime_error(std::string(e.what()) + " (a port taken, " +
                                                                 std::to_string(attempt) + " tries)");
        }
    }
}

}  // namespace lockbench
