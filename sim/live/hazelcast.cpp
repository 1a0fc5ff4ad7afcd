// Hazelcast members that lockbench starts, owns and stops: the "hazelcast" service, for the CP
// subsystem's FencedLock. Three (or five) members on 127.0.0.1, every one a CP member: the
// locks live in the CP group "default", replicated by Raft, each held by a CP session that
// lasts the run's TTL past its client's last heartbeat.
//
//   start_hazelcast ── ports ── hazelcast.xml per member ── spawn every member ──┐
//                                                                              ▼
//        up ◄── a member says it leads the CP group METADATA ◄── each listens on its port
//
//   <dir>/hz<i>/hazelcast.xml   the member's configuration (below)
//   <dir>/hz<i>/hazelcast.log   what it prints: java.util.logging at INFO
//
// The members run the program the lock file names ("server": adapters/hazelcast/member, which
// runs Maven Central's Hazelcast 5.4.0 with the configuration file it is given). lockbench asks
// them nothing over the network: who leads is what each member's log last said of itself, as
// Hazelcast prints a CP group's members and their roles at each change of term. A killed member
// restarts as a new member (the CP subsystem keeps nothing on disk in Community): it joins the
// cluster but not the CP groups, which go on with the others, a majority of them.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "faults/listeners.h"
#include "process/process.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"  // ports_below_ephemeral, log_tail
#include "sim/live/server_home.h"  // read_from, PortTaken

namespace lockbench {

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A CP group's view in a member's log: the newest term it printed, and whether it led then.
struct RaftClaim {
    long long term = -1;
    bool leads = false;
};

// What `log` (a member's, since its start) last said of CP group `group` ("METADATA", "default").
RaftClaim last_raft_claim(const std::string& log, const std::string& group) {
    RaftClaim claim;
    const std::string head = "CP Group Members {groupId: " + group + "(";
    for (size_t at = log.find(head); at != std::string::npos; at = log.find(head, at + 1)) {
        const size_t end = log.find("\n]", at);
        if (end == std::string::npos) break;  // a block still being written
        const std::string block = log.substr(at, end - at);
        const size_t term = block.find("term:");
        if (term == std::string::npos) continue;
        claim.term = std::atoll(block.c_str() + term + 5);
        claim.leads = block.find(" - LEADER this") != std::string::npos;
    }
    return claim;
}

// Bounds, not expectations: three members started at once by hand, with Hazelcast's default
// Raft timings, had a METADATA leader 13 s after the first one's first log line on an idle
// 2-core machine (a JVM each, 4 CPU-s apiece).
constexpr auto start_timeout = 90s;
constexpr auto poll_interval = 50ms;
constexpr int port_retries = 3;

// Every listener on 127.0.0.1, joined by the member list (no multicast, no discovery), nothing
// phoned home. Raft's leader heartbeat every 500 ms, a leader taken for gone after 4 missed (its
// defaults, 5 s and 5, would leave a CP group leaderless for 25 s after its leader dies); a CP
// session ends `session_ttl_s` after its client's last heartbeat (each second).
std::string member_xml(int self, const std::vector<int>& ports, long long session_ttl_s) {
    std::ostringstream x;
    x << "<hazelcast xmlns=\"http://www.hazelcast.com/schema/config\">\n"
         "  <cluster-name>lockbench</cluster-name>\n"
         "  <network>\n"
         "    <port auto-increment=\"false\">" << ports[static_cast<size_t>(self)] << "</port>\n"
         "    <interfaces enabled=\"true\"><interface>127.0.0.1</interface></interfaces>\n"
         "    <join>\n"
         "      <auto-detection enabled=\"false\"/>\n"
         "      <multicast enabled=\"false\"/>\n"
         "      <tcp-ip enabled=\"true\"><member-list>";
    for (int p : ports) x << "<member>127.0.0.1:" << p << "</member>";
    x << "</member-list></tcp-ip>\n"
         "    </join>\n"
         "  </network>\n"
         "  <cp-subsystem>\n"
         "    <cp-member-count>" << ports.size() << "</cp-member-count>\n"
         "    <session-time-to-live-seconds>" << session_ttl_s << "</session-time-to-live-seconds>\n"
         "    <session-heartbeat-interval-seconds>1</session-heartbeat-interval-seconds>\n"
         "    <raft-algorithm>\n"
         "      <leader-election-timeout-in-millis>1000</leader-election-timeout-in-millis>\n"
         "      <leader-heartbeat-period-in-millis>500</leader-heartbeat-period-in-millis>\n"
         "      <max-missed-leader-heartbeat-count>4</max-missed-leader-heartbeat-count>\n"
         "    </raft-algorithm>\n"
         "  </cp-subsystem>\n"
         "  <properties>\n"
         "    <property name=\"hazelcast.socket.bind.any\">false</property>\n"
         "    <property name=\"hazelcast.phone.home.enabled\">false</property>\n"
         "    <property name=\"hazelcast.logging.type\">jdk</property>\n"
         "  </properties>\n"
         "</hazelcast>\n";
    return x.str();
}

class HazelcastMember final : public LockServer {
public:
    HazelcastMember(int index, fs::path dir, int port, std::vector<std::string> env, fs::path program)
        : name_("hz" + std::to_string(index)), dir_(std::move(dir)), port_(port), env_(std::move(env)), program_(std::move(program)) {}
    ~HazelcastMember() override { process_.kill_and_reap(); }

    const std::string& name() const override { return name_; }
    int port() const override { return port_; }
    pid_t pid() const override {
        std::lock_guard lock(mutex_);
        return process_.pid();
    }
    fs::path log_path() const override { return dir_ / "hazelcast.log"; }

    void kill() override {
        std::lock_guard lock(mutex_);
        process_.signal(SIGKILL);
        killed_ = true;  // it may take a moment to die: it says nothing meanwhile
    }
    bool pause() override {
        std::lock_guard lock(mutex_);
        paused_ = true;
        return process_.stop();
    }
    void resume() override {
        std::lock_guard lock(mutex_);
        process_.signal(SIGCONT);
        paused_ = false;
    }
    // Its CP state was in its memory (keep_data changes nothing): it comes back a new member.
    void restart(bool /*keep_data*/) override {
        {
            std::lock_guard lock(mutex_);
            process_.kill_and_reap();
        }
        restart_on_its_port(2s, [&] {
            launch();
            wait_until_listening(Clock::now() + start_timeout);
        });
    }

    void launch() {
        std::lock_guard lock(mutex_);
        log_offset_ = fs::exists(log_path()) ? fs::file_size(log_path()) : 0;
        SpawnOptions opts;
        opts.argv = {program_.string(), (dir_ / "hazelcast.xml").string()};
        opts.stdout_path = opts.stderr_path = log_path().string();
        opts.extra_env = env_;
        process_ = ChildProcess::spawn(opts);
        paused_ = killed_ = false;
    }

    void wait_until_listening(Clock::time_point deadline) {
        for (;;) {
            const pid_t p = pid();
            if (!running()) {
                if (since_start().find("Address already in use") != std::string::npos) throw PortTaken(failure("could not bind its port").what());
                throw failure("exited during start-up");
            }
            if (listens_on(p, port_)) return;
            if (Clock::now() >= deadline) throw failure("did not listen within 90 s");
            std::this_thread::sleep_for(poll_interval);
        }
    }

    // What it last said of `group`, while it runs and is not paused.
    std::optional<RaftClaim> claim(const std::string& group) {
        {
            std::lock_guard lock(mutex_);
            if (paused_ || killed_ || !process_.running()) return std::nullopt;
        }
        return last_raft_claim(since_start(), group);
    }

    bool running() {
        std::lock_guard lock(mutex_);
        return process_.running();
    }

    std::runtime_error failure(const std::string& what) const {
        return std::runtime_error("hazelcast member " + name_ + " on port " + std::to_string(port_) + " " + what +
                                  "; its log ended: " + log_tail(log_path(), 3));
    }

private:
    std::string since_start() const {
        std::uintmax_t offset = 0;
        {
            std::lock_guard lock(mutex_);
            offset = log_offset_;
        }
        return read_from(log_path(), offset);
    }

    std::string name_;
    fs::path dir_;
    int port_;
    std::vector<std::string> env_;
    fs::path program_;
    mutable std::mutex mutex_;  // the nemesis's fault thread and the run's thread both reach it
    ChildProcess process_;
    std::uintmax_t log_offset_ = 0;  // where its latest start's log begins
    bool paused_ = false;
    bool killed_ = false;
};

class HazelcastService final : public LockService {
public:
    std::vector<LockServer*> servers() override {
        std::vector<LockServer*> out;
        for (auto& m : members_) out.push_back(m.get());
        return out;
    }
    // The member that last said it leads the CP group of the locks, "default" (created by the
    // first lock a client asks for), at the newest term any member printed: a leader cut off
    // from the others says so until it hears of a newer term.
    std::optional<int> leader() override { return leader_of("default"); }

    std::optional<int> leader_of(const std::string& group) {
        std::optional<int> leader;
        long long newest = -1;
        for (size_t i = 0; i < members_.size(); ++i) {
            const auto c = members_[i]->claim(group);
            if (!c || c->term < newest) continue;
            if (c->term > newest) leader.reset();
            newest = c->term;
            if (c->leads) leader = static_cast<int>(i);
        }
        return leader;
    }

    std::vector<std::unique_ptr<HazelcastMember>> members_;
};

std::unique_ptr<LockService> start_once(const ServiceConfig& config) {
    const std::vector<int> ports = ports_below_ephemeral(config.size);
    const long long session_ttl_s = config.lease_ms / 1000;
    auto service = std::make_unique<HazelcastService>();
    for (int i = 0; i < config.size; ++i) {
        const fs::path dir = config.dir / ("hz" + std::to_string(i));
        fs::remove_all(dir);  // a try before this one's
        fs::create_directories(dir);
        std::ofstream xml(dir / "hazelcast.xml");
        if (!(xml << member_xml(i, ports, session_ttl_s)).flush()) throw std::runtime_error("hazelcast: cannot write " + (dir / "hazelcast.xml").string());
        service->members_.push_back(std::make_unique<HazelcastMember>(
            i, dir, ports[static_cast<size_t>(i)], config.env.empty() ? std::vector<std::string>{} : config.env[static_cast<size_t>(i)],
            config.program));
    }
    for (auto& m : service->members_) m->launch();  // all at once: their JVMs' start is most of the wait
    const auto deadline = Clock::now() + start_timeout;
    for (auto& m : service->members_) m->wait_until_listening(deadline);
    while (!service->leader_of("METADATA")) {
        for (auto& m : service->members_)
            if (!m->running()) throw m->failure("exited during start-up");
        if (Clock::now() >= deadline) throw service->members_.front()->failure("and the others elected no CP leader within 90 s");
        std::this_thread::sleep_for(poll_interval);
    }
    return service;
}

}  // namespace

std::unique_ptr<LockService> start_hazelcast(const ServiceConfig& config) {
    if (config.size < 3)
        throw std::runtime_error("hazelcast: its CP subsystem needs at least three members, not " + std::to_string(config.size));
    if (config.peer_proxies) throw std::runtime_error("hazelcast: its members' links to each other are not proxied");
    if (!config.env.empty() && static_cast<int>(config.env.size()) != config.size)
        throw std::runtime_error("hazelcast: env has " + std::to_string(config.env.size()) + " entries for " + std::to_string(config.size) + " members");
    if (config.lease_ms < 2000 || config.lease_ms % 1000 != 0)
        throw std::runtime_error("hazelcast: a CP session lasts whole seconds, at least 2 (above its 1 s heartbeat): the run's ttl_ms is " +
                                 std::to_string(config.lease_ms) + " (a lock file's \"ttl_unit\": \"s\", \"min_ttl_ms\": 2000)");
    if (config.program.empty() || !is_executable_file(config.program.string()))
        throw std::runtime_error("hazelcast: the members' program " + (config.program.empty() ? std::string("is not named") : config.program.string() + " is not an executable file") +
                                 " (a lock file's \"server\": ../adapters/hazelcast/member, built by scripts/setup)");
    for (int attempt = 1;; ++attempt) {
        try {
            return start_once(config);
        } catch (const PortTaken& e) {
            if (attempt > port_retries) throw std::runtime_error(std::string(e.what()) + " (a port taken, " + std::to_string(attempt) + " tries)");
        }
    }
}

}  // namespace lockbench
