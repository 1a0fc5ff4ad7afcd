// The start line of a live run: every client builds its lock first (for an external library,
// its adapter has printed its ready line), then waits here; the run's start instant is set
// only once every client is ready, so a slow adapter start-up (a Node.js or Python process on
// a busy machine) never eats into the run, and no client gets a head start.
//
//   parent                                 client i
//   StartBarrier(prefix) makes two FIFOs   await_start(prefix):
//                                            open PREFIX.go for reading (the parent holds it)
//   wait_ready(): reads one byte per  ◄───── write byte i into PREFIX.ready
//     client, or notes it died               block reading PREFIX.go
//   release(start_ns): PREFIX.start,  ─────► EOF: read PREFIX.start, return it
//     then closes PREFIX.go (EOF to all)
//
// A FIFO whose last writer closes wakes every reader at once; the parent opens both FIFOs
// read-write so that no open() on either side blocks.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <vector>

namespace lockbench {

class StartBarrier {
public:
    explicit StartBarrier(std::filesystem::path prefix);
    ~StartBarrier();
    StartBarrier(const StartBarrier&) = delete;
    StartBarrier& operator=(const StartBarrier&) = delete;

    const std::filesystem::path& prefix() const { return prefix_; }
    // Waits until every client has said it is ready or is no longer running (alive(i) false);
    // throws one line naming the clients still missing after `timeout`.
    void wait_ready(int clients, const std::function<bool(int)>& alive, std::chrono::milliseconds timeout);
    // Publishes the start instant (CLOCK_MONOTONIC ns) and lets every client go.
    void release(long long start_at_ns);

private:
    std::filesystem::path prefix_;
    int ready_fd_ = -1;
    int go_fd_ = -1;
};

// The client's side: says client `client` is ready and returns the start instant.
long long await_start(const std::filesystem::path& prefix, int client);

}  // namespace lockbench
