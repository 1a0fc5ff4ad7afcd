#include "sim/live/start_barrier.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;

namespace lockbench {
namespace {

fs::path with_suffix(const fs::path& prefix, const char* suffix) { return prefix.string() + suffix; }

int open_fifo(const fs::path& path, int flags) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(path.string() + ": cannot open: " + std::strerror(errno));
    return fd;
}

}  // namespace

StartBarrier::StartBarrier(fs::path prefix) : prefix_(std::move(prefix)) {
    for (const char* suffix : {".ready", ".go"})
        if (::mkfifo(with_suffix(prefix_, suffix).c_str(), 0600) != 0)
            throw std::runtime_error(with_suffix(prefix_, suffix).string() + ": cannot make a FIFO: " +
                                     std::strerror(errno));
    ready_fd_ = open_fifo(with_suffix(prefix_, ".ready"), O_RDWR | O_NONBLOCK);
    try {
        go_fd_ = open_fifo(with_suffix(prefix_, ".go"), O_RDWR);
    } catch (...) {
        ::close(ready_fd_);  // no destructor runs for a constructor that throws
        throw;
    }
}

StartBarrier::~StartBarrier() {
    if (ready_fd_ >= 0) ::close(ready_fd_);
    if (go_fd_ >= 0) ::close(go_fd_);
}

void StartBarrier::wait_ready(int clients, const std::function<bool(int)>& alive, std::chrono::milliseconds timeout) {
    std::vector<bool> ready(static_cast<size_t>(clients), false);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        unsigned char buf[64];
        ssize_t n;
        while ((n = ::read(ready_fd_, buf, sizeof buf)) > 0)
            for (ssize_t i = 0; i < n; ++i)
                if (buf[i] < ready.size()) ready[buf[i]] = true;
        std::string missing;
        for (int c = 0; c < clients; ++c)
            if (!ready[static_cast<size_t>(c)] && alive(c)) missing += (missing.empty() ? "" : ", ") + std::to_string(c);
        if (missing.empty()) return;
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error("clients " + missing + " not ready to start within " +
                                     std::to_string(timeout.count()) + " ms");
        pollfd p{ready_fd_, POLLIN, 0};
        ::poll(&p, 1, 5);  // a client that dies says nothing: look again soon
    }
}

void StartBarrier::release(long long start_at_ns) {
    const fs::path start = with_suffix(prefix_, ".start");
    const fs::path tmp = with_suffix(prefix_, ".start.tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << start_at_ns << "\n";
        if (!out.flush()) throw std::runtime_error(tmp.string() + ": cannot write");
    }
    fs::rename(tmp, start);
    ::close(go_fd_);  // the last writer of PREFIX.go: every client's read returns EOF
    go_fd_ = -1;
}

long long await_start(const fs::path& prefix, int client) {
    // Opened before saying "ready": the parent still holds PREFIX.go then, so its close is the
    // EOF this client waits for (a reader that opened after the last writer left would wait
    // forever).
    const int go = open_fifo(with_suffix(prefix, ".go"), O_RDONLY | O_NONBLOCK);
    ::fcntl(go, F_SETFL, ::fcntl(go, F_GETFL) & ~O_NONBLOCK);
    int ready = -1;
    try {
        ready = open_fifo(with_suffix(prefix, ".ready"), O_WRONLY);
    } catch (...) {
        ::close(go);
        throw;
    }
    const unsigned char byte = static_cast<unsigned char>(client);
    const bool said = ::write(ready, &byte, 1) == 1;
    ::close(ready);
    if (!said) throw std::runtime_error(with_suffix(prefix, ".ready").string() + ": cannot write");
    char c;
    ssize_t n;
    while ((n = ::read(go, &c, 1)) != 0)
        if (n < 0 && errno != EINTR) break;
    ::close(go);
    std::ifstream in(with_suffix(prefix, ".start"));
    long long start_at_ns = 0;
    if (!(in >> start_at_ns)) throw std::runtime_error(with_suffix(prefix, ".start").string() + ": no start instant");
    return start_at_ns;
}

}  // namespace lockbench
