// /proc/PID/stat read with read(2): a process can end between the open and the read, and the
// read then fails with ESRCH, which std::ifstream turns into an exception (a test that failed
// once for it: "basic_filebuf::underflow error reading the file: No such process").
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace lockbench::testing_util {

// /proc/PID/FILE's text, or nullopt when the process is gone (or was by the time it was read).
inline std::optional<std::string> proc_file(pid_t pid, const std::string& file) {
    const int fd = ::open(("/proc/" + std::to_string(pid) + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string text;
    char chunk[1024];
    ssize_t n = 0;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
    ::close(fd);
    if (n < 0 || text.empty()) return std::nullopt;
    return text;
}

inline std::optional<std::string> proc_stat(pid_t pid) { return proc_file(pid, "stat"); }

// The argument of a process's command line that follows `flag` ("-D"), or that starts with it
// ("--datadir="), less the flag; "" when it has none or is gone.
inline std::string argument_of(pid_t pid, const std::string& flag) {
    const std::string line = proc_file(pid, "cmdline").value_or("");
    bool next = false;
    for (size_t at = 0; at < line.size();) {
        const std::string arg = line.c_str() + at;
        at += arg.size() + 1;
        if (next) return arg;
        if (arg == flag) next = true;
        else if (flag.ends_with("=") && arg.starts_with(flag)) return arg.substr(flag.size());
    }
    return "";
}

}  // namespace lockbench::testing_util
