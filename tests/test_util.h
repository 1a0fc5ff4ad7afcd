// Helpers shared by the tests: a live redis-server straight through hiredis (for tests that
// check the server itself, not lockbench's environment), a scoped environment variable, and
// a bounded wait for an outcome.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace lockbench::testing_util {

using Context = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

// Connected to 127.0.0.1:port with 2 s connect and command timeouts (check ->err).
inline Context connect_to(int port) {
    Context c(redisConnectWithTimeout("127.0.0.1", port, timeval{2, 0}), redisFree);
    if (c && !c->err) redisSetTimeout(c.get(), timeval{2, 0});
    return c;
}

template <typename... Args>
Reply command(const Context& c, const char* format, Args... args) {
    return Reply(static_cast<redisReply*>(redisCommand(c.get(), format, args...)), freeReplyObject);
}

// Sets an environment variable for one scope.
class EnvOverride {
public:
    EnvOverride(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value.c_str(), 1);
    }
    ~EnvOverride() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
    EnvOverride(const EnvOverride&) = delete;
    EnvOverride& operator=(const EnvOverride&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

// Polls for an outcome; the bound only keeps a broken build from hanging the suite.
inline bool eventually(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!condition()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace lockbench::testing_util
