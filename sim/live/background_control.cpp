#include "sim/live/background_control.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace lockbench {
namespace {

sigset_t background_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    return set;
}

int connect_to(const std::string& socket_path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + socket_path);
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const std::string why = std::strerror(errno);
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("cannot reach the nemesis at " + socket_path + ": " + why);
    }
    return fd;
}

// A lost acknowledgement only makes the nemesis wait its limit: nothing to do about it here.
void say(int fd, const std::string& line) {
    [[maybe_unused]] const ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
}

}  // namespace

BackgroundControl::BackgroundControl(const std::string& socket_path, int client, std::shared_ptr<BackgroundGate> gate)
    : gate_(std::move(gate)) {
    const sigset_t set = background_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    fd_ = connect_to(socket_path);
    say(fd_, "background " + std::to_string(client) + "\n");
    thread_ = std::thread([this] { take_signals(); });
}

BackgroundControl::~BackgroundControl() {
    stopping_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
    gate_->release();
    ::close(fd_);
}

void BackgroundControl::take_signals() {
    const sigset_t set = background_signals();
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        if (sig == SIGUSR1) {
            gate_->hold();
            say(fd_, "held\n");
        } else {
            gate_->release();
            if (stopping_) return;
            say(fd_, "released\n");
        }
    }
}

}  // namespace lockbench
