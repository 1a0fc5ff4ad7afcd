#include "sim/live/live_env.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>
#include <time.h>

#include <charconv>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace lockbench {
namespace {

timeval to_timeval(Duration d) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

Value to_value(const redisReply* r) {
    Value v;
    switch (r->type) {
        case REDIS_REPLY_STRING: v.type = Value::Type::string; v.str.assign(r->str, r->len); break;
        case REDIS_REPLY_STATUS: v.type = Value::Type::status; v.str.assign(r->str, r->len); break;
        case REDIS_REPLY_ERROR: v.type = Value::Type::status; v.str.assign(r->str, r->len); break;
        case REDIS_REPLY_INTEGER: v.type = Value::Type::integer; v.integer = r->integer; break;
        case REDIS_REPLY_ARRAY:
            v.type = Value::Type::array;
            for (size_t i = 0; i < r->elements; ++i) v.elements.push_back(to_value(r->element[i]));
            break;
        default: v.type = Value::Type::nil;
    }
    return v;
}

// "<kind><n>\r\n": the header of a RESP array or bulk string.
void append_resp_header(std::string& out, char kind, std::size_t n) {
    char buf[24];
    buf[0] = kind;
    char* end = std::to_chars(buf + 1, buf + sizeof buf, n).ptr;
    *end++ = '\r';
    *end++ = '\n';
    out.append(buf, end);
}

// The command in the Redis protocol, byte for byte what redisAppendCommandArgv builds
// ("*<argc>\r\n", then "$<len>\r\n<arg>\r\n" per argument). hiredis builds it with
// sdscatfmt, which cost more client CPU than the rest of a command's user-space work.
std::string to_resp(const Command& cmd) {
    std::size_t size = 16;
    for (const auto& a : cmd.args) size += a.size() + 16;
    std::string out;
    out.reserve(size);
    append_resp_header(out, '*', cmd.args.size());
    for (const auto& a : cmd.args) {
        append_resp_header(out, '$', a.size());
        out += a;
        out += "\r\n";
    }
    return out;
}

// Takes ownership of a hiredis reply and turns it into a Reply.
Reply to_reply(NodeId node, redisReply* r) {
    Reply out{node, Reply::Status::ok, to_value(r), "", false};
    if (r->type == REDIS_REPLY_ERROR) {
        out.redis_error = true;
        out.error = out.value.str;
    }
    freeReplyObject(r);
    return out;
}

// Waits on the task's gate, which a background pause may hold.
class LiveStopSignal final : public StopSignal {
public:
    explicit LiveStopSignal(std::shared_ptr<BackgroundGate> gate) : gate_(std::move(gate)) {}
    bool sleep_unless_stopped(Duration d) override { return gate_->sleep_unless_stopped(d, stop_); }
    void request_stop() { gate_->request_stop(stop_); }
    const bool* stop_flag() const { return &stop_; }

private:
    std::shared_ptr<BackgroundGate> gate_;
    bool stop_ = false;
};

class LiveTask final : public BackgroundTask {
public:
    LiveTask(LiveEnvConfig config, std::function<void(Env&, StopSignal&)> task)
        : signal_(config.background_gate),
          env_(std::make_unique<LiveEnv>(with_stop(std::move(config), signal_.stop_flag()))),
          thread_([this, task = std::move(task)] { task(*env_, signal_); }) {}
    ~LiveTask() override { stop(); }
    void stop() override {
        signal_.request_stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    static LiveEnvConfig with_stop(LiveEnvConfig config, const bool* stop) {
        config.background_stop = stop;
        return config;
    }

    LiveStopSignal signal_;
    std::unique_ptr<LiveEnv> env_;
    std::thread thread_;
};

}  // namespace

void BackgroundGate::hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
}

void BackgroundGate::release() {
    { std::lock_guard lock(mutex_); held_ = false; }
    cv_.notify_all();
}

void BackgroundGate::wait_released() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return !held_; });
}

bool BackgroundGate::wait_released_unless_stopped(const bool& stop) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this, &stop] { return stop || !held_; });
    return !stop;
}

bool BackgroundGate::sleep_unless_stopped(Duration d, const bool& stop) {
    std::unique_lock lock(mutex_);
    if (cv_.wait_for(lock, d, [&stop] { return stop; })) return false;
    cv_.wait(lock, [this, &stop] { return stop || !held_; });
    return !stop;
}

void BackgroundGate::request_stop(bool& stop) {
    { std::lock_guard lock(mutex_); stop = true; }
    cv_.notify_all();
}

LiveEnv::LiveEnv(LiveEnvConfig config)
    : config_(std::move(config)), connections_(config_.nodes.size()), rng_(config_.seed) {}

LiveEnv::~LiveEnv() {
    for (auto& c : connections_)
        if (c.ctx) redisFree(c.ctx);
}

std::optional<std::string> LiveEnv::ensure_connected(int i, Duration timeout) {
    Connection& c = connections_[static_cast<size_t>(i)];
    if (!c.ctx) {
        Endpoint e = config_.nodes[static_cast<size_t>(i)];
        if (auto d = config_.discovery.find(i); d != config_.discovery.end()) {
            const std::optional<Endpoint> found = discover(d->second, timeout);
            if (!found) return "no Sentinel named a master for " + d->second.master_name;
            e = *found;
        }
        // Never wait longer to connect than the command may take: a fan-out connects one
        // node after another, and Redlock's validity is ticking.
        c.ctx = redisConnectWithTimeout(e.host.c_str(), e.port, to_timeval(std::min(config_.connect_timeout, timeout)));
        c.timeout = Duration{-1};
        if (!c.ctx || c.ctx->err) {
            std::string why = c.ctx ? c.ctx->errstr : "out of memory";
            if (c.ctx) redisFree(c.ctx);
            c.ctx = nullptr;
            return "connect to " + e.host + ":" + std::to_string(e.port) + ": " + why;
        }
    }
    if (c.timeout != timeout) {
        redisSetTimeout(c.ctx, to_timeval(timeout));
        c.timeout = timeout;
    }
    return std::nullopt;
}

// Asks each Sentinel in turn where the master is; the first answer wins.
std::optional<Endpoint> LiveEnv::discover(const SentinelDiscovery& d, Duration timeout) {
    const Duration limit = std::min(config_.connect_timeout, timeout);
    for (const Endpoint& s : d.sentinels) {
        redisContext* ctx = redisConnectWithTimeout(s.host.c_str(), s.port, to_timeval(limit));
        if (!ctx || ctx->err) {
            if (ctx) redisFree(ctx);
            continue;
        }
        redisSetTimeout(ctx, to_timeval(limit));
        auto* r = static_cast<redisReply*>(redisCommand(ctx, "SENTINEL get-master-addr-by-name %s", d.master_name.c_str()));
        std::optional<Endpoint> found;
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
            const std::string host(r->element[0]->str, r->element[0]->len);
            const std::string port(r->element[1]->str, r->element[1]->len);
            auto mapped = d.address_map.find(host + ":" + port);
            found = mapped != d.address_map.end() ? mapped->second : Endpoint{host, std::stoi(port)};
        }
        if (r) freeReplyObject(r);
        redisFree(ctx);
        if (found) return found;
    }
    return std::nullopt;
}

Reply LiveEnv::fail_connection(int i, Reply::Status status, std::string what) {
    Connection& c = connections_[static_cast<size_t>(i)];
    if (c.ctx) {
        if (c.ctx->errstr[0] != '\0') {
            what += ": ";
            what += c.ctx->errstr;
        }
        redisFree(c.ctx);  // its protocol state is unknown now: start afresh next time
        c.ctx = nullptr;
    }
    return Reply{NodeId{i}, status, {}, std::move(what), false};
}

// Appends and flushes the command; on failure fills `reply` and returns false.
bool LiveEnv::send(int i, const Command& cmd, Reply& reply) {
    const std::string wire = to_resp(cmd);
    redisContext* ctx = connections_[static_cast<size_t>(i)].ctx;
    redisAppendFormattedCommand(ctx, wire.data(), wire.size());
    int done = 0;
    while (!done) {
        if (redisBufferWrite(ctx, &done) != REDIS_OK) {
            reply = fail_connection(i, Reply::Status::unknown, "send");
            return false;
        }
    }
    return true;
}

// The socket's receive timeout, set by ensure_connected, bounds the wait.
Reply LiveEnv::read_one(int i, Reply reply) {
    void* raw = nullptr;
    if (redisGetReply(connections_[static_cast<size_t>(i)].ctx, &raw) != REDIS_OK || !raw)
        return fail_connection(i, Reply::Status::unknown, "no reply");
    return to_reply(reply.node, static_cast<redisReply*>(raw));
}

Reply LiveEnv::command(NodeId node, const Command& cmd, Duration timeout, std::optional<Point> after_send) {
    // A held task sends nothing; a task asked to stop meanwhile gives up at once.
    if (!background_released()) return Reply{node, Reply::Status::unknown, {}, "background task stopped", false};
    const int i = node.value;
    if (auto err = ensure_connected(i, timeout)) return Reply{node, Reply::Status::error, {}, *err, false};
    Reply reply{node, Reply::Status::unknown, {}, "", false};
    if (!send(i, cmd, reply)) return reply;
    if (after_send) reach(*after_send);
    return read_one(i, reply);
}

std::vector<Reply> LiveEnv::fan_out(const Command& cmd, Duration timeout, std::optional<Point> after_send) {
    if (!background_released()) {
        std::vector<Reply> stopped;
        for (int i = 0; i < node_count(); ++i)
            stopped.push_back(Reply{NodeId{i}, Reply::Status::unknown, {}, "background task stopped", false});
        return stopped;
    }
    std::vector<Reply> replies;
    std::vector<int> pending;
    replies.reserve(static_cast<size_t>(node_count()));
    pending.reserve(static_cast<size_t>(node_count()));
    for (int i = 0; i < node_count(); ++i) {
        replies.push_back(Reply{NodeId{i}, Reply::Status::unknown, {}, "", false});
        if (auto err = ensure_connected(i, timeout)) {
            replies.back() = Reply{NodeId{i}, Reply::Status::error, {}, *err, false};
            continue;
        }
        if (send(i, cmd, replies.back())) pending.push_back(i);
    }
    if (after_send) reach(*after_send);
    await_replies(replies, std::move(pending), timeout);
    return replies;
}

// Reads the replies of every pending node as they arrive, all under one deadline.
void LiveEnv::await_replies(std::vector<Reply>& replies, std::vector<int> pending, Duration timeout) {
    const Instant deadline = now() + timeout;
    std::vector<pollfd> fds;
    std::vector<int> still;
    fds.reserve(pending.size());
    still.reserve(pending.size());
    while (!pending.empty()) {
        fds.clear();
        for (int i : pending) fds.push_back({connections_[static_cast<size_t>(i)].ctx->fd, POLLIN, 0});
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now());
        const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, left.count() + 1)));
        if (ready <= 0 && now() >= deadline) break;
        still.clear();
        for (size_t k = 0; k < pending.size(); ++k) {
            const int i = pending[k];
            if (!(fds[k].revents & (POLLIN | POLLERR | POLLHUP))) { still.push_back(i); continue; }
            redisContext* ctx = connections_[static_cast<size_t>(i)].ctx;
            void* raw = nullptr;
            if (redisBufferRead(ctx) != REDIS_OK || redisGetReplyFromReader(ctx, &raw) != REDIS_OK) {
                replies[static_cast<size_t>(i)] = fail_connection(i, Reply::Status::unknown, "no reply");
            } else if (raw) {
                replies[static_cast<size_t>(i)] = to_reply(NodeId{i}, static_cast<redisReply*>(raw));
            } else {
                still.push_back(i);  // a partial reply: wait for the rest
            }
        }
        pending.swap(still);
    }
    for (int i : pending) replies[static_cast<size_t>(i)] = fail_connection(i, Reply::Status::unknown, "timed out");
}

Instant LiveEnv::now() { return Instant{Duration{monotonic_ns()}}; }

long long LiveEnv::wall_ms() {
    timeval tv;
    gettimeofday(&tv, nullptr);  // the call a clock shim can skew for this process
    return static_cast<long long>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
}

void LiveEnv::sleep(Duration d) {
    if (d > Duration::zero()) std::this_thread::sleep_for(d);
    background_released();
}

bool LiveEnv::background_released() {
    if (!config_.in_background) return true;
    if (!config_.background_stop) {
        config_.background_gate->wait_released();
        return true;
    }
    return config_.background_gate->wait_released_unless_stopped(*config_.background_stop);
}

void LiveEnv::reach(Point p) {
    if (config_.on_point) config_.on_point(p);
}

std::unique_ptr<BackgroundTask> LiveEnv::background(std::function<void(Env&, StopSignal&)> task) {
    LiveEnvConfig config = config_;
    config.seed = rng_();
    if (!config.background_gate) config.background_gate = std::make_shared<BackgroundGate>();
    config.in_background = true;
    return std::make_unique<LiveTask>(std::move(config), std::move(task));
}

}  // namespace lockbench
