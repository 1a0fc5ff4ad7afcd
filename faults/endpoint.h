// Where a server listens: what a client dials and what a link proxy forwards to.
#pragma once

#include <string>

namespace lockbench {

struct Endpoint {
    std::string host = "127.0.0.1";
    int port = 0;
};

}  // namespace lockbench
