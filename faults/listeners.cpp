#include "faults/listeners.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace lockbench {

namespace fs = std::filesystem;

namespace {

// The sockets process `pid` has open (its threads share them): inode → one fd of it.
std::map<std::string, int> socket_fds(pid_t pid) {
    std::map<std::string, int> fds_of;
    std::error_code ec;
    // increment(ec), not a range-for, whose ++ throws when the process ends meanwhile.
    fs::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec), end;
    for (; !ec && fds != end; fds.increment(ec)) {
        std::error_code link_ec;
        const std::string target = fs::read_symlink(fds->path(), link_ec).string();
        if (!link_ec && target.starts_with("socket:["))
            fds_of.emplace(target.substr(8, target.size() - 9), std::atoi(fds->path().filename().c_str()));
    }
    return fds_of;
}

struct TcpEntry {
    std::string local, remote, state, inode;  // endpoints as /proc/net/tcp{,6} write them
};

// Every TCP socket of this network namespace, IPv4 and IPv6.
std::vector<TcpEntry> tcp_table() {
    std::vector<TcpEntry> out;
    for (const std::string table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, queues, timer, retransmits, uid, timeout;
            TcpEntry e;
            fields >> slot >> e.local >> e.remote >> e.state >> queues >> timer >> retransmits >> uid >> timeout >> e.inode;
            out.push_back(e);
        }
    }
    return out;
}

}  // namespace

bool TcpListener::loopback() const {
    return address == "0100007F" || address == "0000000000000000FFFF00000100007F" ||
           address == "00000000000000000000000001000000";
}

std::string TcpListener::text() const {
    if (ipv6) return "ipv6 " + address + ":" + std::to_string(port);
    in_addr addr{static_cast<in_addr_t>(std::stoul(address, nullptr, 16))};
    return std::string(inet_ntoa(addr)) + ":" + std::to_string(port);
}

std::vector<TcpListener> tcp_listeners(pid_t pid) {
    const auto fds = socket_fds(pid);
    std::vector<TcpListener> out;
    if (fds.empty()) return out;
    for (const TcpEntry& e : tcp_table()) {
        if (e.state != "0A" || !fds.contains(e.inode)) continue;  // 0A: LISTEN
        const auto colon = e.local.rfind(':');
        if (colon == std::string::npos) continue;
        // An IPv6 table's address is 32 hex digits, an IPv4 one's 8.
        out.push_back({e.local.substr(0, colon), std::stoi(e.local.substr(colon + 1), nullptr, 16), colon > 8});
    }
    return out;
}

bool listens_on(pid_t pid, int port) {
    for (const TcpListener& l : tcp_listeners(pid))
        if (l.port == port) return true;
    return false;
}

int end_direct_connections(pid_t a, pid_t b) {
    const auto fds_a = socket_fds(a), fds_b = socket_fds(b);
    std::set<std::pair<std::string, std::string>> b_ends;  // (local, remote) of b's established sockets
    const std::vector<TcpEntry> table = tcp_table();
    for (const TcpEntry& e : table)
        if (e.state == "01" && fds_b.contains(e.inode)) b_ends.insert({e.local, e.remote});  // 01: ESTABLISHED
    int ended = 0;
    int pidfd = -1;
    for (const TcpEntry& e : table) {
        if (e.state != "01" || !fds_a.contains(e.inode) || !b_ends.contains({e.remote, e.local})) continue;
        if (pidfd < 0 && (pidfd = static_cast<int>(syscall(SYS_pidfd_open, a, 0))) < 0) {
            if (errno == ESRCH) return ended;  // a ended meanwhile: so did its connections
            throw std::runtime_error("cannot reach the sockets of process " + std::to_string(a) + ": pidfd_open: " + std::strerror(errno));
        }
        const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fds_a.at(e.inode), 0));
        if (fd < 0) {
            if (errno == EBADF || errno == ESRCH) continue;  // closed, or the process ended, meanwhile
            const int error = errno;
            close(pidfd);
            throw std::runtime_error("cannot reach a socket of process " + std::to_string(a) + ": pidfd_getfd: " + std::strerror(error));
        }
        // The fd number may have been closed and given to another socket since /proc was read:
        // shut down only the socket seen there.
        struct stat st {};
        if (fstat(fd, &st) == 0 && std::to_string(st.st_ino) == e.inode && shutdown(fd, SHUT_RDWR) == 0) ++ended;
        close(fd);
    }
    if (pidfd >= 0) close(pidfd);
    return ended;
}

}  // namespace lockbench
