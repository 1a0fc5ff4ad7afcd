// Talking to a live redis-server straight through hiredis, for tests that check the server
// itself (not through lockbench's environment).
#pragma once

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <memory>

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

}  // namespace lockbench::testing_util
