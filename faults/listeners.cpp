#include "faults/listeners.h"

#include <arpa/inet.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace lockbench {

namespace fs = std::filesystem;

namespace {

// The inodes of the sockets process `pid` has open (its threads share them).
std::set<std::string> socket_inodes(pid_t pid) {
    std::set<std::string> inodes;
    std::error_code ec;
    // increment(ec), not a range-for, whose ++ throws when the process ends meanwhile.
    fs::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec), end;
    for (; !ec && fds != end; fds.increment(ec)) {
        std::error_code link_ec;
        const std::string target = fs::read_symlink(fds->path(), link_ec).string();
        if (!link_ec && target.starts_with("socket:[")) inodes.insert(target.substr(8, target.size() - 9));
    }
    return inodes;
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
    const auto inodes = socket_inodes(pid);
    std::vector<TcpListener> out;
    if (inodes.empty()) return out;
    for (const std::string table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            if (state != "0A" || !inodes.contains(inode)) continue;  // 0A: LISTEN
            const auto colon = local.rfind(':');
            if (colon == std::string::npos) continue;
            out.push_back({local.substr(0, colon), std::stoi(local.substr(colon + 1), nullptr, 16), table.ends_with("6")});
        }
    }
    return out;
}

bool listens_on(pid_t pid, int port) {
    for (const TcpListener& l : tcp_listeners(pid))
        if (l.port == port) return true;
    return false;
}

}  // namespace lockbench
