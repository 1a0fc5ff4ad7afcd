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

// Its text, or nullopt when the process is gone (or was gone by the time it was read).
inline std::optional<std::string> proc_stat(pid_t pid) {
    const int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string text;
    char chunk[1024];
    ssize_t n = 0;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
    ::close(fd);
    if (n < 0 || text.empty()) return std::nullopt;
    return text;
}

}  // namespace lockbench::testing_util
