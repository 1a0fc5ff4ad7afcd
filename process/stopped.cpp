#include "process/stopped.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include <filesystem>
#include <string>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

namespace lockbench {

namespace {

// What follows the command name in a /proc stat file ("S 1 234 ..."): its state letter,
// its parent and its group; empty if it cannot be read (read(2), not a stream: a task can end
// between the open and the read).
std::string stat_fields(const std::filesystem::path& stat) {
    const int fd = ::open(stat.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) return {};
    const std::string text(buffer, static_cast<std::size_t>(n));
    const auto paren = text.rfind(')');  // the command name may itself hold spaces or ')'
    return paren != std::string::npos && paren + 2 < text.size() ? text.substr(paren + 2) : std::string();
}

// The state letter of /proc/<pid>/task/<tid>/stat; '?' if it cannot be read.
char task_state(const std::filesystem::path& stat) {
    const std::string fields = stat_fields(stat);
    return fields.empty() ? '?' : fields[0];
}

}  // namespace

char process_state(pid_t pid) { return task_state("/proc/" + std::to_string(pid) + "/stat"); }

double process_cpu_seconds(pid_t pid) {
    std::istringstream fields(stat_fields("/proc/" + std::to_string(pid) + "/stat"));
    std::vector<std::string> f;  // f[0] is field 3 (state)
    for (std::string x; f.size() < 15 && fields >> x;) f.push_back(x);
    if (f.size() < 15) return 0;
    double ticks = 0;
    for (size_t i = 11; i <= 14; ++i) ticks += std::strtod(f[i].c_str(), nullptr);  // fields 14 to 17
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

namespace {

// The parent (first) or the group (second) field after the state letter of a /proc/<pid>/stat;
// -1 if unread.
pid_t field_of(const std::filesystem::path& stat, int which) {
    const std::string fields = stat_fields(stat);  // "<state> <ppid> <pgrp> ..."
    std::size_t at = fields.find(' ');
    for (int i = 1; i < which && at != std::string::npos; ++i) at = fields.find(' ', at + 1);
    if (at == std::string::npos) return -1;
    pid_t value = -1;
    std::from_chars(fields.data() + at + 1, fields.data() + fields.size(), value);
    return value;
}

enum class Threads { running, stopped, dead };

// Whether every thread is stopped, one still runs, or the process is dead (a zombie, or gone).
Threads threads_of(pid_t pid) {
    std::error_code ec;
    std::filesystem::directory_iterator tasks("/proc/" + std::to_string(pid) + "/task", ec), end;
    if (ec) return Threads::dead;
    bool any = false;
    for (; tasks != end; tasks.increment(ec)) {
        if (ec) return Threads::dead;
        const char s = task_state(tasks->path() / "stat");
        if (s == 'Z' || s == 'X') return Threads::dead;
        if (s != 'T' && s != 't') return Threads::running;
        any = true;
    }
    return any ? Threads::stopped : Threads::dead;
}

// Polls `done` every `period` until it says yes or no (a value), at most `timeout`.
template <typename Done>
bool poll_until(std::chrono::milliseconds timeout, Done done,
                std::chrono::milliseconds period = std::chrono::milliseconds(1)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const std::optional<bool> answer = done()) return *answer;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(period);
    }
}

}  // namespace

std::vector<pid_t> processes_related(Related how, pid_t of) {
    std::vector<pid_t> related;
    std::error_code ec;
    std::filesystem::directory_iterator procs("/proc", ec), end;
    for (; !ec && procs != end; procs.increment(ec)) {
        const std::string name = procs->path().filename().string();
        pid_t pid = 0;
        const auto [rest, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (error != std::errc() || rest != name.data() + name.size()) continue;
        if (field_of(procs->path() / "stat", how == Related::children ? 1 : 2) == of) related.push_back(pid);
    }
    return related;
}

bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&]() -> std::optional<bool> {
        const Threads now = threads_of(pid);
        if (now == Threads::running) return std::nullopt;
        return now == Threads::stopped;  // a dead one never stops: no wait
    });
}

bool wait_none_running(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&]() -> std::optional<bool> {
        if (std::ranges::any_of(pids, [](pid_t pid) { return threads_of(pid) == Threads::running; })) return std::nullopt;
        return true;
    });
}

bool wait_group_none_running(pid_t pgid, std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&]() -> std::optional<bool> {
        const std::vector<pid_t> members = processes_related(Related::group_members, pgid);
        const bool one_runs = std::ranges::any_of(members, [](pid_t pid) { return threads_of(pid) == Threads::running; });
        return one_runs ? std::nullopt : std::optional<bool>(true);
    });
}

bool wait_exited(pid_t pid, std::chrono::milliseconds timeout) {
    return poll_until(timeout, [&]() -> std::optional<bool> {
        siginfo_t info{};
        int r;
        do {
            r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
        } while (r < 0 && errno == EINTR);
        if (r < 0) return true;  // not ours to wait for, or reaped already: gone either way
        return info.si_pid != 0 ? std::optional<bool>(true) : std::nullopt;
    }, std::chrono::milliseconds(2));  // a child's exit is not a race to win: no need to spin
}

}  // namespace lockbench
