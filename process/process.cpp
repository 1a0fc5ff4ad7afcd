// Child processes that cannot outlive lockbench; see process.h for the rules they follow.
//
//   spawn():  build argv/envp ── block signals ── fork ──┬─ parent: setpgid, register, unblock,
//                                                        │          read the error pipe
//                                                        └─ child:  setpgid, stdio, [user],
//                                                                   PDEATHSIG, parent check,
//                                                                   signals, exec
//                                                                   (errno → error pipe on failure)
//
// Between fork and exec the child may only make async-signal-safe calls (another thread may
// hold the allocator's lock at the moment of fork), so everything it needs is built before.
#include "process/process.h"
#include "process/stopped.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace fs = std::filesystem;

extern char** environ;

namespace lockbench {
namespace {

// ---- Registry of live child process groups, readable from a signal handler ----------------
//
// A fixed array of lock-free atomics: a handler may run at any moment, on any thread, and can
// neither take a lock nor walk a container that is being resized.

constexpr int registry_slots = 256;
std::atomic<pid_t> live_groups[registry_slots];
static_assert(std::atomic<pid_t>::is_always_lock_free);

bool register_group(pid_t pgid) {
    for (auto& slot : live_groups) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, pgid)) return true;
    }
    return false;
}

void unregister_group(pid_t pgid) {
    for (auto& slot : live_groups) {
        pid_t expected = pgid;
        if (slot.compare_exchange_strong(expected, 0)) return;
    }
}

void kill_all_groups() {  // async-signal-safe
    for (auto& slot : live_groups) {
        const pid_t pgid = slot.load();
        if (pgid > 0) ::kill(-pgid, SIGKILL);
    }
}

// ---- Descendants that left their group ------------------------------------------------------
//
// A daemon (a child that calls setsid) leaves its process group, so no group kill reaches it;
// with PR_SET_CHILD_SUBREAPER it is re-parented to this process when its own parent ends, so
// ending every child of this process, until none is left, ends everything it started. What
// follows is async-signal-safe: raw open, getdents64, read, kill and waitpid, no allocation.

struct LinuxDirent64 {
    ino64_t d_ino;
    off64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

// "123" as 123; -1 for anything else.
long digits_of(const char* s) {
    long n = 0;
    if (!*s) return -1;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9') return -1;
        n = n * 10 + (*s - '0');
    }
    return n;
}

// The parent of `pid`, from /proc/<pid>/stat ("pid (comm) state ppid ..."); -1 if gone, or
// dead already (a zombie: whoever adopted it reaps it).
pid_t parent_of(long pid) {
    char path[40] = "/proc/";
    char digits[24];
    int len = 0;
    for (long p = pid; p > 0 && len < 20; p /= 10) digits[len++] = static_cast<char>('0' + p % 10);
    int at = 6;
    while (len > 0) path[at++] = digits[--len];
    const char* tail = "/stat";
    for (int i = 0; tail[i]; ++i) path[at++] = tail[i];
    path[at] = '\0';
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char stat[512];
    const ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0) return -1;
    stat[n] = '\0';
    const char* close_paren = nullptr;  // the comm may hold spaces and parentheses: the last one ends it
    for (const char* c = stat; *c; ++c)
        if (*c == ')') close_paren = c;
    if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ') return -1;
    if (close_paren[2] == 'Z' || close_paren[2] == 'X') return -1;
    long ppid = 0;
    for (const char* c = close_paren + 4; *c >= '0' && *c <= '9'; ++c) ppid = ppid * 10 + (*c - '0');
    return static_cast<pid_t>(ppid);
}

// One pass over /proc: SIGKILLs every live child of this process; how many it found. None is
// reaped here: a handler must not take a status that the code it interrupted waits for.
// The cgroup guard, our child (end_everything_started_when_gone()): not killed with the rest.
volatile pid_t guard_pid = -1;

int kill_children_once() {
    const pid_t self = getpid();
    const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 0;
    int found = 0;
    alignas(LinuxDirent64) char buf[8192];
    for (long n; (n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0;) {
        for (long off = 0; off < n;) {
            const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
            off += d->d_reclen;
            const long pid = digits_of(d->d_name);
            if (pid <= 0 || pid == guard_pid || parent_of(pid) != self) continue;
            ::kill(static_cast<pid_t>(pid), SIGKILL);
            ++found;
        }
    }
    close(dir);
    return found;
}

}  // namespace

void adopt_orphans() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

// A guard (kill_own_group_when_gone) outlives the process it watches, so it ends as an orphan of
// the nearest subreaper: the run, and, once the run is gone, the matrix above it, which starts
// no guard itself and never waits for one. Its zombies are reaped here by pid; the status of a
// child that a ChildProcess of this process waits for is never taken.
void reap_orphaned_guards() {
    const pid_t self = getpid();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const long pid = digits_of(entry.path().filename().c_str());
        if (pid <= 0) continue;
        std::ifstream in(entry.path() / "stat");
        std::string stat;
        if (!std::getline(in, stat)) continue;
        // "pid (comm) state ppid ...": the comm may hold spaces and parentheses.
        const size_t open_paren = stat.find('('), close_paren = stat.rfind(')');
        if (open_paren == std::string::npos || close_paren == std::string::npos) continue;
        if (stat.compare(open_paren + 1, close_paren - open_paren - 1, "lockbench-guard") != 0) continue;
        std::istringstream rest(stat.substr(close_paren + 1));
        char state = 0;
        pid_t ppid = 0;
        if (rest >> state >> ppid && state == 'Z' && ppid == self)
            ::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG);
    }
}

// Until a pass finds none: a child killed in one pass may have had children of its own, which
// come to this process as it dies.
void kill_all_descendants() {
    for (int pass = 0; pass < 100 && kill_children_once() > 0; ++pass) {
        const timespec pause{0, 2'000'000};
        nanosleep(&pause, nullptr);
    }
}

namespace {

void cleanup_and_reraise(int sig) {
    const int saved_errno = errno;
    kill_all_groups();
    kill_all_descendants();
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    // The signal is blocked while its handler runs, so this one is delivered on return and
    // ends the process with the status a shell expects (130 for Ctrl-C).
    raise(sig);
    errno = saved_errno;
}

// ---- What the child needs, prepared before fork ---------------------------------------------

// Why the child could not exec; sent through the error pipe.
enum class ChildStage : int { stdin_open, stdout_open, stderr_open, user, exec };

struct ChildFailure {
    ChildStage stage;
    int error;
};

struct ExecPlan {
    std::string path;                // resolved program
    std::vector<std::string> env;    // storage for envp
    std::vector<char*> argv;         // null-terminated, points into opts.argv
    std::vector<char*> envp;         // null-terminated, points into env
    const char* stdout_path;
    const char* stderr_path;
    std::optional<uid_t> uid;        // SpawnOptions::user, looked up before fork
    gid_t gid = 0;
};

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The parent's environment with `extra` added, an extra entry replacing one of the same name.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry = *e;
        bool replaced = false;
        for (const auto& x : extra) replaced = replaced || env_name(x) == env_name(entry);
        if (!replaced) env.push_back(entry);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

ExecPlan make_plan(const SpawnOptions& opts) {
    if (opts.argv.empty()) throw std::invalid_argument("spawn: empty argv");
    const std::string& program = opts.argv.front();
    ExecPlan plan;
    if (program.find('/') != std::string::npos) {
        plan.path = program;
    } else if (auto found = find_on_path(program)) {
        plan.path = *found;
    } else {
        throw std::runtime_error("cannot start " + program + ": not found on PATH");
    }
    for (const auto& arg : opts.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
    plan.argv.push_back(nullptr);
    plan.env = merged_environment(opts.extra_env);
    for (auto& entry : plan.env) plan.envp.push_back(entry.data());
    plan.envp.push_back(nullptr);
    plan.stdout_path = opts.stdout_path.empty() ? "/dev/null" : opts.stdout_path.c_str();
    plan.stderr_path = opts.stderr_path.empty() ? "/dev/null" : opts.stderr_path.c_str();
    if (!opts.user.empty()) {
        const passwd* user = getpwnam(opts.user.c_str());
        if (!user) throw std::runtime_error("cannot start " + program + ": no user " + opts.user + " on this machine");
        if (geteuid() != 0 && geteuid() != user->pw_uid)
            throw std::runtime_error("cannot start " + program + " as " + opts.user + ": lockbench is not root");
        plan.uid = user->pw_uid;
        plan.gid = user->pw_gid;
    }
    return plan;
}

// ---- The child, between fork and exec (async-signal-safe calls only) ------------------------

[[noreturn]] void child_fail(int error_fd, ChildStage stage) {
    const ChildFailure failure{stage, errno};
    [[maybe_unused]] ssize_t n = write(error_fd, &failure, sizeof failure);
    _exit(127);
}

bool redirect(const char* path, int flags, int target_fd) {
    const int fd = open(path, flags, 0644);
    if (fd < 0) return false;
    if (fd != target_fd) {
        dup2(fd, target_fd);
        close(fd);
    }
    return true;
}

void reset_signals() {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    // SIG_IGN survives exec, and our cleanup handlers must not run in the child; SIGKILL,
    // SIGSTOP and glibc's internal signals refuse, which is fine.
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void run_child(const ExecPlan& plan, pid_t parent, int error_fd) {
    setpgid(0, 0);
    // Its output files are opened as lockbench: they stay lockbench's, in a folder the user
    // it runs as need not reach.
    const int out = O_WRONLY | O_CREAT | O_APPEND;
    if (!redirect("/dev/null", O_RDONLY, STDIN_FILENO)) child_fail(error_fd, ChildStage::stdin_open);
    if (!redirect(plan.stdout_path, out, STDOUT_FILENO)) child_fail(error_fd, ChildStage::stdout_open);
    if (!redirect(plan.stderr_path, out, STDERR_FILENO)) child_fail(error_fd, ChildStage::stderr_open);
    // A change of user clears the parent-death signal: it comes first.
    if (plan.uid && (setgroups(0, nullptr) != 0 || setgid(plan.gid) != 0 || setuid(*plan.uid) != 0))
        child_fail(error_fd, ChildStage::user);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died before prctl took effect; then no signal will ever come.
    if (getppid() != parent) _exit(127);
    // Descriptors the parent opened without O_CLOEXEC (sockets, files) must not leak into
    // the child: a leaked listening socket would keep a port busy after we close it.
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    reset_signals();
    execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
    child_fail(error_fd, ChildStage::exec);
}

// ---- The parent's side ----------------------------------------------------------------------

std::string describe(const ChildFailure& f, const SpawnOptions& opts) {
    const std::string why = std::strerror(f.error);
    switch (f.stage) {
        case ChildStage::stdin_open: return "cannot open /dev/null: " + why;
        case ChildStage::stdout_open: return "cannot open " + opts.stdout_path + ": " + why;
        case ChildStage::stderr_open: return "cannot open " + opts.stderr_path + ": " + why;
        case ChildStage::user: return "cannot run as " + opts.user + ": " + why;
        case ChildStage::exec: return why;
    }
    return why;
}

// Blocks until exec succeeded (the pipe closes empty) or the child reported why it failed.
std::optional<ChildFailure> read_child_failure(int error_fd) {
    ChildFailure failure{};
    ssize_t n;
    do {
        n = read(error_fd, &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof failure)) return failure;
    return std::nullopt;
}

pid_t waitpid_retrying(pid_t pid, int* status, int options) {
    pid_t r;
    do {
        r = waitpid(pid, status, options);
    } while (r < 0 && errno == EINTR);
    return r;
}

// Forks with every signal blocked, so that neither our cleanup handler nor any other runs in
// the child before it has reset them, and registers the child before a signal can land.
pid_t fork_registered(const ExecPlan& plan, int error_fd) {
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) run_child(plan, parent, error_fd);
    const int fork_errno = errno;
    bool registered = false;
    if (pid > 0) {
        setpgid(pid, pid);  // the child does it too; whichever runs first wins the race
        registered = register_group(pid);
        if (!registered) ::kill(-pid, SIGKILL);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(fork_errno));
    if (!registered) {
        waitpid_retrying(pid, nullptr, 0);
        throw std::runtime_error("too many child processes (limit " +
                                 std::to_string(registry_slots) + ")");
    }
    return pid;
}

}  // namespace

// ---- ChildProcess ---------------------------------------------------------------------------

ChildProcess ChildProcess::spawn(const SpawnOptions& opts) {
    const ExecPlan plan = make_plan(opts);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("cannot start ") + opts.argv[0] + ": pipe: " +
                                 std::strerror(errno));
    ChildProcess child;
    try {
        child.pid_ = fork_registered(plan, fds[1]);
    } catch (...) {
        close(fds[0]);
        close(fds[1]);
        throw;
    }
    close(fds[1]);
    const auto failure = read_child_failure(fds[0]);
    close(fds[0]);
    if (failure) {
        child.kill_and_reap();
        throw std::runtime_error("cannot start " + opts.argv[0] + ": " + describe(*failure, opts));
    }
    return child;
}

ChildProcess::~ChildProcess() { kill_and_reap(); }

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(std::exchange(other.status_, std::nullopt)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
        kill_and_reap();
        pid_ = std::exchange(other.pid_, -1);
        status_ = std::exchange(other.status_, std::nullopt);
    }
    return *this;
}

bool ChildProcess::running() {
    if (pid_ <= 0 || status_) return false;
    // Looked at without reaping: while it is a zombie its pid still names its group, so the
    // rest of the group can be killed without striking a stranger who got the pid since. What
    // it started of its own (an adapter's `java` or `go` child, a shell's job) is in that
    // group, and would otherwise live on with no parent.
    siginfo_t info{};
    int exited;
    do {
        exited = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    } while (exited < 0 && errno == EINTR);
    if (exited == 0 && info.si_pid == 0) return true;
    if (exited == 0) ::kill(-pid_, SIGKILL);
    int status = 0;
    const pid_t r = waitpid_retrying(pid_, &status, WNOHANG);
    if (r == 0) return true;
    // r < 0 means someone else reaped it (ECHILD); it is gone either way.
    status_ = r == pid_ ? status : 0;
    unregister_group(pid_);
    return false;
}

void ChildProcess::signal(int sig) {
    // Once reaped, the pid may belong to a stranger: never signal it.
    if (pid_ > 0 && !status_) ::kill(-pid_, sig);
}

bool ChildProcess::stop(std::chrono::milliseconds timeout) {
    if (pid_ <= 0 || status_) return true;
    signal(SIGSTOP);
    return wait_none_running({pid_}, timeout);
}

void ChildProcess::kill_and_reap() {
    if (pid_ <= 0 || status_) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    const pid_t r = waitpid_retrying(pid_, &status, 0);
    status_ = r == pid_ ? status : 0;
    unregister_group(pid_);
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return status_;
}

// ---- Free functions -------------------------------------------------------------------------

bool is_executable_file(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> find_on_path(const std::string& program) {
    const char* path_env = std::getenv("PATH");
    const std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    std::size_t begin = 0;
    while (begin <= path.size()) {
        std::size_t end = path.find(':', begin);
        if (end == std::string::npos) end = path.size();
        std::string dir = path.substr(begin, end - begin);
        if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
        const std::string candidate = dir + "/" + program;
        if (is_executable_file(candidate)) return candidate;
        begin = end + 1;
    }
    return std::nullopt;
}

void install_cleanup_on_signals() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction previous {};
        sigaction(sig, nullptr, &previous);
        // Started under nohup (or with SIGINT ignored by a shell): keep honouring that.
        if (previous.sa_handler == SIG_IGN) continue;
        struct sigaction action {};
        action.sa_handler = cleanup_and_reraise;
        sigfillset(&action.sa_mask);  // one cleanup at a time
        sigaction(sig, &action, nullptr);
    }
}

void kill_own_group_when_gone() {
    const pid_t group = getpgrp();
    if (group != getpid()) return;  // someone else's group (a shell's job): not ours to kill
    int fds[2];
    // Close-on-exec: the write end stays in this process alone, not in what it starts.
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t guard = fork();
    if (guard < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    if (guard == 0) {
        // A group of its own, so that a pause of ours does not stop it; none of our
        // descriptors but the read end (a connection it kept would never close).
        setpgid(0, 0);
        prctl(PR_SET_NAME, "lockbench-guard");
        dup2(fds[0], 3);
        close_range(4, ~0U, 0);
        char byte;
        while (read(3, &byte, 1) < 0 && errno == EINTR) {
        }
        // End of file: the process is gone. Its pid stays the group's while a member lives;
        // were none left, the pid would have to come round to a new group in this instant.
        ::kill(-group, SIGKILL);
        _exit(0);
    }
    close(fds[0]);
}

namespace {

int guard_pipe = -1;  // the write end of the cgroup guard's pipe, held by this process alone
std::string guard_left_cgroup;  // the cgroup this process was in before it made its own

// The folder of this process's cgroup in the cgroup v2 hierarchy: where cgroup2 is mounted
// (/proc/self/mounts) joined with the "0::" line of /proc/self/cgroup.
std::optional<fs::path> own_cgroup2() {
    std::ifstream mounts("/proc/self/mounts");
    std::string device, mount_point, type, rest;
    std::optional<fs::path> root;
    while (mounts >> device >> mount_point >> type && std::getline(mounts, rest))
        if (type == "cgroup2") {
            root = mount_point;
            break;
        }
    if (!root) return std::nullopt;
    std::ifstream cgroup("/proc/self/cgroup");
    for (std::string line; std::getline(cgroup, line);)
        if (line.starts_with("0::/")) return *root / line.substr(4);
    return std::nullopt;
}

// The pid in "lockbench-<pid>", if the name has that shape.
std::optional<pid_t> guarded_pid(const std::string& name) {
    constexpr std::string_view prefix = "lockbench-";
    if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 9 ||
        name.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
        return std::nullopt;
    return static_cast<pid_t>(std::stol(name.substr(prefix.size())));
}

bool populated(const fs::path& dir) {
    std::ifstream events(dir / "cgroup.events");
    std::string key, value;
    while (events >> key >> value)
        if (key == "populated") return value != "0";
    return false;  // gone
}

// Kills everything in the cgroup `dir`, waits (at most 10 s) until it is empty, removes it.
void end_cgroup(const fs::path& dir) {
    if (std::ofstream kill_file(dir / "cgroup.kill"); kill_file) kill_file << "1" << std::flush;
    for (int pass = 0; pass < 1000 && populated(dir); ++pass) {
        std::ifstream procs(dir / "cgroup.procs");  // a kernel before 5.14 has no cgroup.kill
        for (pid_t pid; procs >> pid;) ::kill(pid, SIGKILL);
        const timespec pause{0, 10'000'000};
        nanosleep(&pause, nullptr);
    }
    ::rmdir(dir.c_str());
}

}  // namespace

void end_everything_started_when_gone() {
    if (std::getenv("LOCKBENCH_CGROUP")) return;
    const std::optional<fs::path> here = own_cgroup2();
    if (!here) return;
    // Left by a lockbench killed while its guard was killed too (scripts/throttle ends what is
    // in its group): an empty one goes (rmdir refuses one still populated).
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(*here, ec)) {
        const auto pid = guarded_pid(entry.path().filename().string());
        if (pid && *pid != getpid() && ::kill(*pid, 0) != 0 && errno == ESRCH) ::rmdir(entry.path().c_str());
    }
    const fs::path dir = *here / ("lockbench-" + std::to_string(getpid()));
    if (::mkdir(dir.c_str(), 0755) != 0) return;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        ::rmdir(dir.c_str());
        return;
    }
    // Our child, so that a lockbench that ends normally reaps it (end_guard()) and leaves no
    // zombie for whoever adopts orphans here; kill_all_descendants() passes it by. Orphaned
    // (lockbench killed), it does its part all the same.
    const pid_t guard = fork();
    if (guard < 0) {
        close(fds[0]);
        close(fds[1]);
        ::rmdir(dir.c_str());
        return;
    }
    if (guard == 0) {
        close(fds[1]);
        setsid();  // no terminal's Ctrl-C, no group kill of ours reaches it
        prctl(PR_SET_NAME, "lockbench-cg");
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
        const int null = open("/dev/null", O_RDWR);
        for (int fd : {0, 1, 2}) dup2(null, fd);  // holds nobody's pipe open
        dup2(fds[0], 3);
        close_range(4, ~0U, 0);
        char byte;
        while (read(3, &byte, 1) < 0 && errno == EINTR) {
        }
        end_cgroup(dir);
        _exit(0);
    }
    close(fds[0]);
    guard_pid = guard;
    std::ofstream procs(dir / "cgroup.procs");
    procs << getpid() << std::flush;
    guard_pipe = fds[1];
    if (!procs) {
        end_guard();  // it removes the empty cgroup
        return;
    }
    guard_left_cgroup = here->string();
    setenv("LOCKBENCH_CGROUP", dir.c_str(), 1);
}

void end_guard() {
    if (guard_pid <= 0) return;
    // Out of the cgroup first: the guard kills whatever is still in it, and that is no longer us.
    if (!guard_left_cgroup.empty()) {
        std::ofstream back(fs::path(guard_left_cgroup) / "cgroup.procs");
        back << getpid() << std::flush;
        if (!back) return;  // still inside: the guard must wait for our end, as an orphan
    }
    close(guard_pipe);
    guard_pipe = -1;
    waitpid_retrying(guard_pid, nullptr, 0);  // end_cgroup() gives up after 10 s
    guard_pid = -1;
}

namespace {

// The pid in "lockbench.<pid>.XXXXXX", if the name has that shape.
std::optional<pid_t> run_dir_pid(const std::string& name) {
    constexpr std::string_view prefix = "lockbench.";
    if (!name.starts_with(prefix)) return std::nullopt;
    const std::size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos || dot == prefix.size()) return std::nullopt;
    const std::string digits = name.substr(prefix.size(), dot - prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
        return std::nullopt;
    return static_cast<pid_t>(std::stol(digits));
}

// Removes run folders whose lockbench died without cleaning up (SIGKILL, power cut). A live
// process, or one we may not signal (EPERM: another user's), keeps its folder.
void remove_stale_run_dirs(const fs::path& base) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
        const auto pid = run_dir_pid(entry.path().filename().string());
        if (!pid || *pid == getpid() || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
        if (::kill(*pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
    }
}

}  // namespace

std::filesystem::path make_run_temp_dir() {
    const char* tmpdir = std::getenv("TMPDIR");
    const fs::path base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    remove_stale_run_dirs(base);
    std::string pattern = (base / ("lockbench." + std::to_string(getpid()) + ".XXXXXX")).string();
    if (!mkdtemp(pattern.data()))
        throw std::runtime_error((tmpdir && *tmpdir ? "TMPDIR=" : "") + base.string() +
                                 ": cannot make lockbench's temporary folder there: " + std::strerror(errno) +
                                 (tmpdir && *tmpdir ? "; point TMPDIR at a writable folder" : ""));
    return pattern;
}


}  // namespace lockbench
