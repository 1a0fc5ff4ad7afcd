#include "sim/live/external.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <thread>

#include "lockimpl/params.h"
#include "sim/engine/clock.h"
#include "sim/live/adapter_pool.h"
#include "sim/live/server_home.h"

extern char** environ;

namespace lockbench {
namespace {

// The longest line the protocol takes: an adapter streaming bytes with no newline is broken.
constexpr std::size_t kMaxLineBytes = 16 << 20;

// How long an adapter has to print its ready line: 10 s, or LOCKBENCH_ADAPTER_READY_MS (1 s to
// 10 min) when set; the client processes inherit it from the repetition that starts them.
std::chrono::milliseconds adapter_ready_wait() {
    const char* set = std::getenv("LOCKBENCH_ADAPTER_READY_MS");
    const long long ms = set ? std::atoll(set) : 0;
    return std::chrono::milliseconds(ms >= 1000 && ms <= 600'000 ? ms : 10'000);
}

using namespace std::chrono_literals;

// Text the adapter chose (its error, the last thing it printed, an event line) for a message
// or a history line: it may be megabytes, or carry escape sequences and newlines. Cut to 200
// characters and made printable (lockimpl/params.h), it stays one readable line.
std::string adapter_text(const std::string& s) { return excerpt_text(s, 200); }

// The last line the adapter wrote on its stderr (its own reason for failing: Python's "can't
// open file", a stack trace's last line): the file it went to, read from `from` on (its size
// when this adapter started: the file may hold another's lines before); "" when none. A long
// line keeps its end, where the reason is.
std::string stderr_tail(const std::filesystem::path& path, std::uintmax_t from) {
    std::string text = path.empty() ? "" : read_from(path, from);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    if (const auto nl = text.find_last_of('\n'); nl != std::string::npos) text.erase(0, nl + 1);
    return text.size() > 200 ? "..." + text.substr(text.size() - 197) : text;
}

// A node index from an answer's "nodes" or "removed_on": kept only within the history's node
// mask (32 bits; a run has at most 16 nodes), so that a wild number is dropped, not shifted
// past the mask. adapter-check tells the adapter's author about it.
std::optional<int> node_index(const nlohmann::json& n) {
    if (!n.is_number_integer()) return std::nullopt;
    const long long i = n.get<long long>();
    if (i < 0 || i >= 32) return std::nullopt;
    return static_cast<int>(i);
}

// An answer's "error", for the history: whatever JSON the adapter put there, as text (a number
// there is the adapter's odd choice, not a reason to fail the client).
std::string error_of(const nlohmann::json& answer, const char* otherwise) {
    const auto error = answer.find("error");
    if (error == answer.end()) return otherwise;
    return adapter_text(error->is_string() ? error->get<std::string>() : error->dump());
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
    return "stopped";
}

// The probe's command on a node: what remains of this lease there if the key still holds its
// token, else -2 as for a missing key (another client's key is not this lock's TTL). The token
// is a string key's value, a hash's field (Redisson's layout), or a sorted set's member scored
// with its own expiry in the server's milliseconds (Symfony's RedisStore): the key's PTTL, or
// the member's own remainder where it is sooner.
const char* const kOurKeyTtl = R"lua(
local kind = redis.call('type', KEYS[1]).ok
local pttl = redis.call('pttl', KEYS[1])
if kind == 'string' and redis.call('get', KEYS[1]) == ARGV[1] then return pttl end
if kind == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then return pttl end
if kind == 'zset' then
  local expiry = redis.call('zscore', KEYS[1], ARGV[1])
  if not expiry then return -2 end
  local now = redis.call('time')
  local left = math.floor(tonumber(expiry) - (tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)))
  if left <= 0 then return -2 end
  if pttl < 0 then return left end
  return math.min(pttl, left)
end
return -2)lua";

// What the servers say remains of the lock, read right after the library's answer through
// this client's own paths, node by node: the truth the library's validity_ms is held against
// (analysis: validity_*). The nodes the adapter named; if it named none (node-redlock 4.2.0
// cannot tell), every node, which the token check keeps honest. A lease without a token gets
// a plain PTTL, and only where the adapter named it.
std::vector<std::optional<long long>> probe_key_ttl(Env& env, const std::string& key, const Lease& lease,
                                                    Duration timeout) {
    std::vector<std::optional<long long>> ttl_ms(static_cast<size_t>(env.node_count()));
    std::vector<NodeId> nodes = lease.nodes;
    if (nodes.empty() && !lease.token.empty())
        for (int i = 0; i < env.node_count(); ++i) nodes.push_back(NodeId{i});
    for (const NodeId n : nodes) {
        if (n.value < 0 || n.value >= env.node_count()) continue;
        const Command probe = lease.token.empty() ? Command{"PTTL", key} : Command{"EVAL", kOurKeyTtl, "1", key, lease.token};
        const Reply r = env.command(n, probe, timeout);
        if (r.ok() && r.value.type == Value::Type::integer) ttl_ms[static_cast<size_t>(n.value)] = r.value.integer;
    }
    return ttl_ms;
}

}  // namespace

AdapterProcess start_adapter_process(const AdapterSpec& spec_, bool own_group) {
    // Everything the child needs is built before fork.
    std::vector<std::string> env_s;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry = *e;
        if (!spec_.env.contains(entry.substr(0, entry.find('=')))) env_s.push_back(entry);
    }
    for (const auto& [k, v] : spec_.env) env_s.push_back(k + "=" + v);
    std::vector<std::string> argv_s = spec_.command;
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string cwd = spec_.cwd.string();
    const std::string err_path = spec_.stderr_path.string();
    // If exec fails, the child says so in the protocol's own words: {"ready": false, ...}. The
    // why goes where the last '@' is (a command or folder may hold one of its own).
    const std::string exec_failed =
        nlohmann::json({{"ready", false}, {"error", "cannot execute " + spec_.command.front() + ": @"}}).dump();
    const std::string exec_head = exec_failed.substr(0, exec_failed.rfind('@'));
    const std::string exec_tail = exec_failed.substr(exec_failed.rfind('@') + 1) + "\n";
    const std::string cwd_failed =
        nlohmann::json({{"ready", false}, {"error", "cannot enter its folder (cwd) " + cwd + ": @"}}).dump();
    const std::string cwd_head = cwd_failed.substr(0, cwd_failed.rfind('@'));
    const std::string cwd_tail = cwd_failed.substr(cwd_failed.rfind('@') + 1) + "\n";

    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw AdapterError(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(in[0]);
        ::close(in[1]);
        throw AdapterError(std::string("pipe: ") + std::strerror(e));
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int e = errno;
        for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
        throw AdapterError(std::string("fork: ") + std::strerror(e));
    }
    if (pid == 0) {
        // A client's own adapter is in the client's process group: the nemesis's SIGSTOP/SIGKILL
        // to the group lands on both. A pooled one leads a group of its own, which the nemesis
        // signals beside the client's. Either dies with the thread that started it.
        if (own_group) ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) _exit(126);
        // A blocked mask and an ignored SIGPIPE survive exec: the client's (SIGUSR1/2 held
        // for its background control, SIGPIPE for our pipes) are not the adapter's.
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGPIPE, SIG_DFL);
        // No file it writes, its stderr first, grows past the cap: an adapter flooding its log
        // cannot fill the disk. Past it a write fails (EFBIG: SIGXFSZ ignored, which exec keeps)
        // and the rest is lost; the run says so in the file (live_run.cpp).
        const rlimit cap{kAdapterFileCapBytes, kAdapterFileCapBytes};
        ::setrlimit(RLIMIT_FSIZE, &cap);
        ::signal(SIGXFSZ, SIG_IGN);
        ::dup2(in[0], STDIN_FILENO);
        ::dup2(out[1], STDOUT_FILENO);
        if (!err_path.empty()) {
            const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (err >= 0) ::dup2(err, STDERR_FILENO);
        }
        // Descriptors the client opened without O_CLOEXEC (its connections) stay out of the adapter.
        ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
        // Only async-signal-safe calls here (the client may have threads): the line in parts.
        const auto say = [](const std::string& head, const std::string& tail) {
            const char* why = strerrordesc_np(errno);
            for (const std::string_view part : {std::string_view(head), std::string_view(why ? why : "?"), std::string_view(tail)})
                if (::write(STDOUT_FILENO, part.data(), part.size()) < 0) return;
        };
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
            say(cwd_head, cwd_tail);
            _exit(126);
        }
        ::execvpe(argv[0], argv.data(), envp.data());
        say(exec_head, exec_tail);
        _exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    if (own_group) ::setpgid(pid, pid);  // the child does it too; whichever runs first wins the race
    return {pid, in[1], out[0]};
}

ExternalLock::ExternalLock(AdapterSpec spec, std::string key, long long ttl_ms)
    : spec_(std::move(spec)), key_(std::move(key)), ttl_ms_(ttl_ms) {
    if (spec_.command.empty()) fail("no command");
    ::signal(SIGPIPE, SIG_IGN);  // a dead adapter is an EPIPE to report, not a signal
    if (!spec_.pool.empty()) {
        if (auto lease = take_pooled_adapter(spec_, false)) {
            pooled_ = std::move(*lease);
            if (start_pooled()) return;
            // None could be had: the client's own, as without a pool.
            pooled_.reset();
            pool_stderr_.clear();
            stderr_to_.clear();
            pid_ = -1;
            to_ = from_ = -1;
        }
    }
    if (std::error_code ec; !spec_.stderr_path.empty()) {
        stderr_from_ = std::filesystem::file_size(spec_.stderr_path, ec);
        if (ec) stderr_from_ = 0;
    }
    try {
        const AdapterProcess p = start_adapter_process(spec_, false);
        pid_ = p.pid;
        to_ = p.to;
        from_ = p.from;
    } catch (const AdapterError& e) {
        fail(e.what(), false);
    }
    hello(read_hello());
}

// A pooled adapter, as the pool handed it: one it has just started says its ready line; one
// that served an earlier repetition is reset for this one (docs/adapters.md: reset) and answers
// as a ready line would. An adapter that cannot reset, or fails to, is ended and another
// started in its place (false: none could be taken; the client then starts its own).
bool ExternalLock::start_pooled() {
    for (;;) {
        pid_ = pooled_->pid;
        to_ = pooled_->to;
        from_ = pooled_->from;
        stderr_to_ = spec_.stderr_path;
        pool_stderr_ = pooled_->stderr_path;
        stderr_from_ = pooled_->stderr_from;
        if (pooled_->fresh) {
            hello(read_hello());
            return true;
        }
        try {
            resetting_ = true;
            const nlohmann::json r = call({{"op", "reset"}, {"env", spec_.env}}, nullptr, true);
            resetting_ = false;
            if (r.at("ok").get<bool>()) {
                hello(r);
                requests_.clear();
                last_request_ = "its reset";
                return true;
            }
            drop_pooled("reset");
        } catch (const AdapterError&) {  // fail() has ended it: another is started
        }
        resetting_ = false;
        gone_why_.clear();
        buffer_.clear();
        last_line_.clear();
        stray_.clear();
        auto fresh = take_pooled_adapter(spec_, true);
        if (!fresh) return false;
        pooled_ = std::move(*fresh);
    }
}

// Ends the pooled adapter: the pool kills its group; its stderr so far goes to the run's file.
void ExternalLock::drop_pooled(const char* refused) {
    copy_pooled_stderr();
    if (pooled_) drop_pooled_adapter(*pooled_, refused ? refused : resetting_ && !pooled_->fresh ? "broken" : nullptr);
    pid_ = -1;
    for (int* fd : {&to_, &from_})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
}

// What the pooled adapter wrote on stderr while this client had it, into the run's own file.
void ExternalLock::copy_pooled_stderr() {
    if (pool_stderr_.empty() || stderr_to_.empty()) return;
    const std::string text = read_from(pool_stderr_, stderr_from_);
    if (!text.empty()) std::ofstream(stderr_to_, std::ios::app) << text;
    stderr_from_ += text.size();
}


nlohmann::json ExternalLock::read_hello() {
    // A library may take a while to load (a JVM, node_modules): at least 10 s, or what
    // LOCKBENCH_ADAPTER_READY_MS says (a matrix's attempt after a set-up that failed).
    const auto ready_wait = std::max(spec_.op_timeout, adapter_ready_wait());
    const std::string line = read_line(std::chrono::steady_clock::now() + ready_wait, ready_wait,
                                       "its first line, {\"ready\": true, ...}");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    // Only true or false is an answer ("ready": "yes" breaks the protocol; value() would throw).
    const bool said = j.is_object() && j.contains("ready") && j.at("ready").is_boolean();
    if (said && !j.at("ready").get<bool>() && j.contains("error") && j.at("error").is_string())
        fail("not ready: " + adapter_text(j.at("error").get<std::string>()), false);
    if (!said || !j.at("ready").get<bool>()) fail("its first line should be {\"ready\": true, \"library\": ...}");
    return j;
}

// What the ready line (or a reset's answer) says of the library, as run.json records it and
// the report's table shows it: each a line of sane length.
void ExternalLock::hello(const nlohmann::json& hello) {
    described_ = nlohmann::json::object();
    for (const char* field : {"library", "algorithm"})
        if (hello.contains(field) && hello.at(field).is_string()) described_[field] = adapter_text(hello.at(field));
    library_ = described_.value("library", std::string());
    if (hello.contains("fencing") && hello.at("fencing").is_boolean()) described_["fencing"] = hello.at("fencing");
}

ExternalLock::~ExternalLock() {
    if (pooled_) {
        // Whole and answered, and its library's connections dropped now, before this run's
        // servers go and another run's may take their ports: the pool keeps it for another
        // repetition. One that cannot say it dropped them is ended.
        bool closed = false;
        try {
            if (pid_ > 0) closed = call({{"op", "reset"}}).at("ok").get<bool>();
        } catch (const AdapterError&) {  // fail() has ended it
        }
        copy_pooled_stderr();
        if (pid_ > 0 && !closed) {
            drop_pooled("close");
            return;
        }
        for (int* fd : {&to_, &from_})
            if (*fd >= 0) ::close(*fd);
        if (pid_ > 0) give_back_pooled_adapter(*pooled_, spec_.pool_run);
        return;
    }
    if (to_ >= 0) ::close(to_);  // EOF on its stdin: the adapter's cue to exit
    if (pid_ > 0) {
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + 500ms;
        while (::waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(5ms);
        }
    }
    if (from_ >= 0) ::close(from_);
}

void ExternalLock::fail(const std::string& what, bool with_last_line) {
    std::string cmd;
    for (const auto& a : spec_.command) cmd += (cmd.empty() ? "" : " ") + a;
    std::string msg = "adapter " + spec_.name + " (" + excerpt_text(cmd, 200) + "): " + what;
    if (with_last_line)
        msg += last_line_.empty() ? "; it printed nothing" : "; the last thing it printed: " + adapter_text(last_line_);
    if (const std::string said = stderr_tail(pooled_ ? pool_stderr_ : spec_.stderr_path, stderr_from_); !said.empty())
        msg += "; its stderr ends: " + adapter_text(said);
    gone_why_ = msg;  // what every later call says
    // Whatever it was doing, it is done: no adapter outlives a broken conversation, and no
    // descriptor outlives it (a constructor that throws runs no destructor).
    if (pooled_) {
        drop_pooled();
        throw AdapterError(msg);
    }
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    for (int* fd : {&to_, &from_})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
    throw AdapterError(msg);
}

// Its exit status, once it has gone: an adapter that closed its end of a pipe but lives on
// gets 200 ms to exit, then SIGKILL, so that the client never hangs on it.
int ExternalLock::reap() {
    int status = 0;
    if (pid_ <= 0) return status;  // already reaped: waitpid(-1) or kill(-1) would strike others
    if (pooled_) {  // the pool's child: the pool says how it ended (200 ms to exit, else killed)
        std::optional<int> ended;
        for (int i = 0; i < 40 && !(ended = pooled_adapter_status(*pooled_, i == 39)); ++i)
            std::this_thread::sleep_for(5ms);
        pid_ = -1;
        return ended.value_or(SIGKILL);
    }
    for (int i = 0; i < 40 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(5ms);
        if (i == 39) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
    pid_ = -1;
    return status;
}

std::string ExternalLock::read_line(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds allowed,
                                    const std::string& waiting_for) {
    for (;;) {
        if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) continue;
            last_line_ = line;
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{from_, POLLIN, 0};
        // After the deadline one more short look: a client stopped by a pause (with its
        // adapter) wakes up past its deadline with the answer possibly already waiting.
        const int r = ::poll(&p, 1, static_cast<int>(std::max(left.count(), 0L)) + 20);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) {
            if (left.count() > 0) continue;
            fail("no answer within " + std::to_string(allowed.count()) + " ms (waiting for " + waiting_for + ")");
        }
        char chunk[4096];
        const ssize_t n = ::read(from_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (!buffer_.empty()) last_line_ = buffer_;
            fail(describe_status(reap()) + " while lockbench waited for " + waiting_for);
        }
        buffer_.append(chunk, static_cast<size_t>(n));
        if (buffer_.size() > kMaxLineBytes && buffer_.find('\n') == std::string::npos)
            fail("broke the protocol: a line longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB (waiting for " +
                 waiting_for + ")", false);
    }
}

bool ExternalLock::keep_if_event(const std::string& line, Env* acquiring) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    // An answer may carry an "event" field of its own: only a line without "ok" is an event.
    if (!j.is_object() || !j.contains("event") || j.contains("ok")) return false;
    // One of another kind goes to the history too (as an adapter info line), not lost. Its
    // kind comes from the whole line, not the excerpt kept of it (a long line's excerpt is
    // no JSON), and its time is now, not when the worker next looks.
    const LockEvent e{adapter_text(line), j.at("event") == "lost", monotonic_ns()};
    {
        const std::lock_guard hold(events_mutex_);
        events_.push_back(e);
    }
    if (acquiring && j.at("event") == "waiting") acquiring->reach(Point::in_line);
    return true;
}

nlohmann::json ExternalLock::call(const nlohmann::json& request, Env* acquiring, bool reset) {
    const std::lock_guard hold(mutex_);
    // fail() has killed it and closed the pipes: nothing to write to, nobody to reap.
    if (pid_ <= 0 || to_ < 0) throw AdapterError(gone_why_.empty() ? "adapter " + spec_.name + ": already gone" : gone_why_);
    // What came since the last answer must be events only: a second answer read now as this
    // request's would turn a release's reply into an acquire's grant. Before a reset, what the
    // adapter said after its last repetition's answers (a library's late event) is that one's.
    read_unsolicited();
    if (reset) {
        stray_.clear();
        const std::lock_guard hold_events(events_mutex_);
        events_.clear();
    }
    if (!stray_.empty()) fail_stray();
    const std::string op = request.value("op", std::string("?"));
    last_request_ = op + " #" + std::to_string(++requests_[op]);
    const std::string text = request.dump() + "\n";
    for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(to_, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(describe_status(reap()) + " before it read " + request.dump());
        done += static_cast<size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() + spec_.op_timeout;
    std::string line = read_line(deadline, spec_.op_timeout, "its answer to " + op);
    while (keep_if_event(line, acquiring)) line = read_line(deadline, spec_.op_timeout, "its answer to " + op);
    if (reset) {  // events before a reset's answer are the library's last words before it
        const std::lock_guard hold_events(events_mutex_);
        events_.clear();
    }
    nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
    if (reply.is_discarded() || !reply.is_object() || !reply.contains("ok") || !reply.at("ok").is_boolean())
        fail("answered " + op + " with something that is not the protocol (expected {\"ok\": true|false, ...})");
    read_unsolicited();  // a second answer already there
    if (!stray_.empty()) fail_stray();
    return reply;
}

AcquireResult ExternalLock::try_acquire(Env& env) {
    const Instant start = env.now();
    const nlohmann::json r = call({{"op", "acquire"}, {"key", key_}, {"ttl_ms", ttl_ms_}, {"wait_ms", 0}}, &env);
    if (!r.at("ok").get<bool>()) return AcquireResult::fail(error_of(r, "not acquired"));
    Lease lease;
    if (r.contains("token") && r.at("token").is_string()) lease.token = r.at("token");
    // The store fences on the library's token only when the run says so ("fence": true).
    if (spec_.fence && r.contains("fence") && r.at("fence").is_number_integer())
        lease.fencing_token = r.at("fence").get<long long>();
    // The library's own validity, counted from when the acquire began.
    if (r.contains("validity_ms") && r.at("validity_ms").is_number())
        lease.valid_until = start + std::chrono::duration_cast<Duration>(
                                        std::chrono::duration<double, std::milli>(r.at("validity_ms").get<double>()));
    if (r.contains("nodes") && r.at("nodes").is_array())
        for (const auto& n : r.at("nodes"))
            if (const auto i = node_index(n)) lease.nodes.push_back(NodeId{*i});
    AcquireResult out = AcquireResult::ok(std::move(lease));
    // The key the library stored, where it is not lockbench's own (pottery's "redlock:<key>").
    const bool own_key = r.contains("key") && r.at("key").is_string();
    token_key_ = own_key ? r.at("key").get<std::string>() : key_;
    if (spec_.probe_key_ttl) out.key_ttl_ms = probe_key_ttl(env, token_key_, *out.lease, spec_.command_timeout);
    return out;
}

std::optional<bool> ExternalLock::holds(Env& env, const Lease& lease) {
    if (!spec_.redis_nodes || token_key_.empty()) return std::nullopt;
    std::vector<NodeId> every;
    for (int i = 0; i < env.node_count(); ++i) every.push_back(NodeId{i});
    return token_held(env, token_key_, lease, every, env.node_count() / 2 + 1, spec_.command_timeout);
}

ReleaseResult ExternalLock::release(Env&, const Lease&) {
    const nlohmann::json r = call({{"op", "release"}, {"key", key_}});
    if (!r.at("ok").get<bool>()) return {Outcome::fail, {}, error_of(r, "not released")};
    // Only what the adapter reports as removed counts (the foreign-release check reads it).
    std::vector<NodeId> removed;
    const bool said = r.contains("removed_on") && r.at("removed_on").is_array();
    if (said)
        for (const auto& n : r.at("removed_on"))
            if (const auto i = node_index(n)) removed.push_back(NodeId{*i});
    return {Outcome::ok, removed, "", said};
}

ExtendResult ExternalLock::extend(Env& env, const Lease&, Duration ttl, ExtendMode mode) {
    const Instant start = env.now();
    const long long ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count();
    nlohmann::json r;
    try {
        r = call({{"op", "extend"}, {"key", key_}, {"ttl_ms", ttl_ms}, {"replace", mode == ExtendMode::replace}});
    } catch (const AdapterError& e) {
        // On the renewal task: the adapter is gone, and the worker's next call says so.
        // No later extend can succeed, so the renewal stops.
        ExtendResult gone{Outcome::info, {}, {}, e.what()};
        gone.final = true;
        return gone;
    }
    if (!r.at("ok").get<bool>()) return {Outcome::fail, {}, {}, error_of(r, "not extended")};
    ExtendResult out{Outcome::ok, {}, {}, ""};
    if (r.contains("validity_ms") && r.at("validity_ms").is_number())
        out.valid_until = start + std::chrono::duration_cast<Duration>(
                                      std::chrono::duration<double, std::milli>(r.at("validity_ms").get<double>()));
    return out;
}

// Reads, without waiting, whatever the adapter has printed on its own since the last call.
// A call in flight (the renewal's extend) holds the pipe: it reads those lines itself, and
// this takes only what is already kept, rather than wait for its round trip.
std::vector<LockEvent> ExternalLock::take_events() {
    if (std::unique_lock pipe(mutex_, std::try_to_lock); pipe.owns_lock()) read_unsolicited();
    const std::lock_guard hold(events_mutex_);
    return std::exchange(events_, {});
}

void ExternalLock::read_unsolicited() {
    for (pollfd p{from_, POLLIN, 0}; from_ >= 0 && ::poll(&p, 1, 0) > 0; p.revents = 0) {
        char chunk[4096];
        const ssize_t n = ::read(from_, chunk, sizeof chunk);
        if (n <= 0) break;  // a dead adapter: the worker's next call reports it
        buffer_.append(chunk, static_cast<size_t>(n));
    }
    for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        last_line_ = line;
        if (!keep_if_event(line) && stray_.empty()) stray_ = line;  // the next call fails on it
    }
}

void ExternalLock::fail_stray() {
    fail("broke the protocol: a line that answers no request, after " + last_request_ + ": " + adapter_text(stray_), false);
}

}  // namespace lockbench
