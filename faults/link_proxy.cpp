// The hub's loop thread and each link's listening side; see link_proxy.h for the whole picture.
//
//   injector thread                          loop thread (ProxyLoop::io)
//   ───────────────                          ─────────────────────────────────────────────────
//   link.set(dir, fault) ──post + wait──►    State::set: record it; reset → RST every connection,
//                                            else hand it to every LinkConnection's pipe
//                                            State::on_accept: reset? RST the client
//                                              └► async_connect upstream ─┬─ fails: close client
//                                                                         └─ ok: LinkConnection
//                                                                            with the link's faults
//
// Every piece of link state lives on the loop thread, so a change can never race a chunk in
// flight; the injector's call returns once the change is in place (a client waiting at an armed
// point may go on then).
#include "faults/link_proxy.h"

#include "faults/link_connection.h"  // first: it configures Asio for every file of the proxy
#include "faults/priority.h"

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <array>
#include <future>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

namespace lockbench {

using asio::ip::tcp;

struct ProxyLoop {
    explicit ProxyLoop(std::uint64_t seed) : rng(seed) {}

    // Runs `f` on the loop thread and returns its result (or rethrows its exception). Called
    // on the loop thread itself, it runs `f` at once instead of waiting for itself.
    template <typename F>
    auto run(F f) -> decltype(f()) {
        if (io.get_executor().running_in_this_thread()) return f();
        std::packaged_task<decltype(f())()> task(std::move(f));
        auto result = task.get_future();
        asio::post(io, [&task] { task(); });
        return result.get();
    }

    asio::io_context io{1};  // one thread runs it: handlers never run concurrently
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::mt19937_64 rng;     // every link's jitter; used on the loop thread only
    long long chunks = 0;    // every link's chunks so far: one order over them (Traffic)
    std::thread thread;
};

namespace {

int index_of(Direction direction) { return static_cast<int>(direction); }

void reset_socket(tcp::socket& socket) {
    std::error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
}

}  // namespace

struct LinkProxy::State {
    explicit State(ProxyLoop& loop) : loop(loop), acceptor(loop.io) {}

    int open(const std::string& name, const Endpoint& to);
    void accept_next();
    void on_accept(std::error_code ec, tcp::socket client);
    void connect_upstream(tcp::socket client);
    void on_connected(std::error_code ec, tcp::socket client, tcp::socket server);
    void set(Direction direction, LinkFault fault);
    void close_all();
    bool resetting() const {
        return faults[0].kind == LinkFault::Kind::reset || faults[1].kind == LinkFault::Kind::reset;
    }
    // Taken out of the map first: ending a connection may erase it from the map.
    std::vector<std::shared_ptr<LinkConnection>> take_connections(bool remove);

    ProxyLoop& loop;
    tcp::acceptor acceptor;
    tcp::endpoint upstream;
    std::array<LinkFault, 2> faults{};  // indexed by Direction
    std::shared_ptr<LinkConnection::Traffic> traffic =
        std::make_shared<LinkConnection::Traffic>(LinkConnection::Traffic{.order = &loop.chunks});
    long long hold_from = 0;  // the hub's count when the downstream was last set to hold
    std::unordered_map<LinkConnection*, std::shared_ptr<LinkConnection>> connections;
    bool closed = false;
};

int LinkProxy::State::open(const std::string& name, const Endpoint& to) {
    std::error_code ec;
    const auto address = asio::ip::make_address(to.host, ec);
    if (ec || to.port <= 0 || to.port > 65535)
        throw std::runtime_error("link proxy " + name + ": upstream " + to.host + ":" +
                                 std::to_string(to.port) + " is not an IP address and port");
    upstream = tcp::endpoint(address, static_cast<unsigned short>(to.port));
    const tcp::endpoint local(asio::ip::address_v4::loopback(), 0);  // 0: the kernel picks
    if (acceptor.open(local.protocol(), ec) || acceptor.bind(local, ec) || acceptor.listen(
            asio::socket_base::max_listen_connections, ec))
        throw std::runtime_error("link proxy " + name + ": cannot listen on 127.0.0.1: " +
                                 ec.message());
    accept_next();
    return acceptor.local_endpoint().port();
}

void LinkProxy::State::accept_next() {
    acceptor.async_accept(
        [this](std::error_code ec, tcp::socket client) { on_accept(ec, std::move(client)); });
}

void LinkProxy::State::on_accept(std::error_code ec, tcp::socket client) {
    if (ec == asio::error::operation_aborted || closed) return;
    // Other accept errors (out of descriptors) concern one client only: keep listening.
    if (!ec) resetting() ? reset_socket(client) : connect_upstream(std::move(client));
    accept_next();
}

void LinkProxy::State::connect_upstream(tcp::socket client) {
    // The client's bytes wait in its socket until the server side is up; nothing is lost.
    auto sockets = std::make_shared<std::pair<tcp::socket, tcp::socket>>(std::move(client),
                                                                        tcp::socket(loop.io));
    sockets->second.async_connect(upstream, [this, sockets](std::error_code ec) {
        on_connected(ec, std::move(sockets->first), std::move(sockets->second));
    });
}

void LinkProxy::State::on_connected(std::error_code ec, tcp::socket client, tcp::socket server) {
    if (ec == asio::error::operation_aborted) return;
    std::error_code ignored;
    if (ec || closed) {
        client.close(ignored);  // the server cannot be reached: the client sees a closed link
        return;
    }
    if (resetting()) {  // the fault came while connecting
        reset_socket(client);
        reset_socket(server);
        return;
    }
    auto connection = std::make_shared<LinkConnection>(
        std::move(client), std::move(server), loop.rng,
        [this](LinkConnection* ended) { connections.erase(ended); }, traffic);
    connections.emplace(connection.get(), connection);
    connection->start(faults[0], faults[1]);
}

void LinkProxy::State::set(Direction direction, LinkFault fault) {
    faults[index_of(direction)] = fault;
    if (direction == Direction::downstream && fault.kind == LinkFault::Kind::hold)
        hold_from = loop.chunks;
    if (fault.kind == LinkFault::Kind::reset) {
        for (auto& connection : take_connections(true)) connection->reset();
        return;
    }
    for (auto& connection : take_connections(false)) connection->set_fault(direction, fault);
}

void LinkProxy::State::close_all() {
    closed = true;
    std::error_code ignored;
    acceptor.close(ignored);
    for (auto& connection : take_connections(true)) connection->close();
}

std::vector<std::shared_ptr<LinkConnection>> LinkProxy::State::take_connections(bool remove) {
    std::vector<std::shared_ptr<LinkConnection>> taken;
    for (auto& entry : connections) taken.push_back(entry.second);
    if (remove) connections.clear();
    return taken;
}

// ---- LinkProxy: the injector's side; every call runs on the loop thread --------------------

LinkProxy::LinkProxy(ProxyLoop& loop, std::string name, Endpoint upstream)
    : loop_(loop), name_(std::move(name)), upstream_(std::move(upstream)),
      state_(std::make_unique<State>(loop)) {
    port_ = loop_.run([this] { return state_->open(name_, upstream_); });
}

LinkProxy::~LinkProxy() = default;

void LinkProxy::set(Direction direction, LinkFault fault) {
    loop_.run([&] { state_->set(direction, fault); });
}

void LinkProxy::set_both(LinkFault fault) {
    loop_.run([&] {
        state_->set(Direction::upstream, fault);
        state_->set(Direction::downstream, fault);
    });
}

void LinkProxy::heal() { set_both(LinkFault::pass()); }

LinkFault LinkProxy::fault(Direction direction) const {
    return loop_.run([&] { return state_->faults[index_of(direction)]; });
}

LinkProxy::HeldReplies LinkProxy::held_replies() const {
    return loop_.run([&] {
        const LinkConnection::Traffic& t = *state_->traffic;
        return HeldReplies{.asked = t.last_request > state_->hold_from,
                           .answered = t.last_held_answer > state_->hold_from && t.last_held_answer > t.last_request};
    });
}

long long LinkProxy::first_request() const {
    return loop_.run([&] {
        const LinkConnection::Traffic& t = *state_->traffic;
        return t.first_request > t.mark ? t.first_request : 0;
    });
}

int LinkProxy::connection_count() const {
    return loop_.run([&] { return static_cast<int>(state_->connections.size()); });
}

// ---- ProxyHub ------------------------------------------------------------------------------

ProxyHub::ProxyHub(std::uint64_t seed) : loop_(std::make_unique<ProxyLoop>(seed)) {
    loop_->thread = std::thread([loop = loop_.get()] {
        run_fault_thread_ahead();  // a held reply let go when written, on a loaded machine too
        loop->io.run();
    });
}

ProxyHub::~ProxyHub() {
    loop_->run([this] {
        for (auto& link : links_) link->state_->close_all();
    });
    // Handlers still queued (aborted reads, cancelled timers) are destroyed with the
    // io_context, which releases the connections they keep alive.
    loop_->work.reset();
    loop_->io.stop();
    loop_->thread.join();
}

LinkProxy& ProxyHub::add(std::string name, Endpoint upstream) {
    std::lock_guard lock(links_mutex_);
    if (find_locked(name))
        throw std::runtime_error("link proxy " + name + ": a link of that name already exists");
    links_.push_back(std::unique_ptr<LinkProxy>(
        new LinkProxy(*loop_, std::move(name), std::move(upstream))));
    return *links_.back();
}

LinkProxy* ProxyHub::find(const std::string& name) {
    std::lock_guard lock(links_mutex_);
    return find_locked(name);
}

std::vector<LinkProxy*> ProxyHub::find_prefix(const std::string& prefix) {
    std::lock_guard lock(links_mutex_);
    std::vector<LinkProxy*> found;
    for (auto& link : links_)
        if (link->name().rfind(prefix, 0) == 0) found.push_back(link.get());
    return found;
}

LinkProxy* ProxyHub::find_locked(const std::string& name) {
    for (auto& link : links_)
        if (link->name() == name) return link.get();
    return nullptr;
}

void ProxyHub::mark_requests() {
    std::lock_guard lock(links_mutex_);
    loop_->run([&] {
        for (auto& link : links_) link->state_->traffic->mark = loop_->chunks;
    });
}

void ProxyHub::heal_all() {
    std::lock_guard lock(links_mutex_);
    for (auto& link : links_) link->heal();
}

}  // namespace lockbench
