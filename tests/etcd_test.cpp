// Live tests for sim/live/etcd.h (real etcd members), sim/live/http_client.h, and the etcd lock
// adapter (adapters/etcd-lock/adapter.py) end to end. Waits are bounded polls for an outcome;
// nothing asserts how long anything took.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "faults/link_proxy.h"
#include "faults/listeners.h"
#include "process/process.h"
#include "sim/live/etcd.h"
#include "sim/live/http_client.h"
#include "sim/live/lock_service.h"
#include "sim/live/redis_node.h"
#include "sim/live/server_pool.h"
#include "process/stopped.h"
#include "adapter_process.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using testing_util::AdapterProcess;

// Elections and restarts on a loaded machine: the bound only keeps a broken build from hanging.
bool eventually(const std::function<bool()>& condition) {
    const auto deadline = Clock::now() + 20s;
    while (!condition()) {
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

bool healthy(LockServer* s) {
    const auto r = http_request(s->port(), "GET", "/health", "", 500ms);
    return r && r->body.find("\"health\":\"true\"") != std::string::npos;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

class EtcdTest : public ::testing::Test {
protected:
    ~EtcdTest() override { fs::remove_all(dir_); }
    std::unique_ptr<LockService> start(int size) {
        ServiceConfig config;
        config.size = size;
        config.dir = dir_;
        return start_service(Service::etcd, config);
    }
    // Started to be kept across repetitions (sim/live/server_pool.h): its state as new recorded.
    std::unique_ptr<LockService> start_kept(int size, const std::string& sub = "") {
        ServiceConfig config;
        config.size = size;
        config.dir = dir_ / sub;
        config.kept = true;
        return start_service(Service::etcd, config);
    }
    // A member that answers healthy and is not `other`, once one leads.
    static std::optional<int> new_leader(LockService& service, int other) {
        std::optional<int> seen;
        const bool found = eventually([&] {
            seen = service.leader();
            return seen && *seen != other;
        });
        return found ? seen : std::nullopt;
    }
    fs::path dir_ = make_run_temp_dir();
};

// ---- The HTTP client ------------------------------------------------------------------------

struct Listener {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int port = 0;
    Listener() {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        listen(fd, 4);
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        port = ntohs(addr.sin_port);
    }
    ~Listener() { close(fd); }
};

TEST(HttpClient, SendsTheRequestAndReadsStatusAndBody) {
    Listener server;
    std::string seen;
    std::thread answer([&] {
        const int conn = accept(server.fd, nullptr, nullptr);
        char buffer[4096];
        while (seen.find("{\"x\":1}") == std::string::npos) {
            const ssize_t n = recv(conn, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            seen.append(buffer, static_cast<std::size_t>(n));
        }
        const std::string reply = "HTTP/1.0 201 Created\r\nX-A: b\r\n\r\n{\"ok\":true}";
        send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);
        close(conn);
    });
    const auto r = http_request(server.port, "POST", "/v3/x", "{\"x\":1}", 5s);
    answer.join();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201);
    EXPECT_EQ(r->body, "{\"ok\":true}");
    EXPECT_TRUE(seen.starts_with("POST /v3/x HTTP/1.0\r\n")) << seen;
    EXPECT_NE(seen.find("Content-Length: 7\r\n"), std::string::npos) << seen;
}

TEST(HttpClient, NoAnswerFromASilentServerOrAClosedPort) {
    Listener silent;  // accepts (the kernel's backlog) and never answers, as a paused server
    EXPECT_FALSE(http_request(silent.port, "GET", "/health", "", 100ms));
    const int closed = find_free_port();
    EXPECT_FALSE(http_request(closed, "GET", "/health", "", 100ms));
}

// ---- Members --------------------------------------------------------------------------------

TEST_F(EtcdTest, OneMemberLeadsAndListensOnLoopbackOnly) {
    auto service = start(1);
    auto servers = service->servers();
    ASSERT_EQ(servers.size(), 1u);
    EXPECT_EQ(servers[0]->name(), "etcd0");
    EXPECT_EQ(service->leader(), 0);
    EXPECT_TRUE(healthy(servers[0]));
    const auto listening = tcp_listeners(servers[0]->pid());
    EXPECT_EQ(listening.size(), 2u) << "a client and a peer listener, and no metrics one";
    for (const auto& l : listening) EXPECT_TRUE(l.text().starts_with("127.0.0.1:")) << l.text();
    EXPECT_TRUE(listens_on(servers[0]->pid(), servers[0]->port()));
}

TEST_F(EtcdTest, ThreeMembersElectOneLeaderAndLeaveNothingBehind) {
    auto service = start(3);
    const auto leader = service->leader();
    ASSERT_TRUE(leader);
    std::vector<pid_t> pids;
    for (auto* s : service->servers()) {
        EXPECT_TRUE(healthy(s)) << s->name();
        pids.push_back(s->pid());
        for (const auto& l : tcp_listeners(s->pid())) EXPECT_TRUE(l.text().starts_with("127.0.0.1:")) << s->name() << " " << l.text();
    }
    service->servers()[static_cast<std::size_t>((*leader + 1) % 3)]->pause();  // a stopped one too
    service.reset();
    for (pid_t pid : pids) EXPECT_FALSE(alive(pid)) << "etcd " << pid << " outlived its service";
}

TEST_F(EtcdTest, AKilledFollowerAndAKilledLeaderComeBack) {
    auto service = start(3);
    auto servers = service->servers();
    const int leader = service->leader().value();
    LockServer* follower = servers[static_cast<std::size_t>((leader + 1) % 3)];
    follower->kill();
    follower->restart(true);
    EXPECT_TRUE(eventually([&] { return healthy(follower); }));
    servers[static_cast<std::size_t>(leader)]->kill();
    EXPECT_TRUE(new_leader(*service, leader)) << "no new leader after the leader was killed";
    servers[static_cast<std::size_t>(leader)]->restart(true);
    EXPECT_TRUE(eventually([&] { return healthy(servers[static_cast<std::size_t>(leader)]); }));
}

TEST_F(EtcdTest, APausedLeaderIsReplacedAndRejoinsOnResume) {
    auto service = start(3);
    auto servers = service->servers();
    const int leader = service->leader().value();
    servers[static_cast<std::size_t>(leader)]->pause();
    EXPECT_TRUE(new_leader(*service, leader)) << "no new leader while the leader was paused";
    servers[static_cast<std::size_t>(leader)]->resume();
    EXPECT_TRUE(eventually([&] { return healthy(servers[static_cast<std::size_t>(leader)]); }));
    EXPECT_TRUE(service->leader());
}

// Restarting a member while the others are down: it cannot serve until a quorum forms, so
// restart() returns once it listens instead of waiting for an answer that cannot come.
TEST_F(EtcdTest, ARestartWithoutAQuorumReturnsAndTheMemberServesOnceOneForms) {
    auto service = start(3);
    auto servers = service->servers();
    for (auto* s : servers) s->kill();
    servers[0]->restart(true);
    EXPECT_FALSE(healthy(servers[0]));
    servers[1]->restart(true);
    EXPECT_TRUE(eventually([&] { return healthy(servers[0]) && healthy(servers[1]); }));
}

TEST_F(EtcdTest, PeerProxiesAreRefusedInOneLine) {
    ProxyHub hub(1);
    ServiceConfig config;
    config.size = 3;
    config.dir = dir_;
    config.peer_proxies = &hub;
    try {
        start_service(Service::etcd, config);
        FAIL() << "peer proxies should be refused";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("peer link faults are not supported"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

// ---- Kept across repetitions: wiped, and proved wiped ------------------------------------------

// One JSON request to the gateway, asserted to answer.
json post(LockServer* s, const std::string& path, const json& body) {
    const auto r = http_request(s->port(), "POST", path, body.dump(), 2000ms);
    EXPECT_TRUE(r && r->status == 200) << path << ": " << (r ? r->body : "no answer");
    return r ? json::parse(r->body, nullptr, false) : json();
}

std::string base64(const std::string& text) {
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < text.size(); i += 3) {
        const std::string chunk = text.substr(i, 3);
        unsigned v = 0;
        for (std::size_t j = 0; j < 3; ++j) v = v << 8 | (j < chunk.size() ? static_cast<unsigned char>(chunk[j]) : 0);
        for (std::size_t j = 0; j < 4; ++j) out += j <= chunk.size() ? digits[(v >> (18 - 6 * j)) & 63] : '=';
    }
    return out;
}

// What a test sees of each member, asked on its own rather than through wipe()'s proof: every
// key (base64), the lease count, the open watchers and the auth revision.
std::vector<std::string> as_seen(LockService& service) {
    std::vector<std::string> seen;
    for (LockServer* s : service.servers()) {
        const json keys = post(s, "/v3/kv/range", {{"key", "AA=="}, {"range_end", "AA=="}, {"keys_only", true}});
        const json leases = post(s, "/v3/lease/leases", json::object());
        std::string line = "keys";
        for (const auto& kv : keys.value("kvs", json::array())) line += " " + kv.value("key", "");
        line += "; leases " + std::to_string(leases.value("leases", json::array()).size());
        const auto metrics = http_request(s->port(), "GET", "/metrics", "", 2000ms);
        for (const std::string name : {"etcd_debugging_mvcc_watcher_total ", "etcd_debugging_auth_revision "}) {
            const auto at = metrics ? metrics->body.find("\n" + name) : std::string::npos;
            line += "; " + (at == std::string::npos ? name + "?" : metrics->body.substr(at + 1, metrics->body.find('\n', at + 1) - at - 1));
        }
        seen.push_back(line);
    }
    return seen;
}

// A watch of every key held open on a raw connection, as a client's would be.
struct OpenWatch {
    explicit OpenWatch(int port) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        const std::string body = json{{"create_request", {{"key", "AA=="}, {"range_end", "AA=="}}}}.dump();
        const std::string request = "POST /v3/watch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body;
        EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    }
    ~OpenWatch() { close(fd); }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
};

// A run leaves keys, a key on a lease that would outlive it by a minute (a killed client's),
// and history: the wipe revokes and deletes them, compacts the history away, and every member
// then answers as it did right after the start.
TEST_F(EtcdTest, AKeptClusterIsWipedBackToItsStateAsNew) {
    auto service = start_kept(3);
    auto servers = service->servers();
    const auto as_new = as_seen(*service);
    ASSERT_EQ(as_new.size(), 3u);
    EXPECT_EQ(as_new[0].substr(0, 17), "keys; leases 0; e") << as_new[0];
    const std::string lease = post(servers[0], "/v3/lease/grant", {{"TTL", 60}}).value("ID", "");
    post(servers[1], "/v3/kv/put", {{"key", base64("lock/lease-1")}, {"value", base64("c1.2")}, {"lease", lease}});
    const json put = post(servers[2], "/v3/kv/put", {{"key", base64("left")}, {"value", base64("by the run")}});
    const std::string revision = put["header"].value("revision", "");
    {
        OpenWatch watch(servers[0]->port());
        EXPECT_TRUE(eventually([&] { return as_seen(*service)[0].find("watcher_total 1") != std::string::npos; }));
    }  // the client is gone, and its watch with it
    const auto left = as_seen(*service);
    EXPECT_NE(left, as_new);
    EXPECT_NE(left[2].find(base64("lock/lease-1")), std::string::npos) << left[2];
    const auto refused = service->wipe();
    EXPECT_FALSE(refused) << *refused;
    EXPECT_EQ(as_seen(*service), as_new);
    // No later run can read what this one wrote at its revision.
    const auto old = http_request(servers[1]->port(), "POST", "/v3/kv/range",
                                  json{{"key", base64("left")}, {"revision", revision}}.dump(), 2000ms);
    ASSERT_TRUE(old);
    EXPECT_NE(old->body.find("required revision has been compacted"), std::string::npos) << old->body;
    // A second wipe, of a cluster with nothing to remove, proves it as new again.
    const auto again = service->wipe();
    EXPECT_FALSE(again) << *again;
}

// What a wipe does not undo (a user added; a watch still open) leaves the cluster unproved:
// wipe() says which figure differs, and the pool then ends it rather than keep it.
TEST_F(EtcdTest, WhatTheWipeCannotUndoKeepsTheClusterFromBeingKept) {
    auto service = start_kept(1);
    LockServer* member = service->servers().at(0);
    {
        OpenWatch watch(member->port());
        ASSERT_TRUE(eventually([&] { return as_seen(*service)[0].find("watcher_total 1") != std::string::npos; }));
        const auto refused = service->wipe();
        ASSERT_TRUE(refused);
        EXPECT_EQ(*refused, "etcd0 says etcd_debugging_mvcc_watch_stream_total 1 (new: 0), "
                            "etcd_debugging_mvcc_watcher_total 1 (new: 0)");
    }
    ASSERT_TRUE(eventually([&] { return !service->wipe(); }));  // the watch closed: as new again
    post(member, "/v3/auth/user/add", {{"name", "alice"}, {"password", "secret"}});
    const auto refused = service->wipe();
    ASSERT_TRUE(refused);
    EXPECT_EQ(*refused, "etcd0 says etcd_debugging_auth_revision 2 (new: 1)");
    // A cluster started to be used once has nothing to compare with: it is never kept.
    EXPECT_EQ(start(1)->wipe(), "not started to be kept");
}

// The matrix's pool gives a wiped cluster to the next run of the same shape, which asks the
// members who leads (the pool's own question, not the cluster's); they wait stopped between.
TEST_F(EtcdTest, ThePoolGivesAWipedClusterToTheNextRun) {
    ServerPool pool(dir_);
    ServiceConfig config;
    config.size = 3;
    config.dir = dir_ / "run";
    auto first = take_kept_service(Service::etcd, config);
    ASSERT_TRUE(first);
    const auto lead = first->leader();
    ASSERT_TRUE(lead);
    EXPECT_THROW(first->servers().at(0)->kill(), std::logic_error);
    post(first->servers().at(0), "/v3/kv/put", {{"key", base64("left")}, {"value", base64("by the run")}});
    const int port = first->servers().at(0)->port();
    const pid_t member = first->servers().at(0)->pid();
    first.reset();
    ASSERT_TRUE(eventually([&] { return pool.idle() == 1; }));
    EXPECT_EQ(process_state(member), 'T');
    auto second = take_kept_service(Service::etcd, config);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->servers().at(0)->port(), port);
    EXPECT_TRUE(second->leader());
    EXPECT_EQ(as_seen(*second)[0].substr(0, 15), "keys; leases 0;");
    EXPECT_EQ(pool.started(), 1);
    EXPECT_EQ(pool.reused(), 1);
    EXPECT_EQ(pool.not_kept(), 0);
    second.reset();
    pool.end_all();
}

// ---- The lock adapter -----------------------------------------------------------------------

// adapters/etcd-lock/adapter.py with its stdin and stdout on pipes, in its own process group;
// a line waits up to the op timeout lockbench would give it.
class Adapter : public AdapterProcess {
public:
    Adapter(const std::string& nodes, int client)
        : AdapterProcess({"/usr/bin/python3", (fs::path(LOCKBENCH_SOURCE_DIR) / "adapters" / "etcd-lock" / "adapter.py").string()},
                         {"LOCKBENCH_NODES=" + nodes, "LOCKBENCH_CLIENT=" + std::to_string(client),
                          "LOCKBENCH_COMMAND_TIMEOUT_MS=200", "LOCKBENCH_OP_TIMEOUT_MS=2000",
                          "LOCKBENCH_PARAMS={\"ttl_ms\":1000}"},
                         2s) {}
    json acquire() { return call({{"op", "acquire"}, {"key", "lock"}, {"ttl_ms", 1000}, {"wait_ms", 0}}); }
    json release() { return call({{"op", "release"}, {"key", "lock"}}); }
};

// Asks etcd itself (not through the adapter).
json etcd_post(int port, const std::string& path, const json& body) {
    const auto r = http_request(port, "POST", path, body.dump(), 2s);
    return r ? json::parse(r->body, nullptr, false) : json(nullptr);
}
bool key_exists(int port, const std::string& key) {
    return etcd_post(port, "/v3/kv/range", {{"key", base64(key)}}).contains("kvs");
}
std::size_t lease_count(int port) {
    const auto leases = etcd_post(port, "/v3/lease/leases", json::object());
    return leases.contains("leases") ? leases["leases"].size() : 0;
}

class EtcdAdapterTest : public EtcdTest {
protected:
    void SetUp() override {
        service_ = start(1);
        port_ = service_->servers()[0]->port();
        // A first node that refuses every connection: each request must fail over to the next.
        nodes_ = "127.0.0.1:" + std::to_string(find_free_port()) + ",127.0.0.1:" + std::to_string(port_);
    }
    std::unique_ptr<LockService> service_;
    int port_ = 0;
    std::string nodes_;
};

TEST_F(EtcdAdapterTest, LocksWithAFenceAnswersHeldAndReleases) {
    Adapter a(nodes_, 0), b(nodes_, 0);
    for (auto* adapter : {&a, &b}) {
        const json ready = adapter->read();
        EXPECT_EQ(ready.value("ready", false), true) << ready;
        EXPECT_EQ(ready.value("library", ""), "etcd v3 lock API (JSON gateway) 3.4.23");
    }
    const json first = a.acquire();
    ASSERT_EQ(first.value("ok", false), true) << first;
    ASSERT_TRUE(first["fence"].is_number_integer()) << first;
    EXPECT_TRUE(first.value("token", "").starts_with("lock/")) << first;
    EXPECT_TRUE(key_exists(port_, first["token"]));
    const json held = b.acquire();
    EXPECT_EQ(held, json({{"ok", false}, {"error", "held"}}));
    EXPECT_EQ(lease_count(port_), 1u) << "the waiter's lease should be revoked";
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", {0}}}));
    EXPECT_FALSE(key_exists(port_, first["token"]));
    const json second = b.acquire();
    ASSERT_EQ(second.value("ok", false), true) << second;
    EXPECT_GT(second["fence"].get<long long>(), first["fence"].get<long long>());
    EXPECT_EQ(b.release(), json({{"ok", true}, {"removed_on", {0}}}));
    EXPECT_EQ(lease_count(port_), 0u) << "a lease leaked";
}

// Jepsen's finding: a holder paused past its lease loses the lock without knowing it.
TEST_F(EtcdAdapterTest, APausedHolderLosesItsLockWhenTheLeaseExpires) {
    Adapter a(nodes_, 0), b(nodes_, 0);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(b.read().value("ready", false), true);
    const json first = a.acquire();
    ASSERT_EQ(first.value("ok", false), true) << first;
    ::kill(a.pid(), SIGSTOP);
    EXPECT_TRUE(eventually([&] { return !key_exists(port_, first["token"]); })) << "the lease never expired";
    const json second = b.acquire();
    EXPECT_EQ(second.value("ok", false), true) << second;
    ::kill(a.pid(), SIGCONT);
    const json late = a.release();  // its key was already gone: the release says so
    EXPECT_EQ(late.value("ok", true), false) << late;
    EXPECT_EQ(late.value("error", "").rfind("lost", 0), 0u) << late;
    EXPECT_TRUE(key_exists(port_, second["token"])) << "the stale holder's release removed the new holder's key";
}

// Its stdin closed while it holds the lock (the run is over): it revokes its lease before it
// exits rather than leave the lock to expire.
TEST_F(EtcdAdapterTest, AnAdapterThatEndsWhileHoldingRevokesItsLease) {
    Adapter a(nodes_, 0);
    ASSERT_EQ(a.read().value("ready", false), true);
    ASSERT_EQ(a.acquire().value("ok", false), true);
    EXPECT_EQ(lease_count(port_), 1u);
    EXPECT_TRUE(a.close_and_wait());
    EXPECT_EQ(lease_count(port_), 0u);
}

// While the holder runs, its keepalive holds the lease: the key is there throughout three
// times its TTL (the counterpart of the paused holder above).
TEST_F(EtcdAdapterTest, ARunningHolderKeepsItsLockPastItsTtl) {
    Adapter a(nodes_, 1);
    ASSERT_EQ(a.read().value("ready", false), true);
    const json first = a.acquire();
    ASSERT_EQ(first.value("ok", false), true) << first;
    EXPECT_FALSE(first.contains("validity_ms")) << "the keepalive renews the lease: no validity to state";
    const auto watch_until = Clock::now() + 3s;
    while (Clock::now() < watch_until) {
        ASSERT_TRUE(key_exists(port_, first["token"])) << "the lease expired under a running holder";
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", {0}}}));
}

// Three members, the leader paused, and it is the member the adapter asks first: every answer
// comes within the op timeout (an error while the election runs is an answer), and once the
// others have elected a leader the adapter gets the lock through them.
TEST_F(EtcdTest, TheAdapterAnswersThroughAPausedLeaderAndFailsOver) {
    auto service = start(3);
    auto servers = service->servers();
    const int leader = service->leader().value();
    std::string nodes;
    for (auto* s : servers) nodes += (nodes.empty() ? "" : ",") + ("127.0.0.1:" + std::to_string(s->port()));
    Adapter a(nodes, leader);  // client i starts at member i
    ASSERT_EQ(a.read().value("ready", false), true);
    servers[static_cast<std::size_t>(leader)]->pause();
    json answer;
    EXPECT_TRUE(eventually([&] {
        answer = a.acquire();
        EXPECT_FALSE(answer.is_null()) << "no answer within the op timeout";
        return answer.is_null() || answer.value("ok", false);
    }));
    EXPECT_EQ(answer.value("ok", false), true) << answer;
    EXPECT_EQ(a.release(), json({{"ok", true}, {"removed_on", {0}}}));
    servers[static_cast<std::size_t>(leader)]->resume();
}

}  // namespace
}  // namespace lockbench
