#include "faults/stopped.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

namespace lockbench {

namespace {

// The state letter of /proc/<pid>/task/<tid>/stat; '?' if it cannot be read (read(2), not a
// stream: a task can end between the open and the read).
char task_state(const std::filesystem::path& stat) {
    const int fd = ::open(stat.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return '?';
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer - 1);
    ::close(fd);
    if (n <= 0) return '?';
    const std::string text(buffer, static_cast<std::size_t>(n));
    const auto paren = text.rfind(')');  // the command name may itself hold spaces or ')'
    return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : '?';
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

}  // namespace

bool wait_stopped(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const Threads now = threads_of(pid);
        if (now != Threads::running) return now == Threads::stopped;  // a dead one never stops: no wait
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace lockbench
