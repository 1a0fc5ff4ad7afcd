// Tests for faults/link_proxy.h: the per-chunk rules without sockets, then every fault
// against a live redis-server behind a proxy. Waits are bounded polls for an outcome; the
// only time windows are "nothing arrives within N ms" under a fault that should hold it back
// far longer, never a measured duration.
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "faults/link_proxy.h"
#include "faults/priority.h"
#include "sim/live/redis_node.h"

namespace lockbench {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// ---- The proxies' thread runs ahead of the workload -----------------------------------------

// Each thread's nice value, from /proc/self/task/<tid>/stat (field 19).
std::vector<int> thread_nice_values() {
    std::vector<int> out;
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
        std::ifstream stat(task.path() / "stat");
        std::string line;
        std::getline(stat, line);
        std::istringstream rest(line.substr(line.rfind(')') + 2));  // after "pid (comm) "
        std::string field;
        for (int i = 3; i <= 19 && rest >> field; ++i) {}
        out.push_back(std::stoi(field));
    }
    return out;
}

// A thread that carries faults out runs at nice -10 where the process may raise a thread's
// priority (root, as lockbench's machines are), the others as they were; ProxyHub's loop is one.
TEST(FaultThreads, RunAheadOfTheWorkloadWhereAllowed) {
    const int before = ::getpriority(PRIO_PROCESS, 0);
    int raised = 99;
    bool ok = false;
    std::thread([&] {
        ok = run_fault_thread_ahead();
        raised = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    }).join();
    EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), before) << "only the calling thread";
    if (::geteuid() != 0) GTEST_SKIP() << "not root: a thread's priority cannot be raised";
    ASSERT_TRUE(ok);
    EXPECT_EQ(raised, kFaultThreadNice);
    const auto count = [](const std::vector<int>& v) { return std::ranges::count(v, kFaultThreadNice); };
    const auto without = count(thread_nice_values());
    ProxyHub hub(1);
    EXPECT_TRUE(testing_util::eventually([&] { return count(thread_nice_values()) == without + 1; }));
}

// ---- The per-chunk rules, no sockets --------------------------------------------------------

TEST(FateOfChunk, PassDeliversNowDelayLaterHoldWaitsOthersDrop) {
    std::mt19937_64 rng(7);
    const LinkClock::time_point now{10s}, earlier{5s};
    EXPECT_EQ(fate_of_chunk(LinkFault::pass(), now, earlier, rng).due, now);
    EXPECT_EQ(fate_of_chunk(LinkFault::delay(200ms), now, earlier, rng).due, now + 200ms);
    EXPECT_EQ(fate_of_chunk(LinkFault::hold(), now, earlier, rng).kind, ChunkFate::Kind::hold);
    EXPECT_EQ(fate_of_chunk(LinkFault::blackhole(), now, earlier, rng).kind, ChunkFate::Kind::drop);
    EXPECT_EQ(fate_of_chunk(LinkFault::reset(), now, earlier, rng).kind, ChunkFate::Kind::drop);
}

TEST(FateOfChunk, JitterStaysInBoundsAndNeverReordersChunks) {
    std::mt19937_64 rng(7);
    const LinkFault fault = LinkFault::delay(100ms, 50ms);
    LinkClock::time_point previous{};
    for (int i = 0; i < 1000; ++i) {
        const LinkClock::time_point now{std::chrono::milliseconds(i)};
        const ChunkFate fate = fate_of_chunk(fault, now, previous, rng);
        ASSERT_EQ(fate.kind, ChunkFate::Kind::deliver);
        EXPECT_GE(fate.due, now + 100ms);
        EXPECT_GE(fate.due, previous);  // order kept: a short draw waits for the chunk before
        EXPECT_TRUE(fate.due <= now + 150ms || fate.due == previous);
        previous = fate.due;
    }
}

TEST(FateOfChunk, SameSeedSameDraws) {
    std::mt19937_64 a(42), b(42);
    const LinkFault fault = LinkFault::delay(0ms, 1000ms);
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(fate_of_chunk(fault, {}, {}, a).due, fate_of_chunk(fault, {}, {}, b).due);
}

TEST(LinkFault, DescribesItselfForPlots) {
    EXPECT_EQ(describe(LinkFault::pass()), "pass");
    EXPECT_EQ(describe(LinkFault::delay(200ms, 50ms)), "delay 200ms+U[0,50ms]");
    EXPECT_EQ(describe(LinkFault::hold()), "hold");
}

// ---- Helpers for the live tests -------------------------------------------------------------

using Context = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

timeval to_timeval(std::chrono::milliseconds ms) {
    return timeval{static_cast<time_t>(ms.count() / 1000),
                   static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

Context connect_to(int port, std::chrono::milliseconds timeout = 5s) {
    Context c(redisConnectWithTimeout("127.0.0.1", port, timeval{2, 0}), redisFree);
    if (c && !c->err) redisSetTimeout(c.get(), to_timeval(timeout));
    return c;
}

template <typename... Args>
Reply command(const Context& c, const char* format, Args... args) {
    return Reply(static_cast<redisReply*>(redisCommand(c.get(), format, args...)), freeReplyObject);
}

std::string text(const Reply& r) {
    return r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING)
               ? std::string(r->str, r->len)
               : "<not text>";
}

// Sends one command in its own write() and does not wait for the reply.
template <typename... Args>
bool send_only(const Context& c, const char* format, Args... args) {
    if (redisAppendCommand(c.get(), format, args...) != REDIS_OK) return false;
    int done = 0;
    while (!done)
        if (redisBufferWrite(c.get(), &done) != REDIS_OK) return false;
    return true;
}

Reply next_reply(const Context& c) {
    void* reply = nullptr;
    if (redisGetReply(c.get(), &reply) != REDIS_OK) return Reply(nullptr, freeReplyObject);
    return Reply(static_cast<redisReply*>(reply), freeReplyObject);
}

// True if the socket has something to read (data, EOF or an error) within `window`.
bool readable_within(int fd, std::chrono::milliseconds window) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(window.count())) > 0;
}

using testing_util::eventually;

// A plain blocking socket connected to 127.0.0.1:port (reads time out after 5 s), or -1.
int raw_connect(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    close(fd);
    return -1;
}

// The result of one recv(): the bytes, or 0 for EOF, or -errno.
struct Received {
    long n = 0;
    std::string bytes;
};

Received receive(int fd) {
    char buf[256];
    const long n = recv(fd, buf, sizeof buf, 0);
    return n >= 0 ? Received{n, std::string(buf, static_cast<size_t>(n))} : Received{-errno, ""};
}

bool raw_ping(int fd) {
    const std::string ping = "PING\r\n";  // Redis's inline command form
    return send(fd, ping.data(), ping.size(), MSG_NOSIGNAL) == static_cast<long>(ping.size()) &&
           receive(fd).bytes == "+PONG\r\n";
}

class LinkProxyTest : public ::testing::Test {
protected:
    void TearDown() override { fs::remove_all(run_dir); }
    static RedisNodeConfig config() {
        RedisNodeConfig c;
        c.name = "lock0";
        return c;
    }
    Endpoint node_endpoint() const { return Endpoint{"127.0.0.1", node.port()}; }

    fs::path run_dir = make_run_temp_dir();
    RedisNode node{config(), run_dir};
    ProxyHub hub{1};
    LinkProxy& link = hub.add("c0->lock0", node_endpoint());
    Context direct = connect_to(node.port());  // bypasses the proxy, to see what reached Redis
};

// ---- pass -----------------------------------------------------------------------------------

TEST_F(LinkProxyTest, PassForwardsBothWaysAndEndsWithTheClient) {
    EXPECT_NE(link.port(), node.port());
    EXPECT_EQ(hub.find("c0->lock0"), &link);
    {
        const Context c = connect_to(link.port());
        ASSERT_TRUE(c && !c->err);
        EXPECT_EQ(text(command(c, "SET k %s", "v")), "OK");
        EXPECT_EQ(text(command(c, "GET k")), "v");
        EXPECT_EQ(text(command(direct, "GET k")), "v");
        EXPECT_EQ(link.connection_count(), 1);
    }
    // The client's FIN travels to Redis, Redis's back, and the proxy lets the pair go.
    EXPECT_TRUE(eventually([&] { return link.connection_count() == 0; }));
}

TEST_F(LinkProxyTest, AddRejectsDuplicateNamesAndHostNames) {
    EXPECT_THROW(hub.add("c0->lock0", node_endpoint()), std::runtime_error);
    EXPECT_THROW(hub.add("by-name", Endpoint{"localhost", node.port()}), std::runtime_error);
    EXPECT_EQ(hub.find("by-name"), nullptr);
}

// ---- delay ----------------------------------------------------------------------------------

TEST_F(LinkProxyTest, DelayHoldsTheReplyBackThenDeliversIt) {
    const Context c = connect_to(link.port());
    ASSERT_TRUE(c && !c->err);
    link.set(Direction::downstream, LinkFault::delay(300ms));
    EXPECT_EQ(link.fault(Direction::downstream), LinkFault::delay(300ms));
    ASSERT_TRUE(send_only(c, "PING"));
    EXPECT_FALSE(readable_within(c->fd, 50ms));
    EXPECT_EQ(text(next_reply(c)), "PONG");
}

TEST_F(LinkProxyTest, DelayWithJitterKeepsEveryByteInOrder) {
    const Context c = connect_to(link.port());
    ASSERT_TRUE(c && !c->err);
    link.set_both(LinkFault::delay(1ms, 20ms));
    constexpr int count = 200;
    for (int i = 0; i < count; ++i) ASSERT_TRUE(send_only(c, "RPUSH order %d", i));
    for (int i = 0; i < count; ++i) {
        const Reply r = next_reply(c);
        ASSERT_TRUE(r && r->type == REDIS_REPLY_INTEGER);
        EXPECT_EQ(r->integer, i + 1);  // the i-th reply is the i-th push's
    }
    const Reply list = command(direct, "LRANGE order 0 -1");
    ASSERT_TRUE(list && list->elements == count);
    for (int i = 0; i < count; ++i)
        EXPECT_EQ(std::string(list->element[i]->str), std::to_string(i));
}

// ---- blackhole ------------------------------------------------------------------------------

TEST_F(LinkProxyTest, BlackholeTimesTheClientOutAndHealLetsANewConnectionWork) {
    link.set_both(LinkFault::blackhole());
    const Context c = connect_to(link.port(), 100ms);
    ASSERT_TRUE(c && !c->err);  // the connection itself is accepted: only bytes vanish
    EXPECT_EQ(command(c, "PING"), nullptr);
    EXPECT_EQ(c->err, REDIS_ERR_IO);  // a timeout, not a closed connection

    link.heal();
    const Context fresh = connect_to(link.port(), 100ms);
    ASSERT_TRUE(fresh && !fresh->err);
    EXPECT_EQ(text(command(fresh, "PING")), "PONG");
}

TEST_F(LinkProxyTest, DownstreamBlackholeStillDeliversTheRequest) {
    const Context c = connect_to(link.port(), 100ms);
    ASSERT_TRUE(c && !c->err);
    link.set(Direction::downstream, LinkFault::blackhole());
    EXPECT_EQ(link.fault(Direction::upstream), LinkFault::pass());
    EXPECT_EQ(command(c, "SET k %s", "written"), nullptr);  // the reply never comes
    EXPECT_TRUE(eventually([&] { return text(command(direct, "GET k")) == "written"; }));
}

// ---- hold -----------------------------------------------------------------------------------

TEST_F(LinkProxyTest, HoldDeliversTheQueuedBytesIntactAndInOrderAfterHeal) {
    const Context c = connect_to(link.port());
    ASSERT_TRUE(c && !c->err);
    link.set(Direction::upstream, LinkFault::hold());
    constexpr int count = 500;
    for (int i = 0; i < count; ++i) ASSERT_TRUE(send_only(c, "RPUSH held %d", i));
    EXPECT_FALSE(readable_within(c->fd, 100ms));
    EXPECT_EQ(command(direct, "EXISTS held")->integer, 0);  // nothing reached Redis

    link.heal();
    for (int i = 0; i < count; ++i) {
        const Reply r = next_reply(c);
        ASSERT_TRUE(r && r->type == REDIS_REPLY_INTEGER);
        EXPECT_EQ(r->integer, i + 1);
    }
    const Reply list = command(direct, "LRANGE held 0 -1");
    ASSERT_TRUE(list && list->elements == count);
    for (int i = 0; i < count; ++i)
        EXPECT_EQ(std::string(list->element[i]->str), std::to_string(i));
}

// What a start waits for when a client's replies are held: nothing asked since the hold, then
// a request sent (and applied: the key is there), then its reply waiting in the hold. A new
// hold counts afresh; the bytes from before it are not an answer to it. A request sent after
// the last held answer is not answered yet; the server's end of stream is no answer.
TEST_F(LinkProxyTest, AHoldSaysWhetherTheClientAskedAndWhetherTheAnswerWaitsInIt) {
    const Context c = connect_to(link.port());
    ASSERT_TRUE(c && !c->err);
    EXPECT_EQ(text(command(c, "PING")), "PONG");  // before any hold
    link.set(Direction::downstream, LinkFault::hold());
    LinkProxy::HeldReplies held = link.held_replies();
    EXPECT_FALSE(held.asked);
    EXPECT_FALSE(held.answered);
    ASSERT_TRUE(send_only(c, "SET k %s", "mine"));
    EXPECT_TRUE(eventually([&] { return link.held_replies().answered; }));
    EXPECT_TRUE(link.held_replies().asked);
    EXPECT_EQ(text(command(direct, "GET k")), "mine");  // the request reached Redis first
    EXPECT_FALSE(readable_within(c->fd, 50ms));
    link.heal();
    EXPECT_EQ(text(next_reply(c)), "OK");
    EXPECT_TRUE(link.held_replies().answered);  // let go: it was answered all the same

    link.set(Direction::downstream, LinkFault::hold());
    held = link.held_replies();
    EXPECT_FALSE(held.asked);
    EXPECT_FALSE(held.answered);
    ASSERT_TRUE(send_only(c, "PING"));
    EXPECT_TRUE(eventually([&] { return link.held_replies().answered; }));
    ASSERT_TRUE(send_only(c, "BLPOP nothing 0.5"));  // answered half a second later
    EXPECT_TRUE(eventually([&] { return !link.held_replies().answered; }));
    EXPECT_TRUE(eventually([&] { return link.held_replies().answered; }));

    link.set(Direction::downstream, LinkFault::hold());
    const Reply killed = command(direct, "CLIENT KILL TYPE normal SKIPME yes");  // a FIN from the server
    ASSERT_TRUE(killed && killed->type == REDIS_REPLY_INTEGER && killed->integer >= 1);
    EXPECT_FALSE(readable_within(c->fd, 200ms));  // the end of stream waits in the hold
    held = link.held_replies();
    EXPECT_FALSE(held.asked);
    EXPECT_FALSE(held.answered);
}

// Two clients' links to one server: which request reached it first since the hub's mark, in
// one order over both (what tells a held client that another overtook it on a node).
TEST_F(LinkProxyTest, TheFirstRequestSinceTheMarkIsNumberedInOneOrderOverEveryLink) {
    LinkProxy& other = hub.add("c1->lock0", node_endpoint());
    const Context mine = connect_to(link.port());
    const Context theirs = connect_to(other.port());
    ASSERT_TRUE(mine && !mine->err && theirs && !theirs->err);
    EXPECT_EQ(text(command(mine, "PING")), "PONG");  // before the mark: not counted
    hub.mark_requests();
    EXPECT_EQ(link.first_request(), 0);
    EXPECT_EQ(other.first_request(), 0);
    EXPECT_EQ(text(command(theirs, "SET k %s", "theirs")), "OK");
    EXPECT_EQ(text(command(mine, "SET k %s", "mine")), "OK");
    EXPECT_EQ(text(command(theirs, "PING")), "PONG");  // a later request keeps the first's number
    ASSERT_GT(other.first_request(), 0);
    EXPECT_GT(link.first_request(), other.first_request());

    hub.mark_requests();  // afresh: this time mine goes first
    EXPECT_EQ(link.first_request(), 0);
    EXPECT_EQ(text(command(mine, "PING")), "PONG");
    EXPECT_EQ(text(command(theirs, "PING")), "PONG");
    EXPECT_LT(link.first_request(), other.first_request());
}

// ---- reset ----------------------------------------------------------------------------------

TEST_F(LinkProxyTest, ResetResetsOpenConnectionsAndNewOnesUntilHealed) {
    const int fd = raw_connect(link.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(raw_ping(fd));

    link.set(Direction::upstream, LinkFault::reset());
    EXPECT_EQ(receive(fd).n, -ECONNRESET);
    close(fd);
    EXPECT_EQ(link.connection_count(), 0);

    const int refused = raw_connect(link.port());  // the kernel accepts, the proxy resets
    ASSERT_GE(refused, 0);
    EXPECT_EQ(receive(refused).n, -ECONNRESET);
    close(refused);

    // Redis saw its side reset too: only the direct connection is left.
    EXPECT_TRUE(eventually([&] {
        return text(command(direct, "INFO clients")).find("connected_clients:1\r") !=
               std::string::npos;
    }));

    link.heal();
    const int healed = raw_connect(link.port());
    ASSERT_GE(healed, 0);
    EXPECT_TRUE(raw_ping(healed));
    close(healed);
}

// ---- connection set-up and teardown ---------------------------------------------------------

TEST_F(LinkProxyTest, UnreachableUpstreamClosesTheClient) {
    LinkProxy& dead = hub.add("c0->nowhere", Endpoint{"127.0.0.1", find_free_port()});
    const int fd = raw_connect(dead.port());
    ASSERT_GE(fd, 0);
    EXPECT_EQ(receive(fd).n, 0);  // EOF
    close(fd);
}

TEST_F(LinkProxyTest, FaultChangesFromAnotherThreadWhileTrafficFlows) {
    const Context c = connect_to(link.port());
    ASSERT_TRUE(c && !c->err);
    std::atomic<bool> done{false};
    std::thread injector([&] {
        for (int i = 0; !done; ++i)
            link.set_both(i % 2 ? LinkFault::delay(0ms, 2ms) : LinkFault::pass());
    });
    int pongs = 0;
    for (int i = 0; i < 300; ++i) pongs += text(command(c, "PING")) == "PONG";
    done = true;
    injector.join();
    EXPECT_EQ(pongs, 300);
}

TEST(ProxyHub, DestroyingTheHubClosesItsPortsAndConnections) {
    const fs::path run_dir = make_run_temp_dir();
    int port = 0, fd = -1;
    {
        RedisNode node(RedisNodeConfig{.name = "lock0"}, run_dir);
        auto hub = std::make_unique<ProxyHub>(1);
        port = hub->add("c0->lock0", Endpoint{"127.0.0.1", node.port()}).port();
        fd = raw_connect(port);
        ASSERT_GE(fd, 0);
        ASSERT_TRUE(raw_ping(fd));
        hub.reset();
        EXPECT_EQ(receive(fd).n, 0);  // the proxied connection was closed
    }
    close(fd);
    EXPECT_EQ(raw_connect(port), -1);
    fs::remove_all(run_dir);
}

}  // namespace
}  // namespace lockbench
