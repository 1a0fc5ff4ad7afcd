// A tiny blocking HTTP/1.0 client for servers lockbench runs on 127.0.0.1 (etcd's JSON
// gateway and /health). None of the project's dependencies speaks HTTP, and a request here is
// one short exchange on loopback, so a socket with a deadline does: HTTP/1.0 makes the server
// close the connection after its answer, so the body ends where the stream does.
//
//   http_request ── connect (non-blocking, poll) ── send request ── read to EOF ── parse
//                   └──────────────── one deadline over all of it ───────────────┘
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace lockbench {

// Sends `request` to 127.0.0.1:port and reads until the server closes the connection, within
// `timeout` in all; none when refused, reset or timed out. Both HTTP/1.0 and ZooKeeper's
// four-letter words are such one-shot exchanges.
std::optional<std::string> loopback_exchange(int port, std::string_view request, std::chrono::milliseconds timeout);

struct HttpResponse {
    int status = 0;    // 200, 404, ...
    std::string body;  // everything after the headers
};

// One request to http://127.0.0.1:port<path>, with `body` as its JSON content when non-empty.
// None when no complete answer came within `timeout` in all: refused, reset, timed out (a
// paused server accepts the connection but never answers), or not HTTP.
std::optional<HttpResponse> http_request(int port, std::string_view method, std::string_view path,
                                         std::string_view body, std::chrono::milliseconds timeout);

}  // namespace lockbench
