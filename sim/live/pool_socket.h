// The sockets between a matrix's pools (sim/live/adapter_pool.h, sim/live/server_pool.h) and
// the processes of its repetitions: a Unix SOCK_SEQPACKET socket in the matrix's temporary
// folder, one JSON message per packet, descriptors passed beside a message (SCM_RIGHTS).
#pragma once

#include <string>
#include <vector>

namespace lockbench {

// One message, with descriptors for the other side to receive (at most four); false if it
// could not be sent whole.
bool send_message(int fd, const std::string& text, const std::vector<int>& fds = {});
// One message (at most 64 KiB), with the descriptors it carried (closed when `fds` is null);
// false at the connection's end or an error.
bool receive_message(int fd, std::string& text, std::vector<int>* fds = nullptr);
// A connection to the pool listening at `path`; -1 if none can be made.
int connect_to_pool(const std::string& path);
// A socket listening at `path` (a file left there is replaced); throws one line naming `who`.
int listen_on(const std::string& path, const std::string& who);

}  // namespace lockbench
