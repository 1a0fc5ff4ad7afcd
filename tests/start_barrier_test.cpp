// The live runs' start line (sim/live/start_barrier.h): every client that says it is ready gets
// the one start instant; a client that died before saying so is not waited for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "sim/live/start_barrier.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The test's own folder, removed when the test ends.
struct BarrierDir {
    fs::path dir = fs::temp_directory_path() / ("lockbench-barrier-" + std::to_string(::getpid()));
    BarrierDir() { fs::create_directories(dir); }
    ~BarrierDir() { std::error_code ec; fs::remove_all(dir, ec); }
    fs::path prefix(const char* name) const { return dir / name; }
};

TEST(StartBarrier, EveryReadyClientGetsTheOneStartInstant) {
    const BarrierDir dir;
    lockbench::StartBarrier barrier(dir.prefix("all"));
    std::vector<long long> got(3, -1);
    std::vector<std::thread> clients;
    for (int c = 0; c < 3; ++c)
        clients.emplace_back([&, c] { got[static_cast<size_t>(c)] = lockbench::await_start(barrier.prefix(), c); });
    barrier.wait_ready(3, [](int) { return true; }, 60s);
    barrier.release(123456789);
    for (auto& t : clients) t.join();
    EXPECT_EQ(got, std::vector<long long>(3, 123456789));
}

TEST(StartBarrier, AClientThatDiedIsNotWaitedForAndOneStillMissingIsNamed) {
    const BarrierDir dir;
    lockbench::StartBarrier barrier(dir.prefix("dead"));
    // Nobody has said it is ready: both are named once the time is up.
    try {
        barrier.wait_ready(2, [](int) { return true; }, 0ms);
        ADD_FAILURE() << "clients that never said they are ready were not waited for";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("clients 0, 1 not ready"), std::string::npos) << e.what();
    }
    // Client 1 died before saying so: the barrier waits for client 0 alone.
    long long got = -1;
    std::thread zero([&] { got = lockbench::await_start(barrier.prefix(), 0); });
    barrier.wait_ready(2, [](int c) { return c != 1; }, 60s);
    barrier.release(42);
    zero.join();
    EXPECT_EQ(got, 42);
}

}  // namespace
