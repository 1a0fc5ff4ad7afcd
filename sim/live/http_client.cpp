// A blocking HTTP/1.0 client over one socket with a deadline; see http_client.h.
#include "sim/live/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace lockbench {
namespace {

using Clock = std::chrono::steady_clock;

struct Socket {
    int fd;
    ~Socket() {
        if (fd >= 0) close(fd);
    }
};

// Waits until fd is ready for `events` or the deadline passes; false on timeout or error.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = poll(&p, 1, static_cast<int>(left.count()));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

bool connect_by(int fd, int port, Clock::time_point deadline) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return true;
    if (errno != EINPROGRESS || !wait_ready(fd, POLLOUT, deadline)) return false;
    int error = 0;
    socklen_t len = sizeof error;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
}

bool send_all(int fd, std::string_view data, Clock::time_point deadline) {
    while (!data.empty()) {
        if (!wait_ready(fd, POLLOUT, deadline)) return false;
        const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Everything the server sends until it closes the connection.
std::optional<std::string> read_to_end(int fd, Clock::time_point deadline) {
    std::string received;
    char buffer[4096];
    for (;;) {
        if (!wait_ready(fd, POLLIN, deadline)) return std::nullopt;
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) return received;
        received.append(buffer, static_cast<std::size_t>(n));
    }
}

// "HTTP/1.x 200 OK\r\n...\r\n\r\nbody": the status code and the body.
std::optional<HttpResponse> parse(const std::string& raw) {
    const auto headers_end = raw.find("\r\n\r\n");
    if (!raw.starts_with("HTTP/1.") || headers_end == std::string::npos) return std::nullopt;
    const auto space = raw.find(' ');
    if (space == std::string::npos || space + 4 > raw.size()) return std::nullopt;
    const int status = std::atoi(raw.substr(space + 1, 3).c_str());
    if (status < 100 || status > 599) return std::nullopt;
    return HttpResponse{status, raw.substr(headers_end + 4)};
}

std::string request_text(int port, std::string_view method, std::string_view path, std::string_view body) {
    std::string text = std::string(method) + " " + std::string(path) + " HTTP/1.0\r\nHost: 127.0.0.1:" +
                       std::to_string(port) + "\r\n";
    if (!body.empty())
        text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    return text + "\r\n" + std::string(body);
}

}  // namespace

std::optional<std::string> loopback_exchange(int port, std::string_view request, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    Socket sock{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (sock.fd < 0 || !connect_by(sock.fd, port, deadline)) return std::nullopt;
    if (!send_all(sock.fd, request, deadline)) return std::nullopt;
    return read_to_end(sock.fd, deadline);
}

std::optional<HttpResponse> http_request(int port, std::string_view method, std::string_view path,
                                         std::string_view body, std::chrono::milliseconds timeout) {
    const auto raw = loopback_exchange(port, request_text(port, method, path, body), timeout);
    return raw ? parse(*raw) : std::nullopt;
}

}  // namespace lockbench
