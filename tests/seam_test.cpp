// The seam holds: nothing in lockimpl/ reaches the world except through Env. A simulator
// can then run the very same algorithm code in virtual time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

TEST(Seam, LockimplReachesTheWorldOnlyThroughEnv) {
    const std::regex forbidden(
        R"(#include\s*[<"](hiredis|thread|random|unistd\.h|ctime|time\.h|sys/)|steady_clock|system_clock|)"
        R"(high_resolution_clock|sleep_for|sleep_until|usleep|nanosleep|gettimeofday|clock_gettime|)"
        R"(std::rand|\brand\(|redisCommand|redisConnect)");
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(LOCKBENCH_SOURCE_DIR "/lockimpl")) {
        std::ifstream in(e.path());
        std::stringstream text;
        text << in.rdbuf();
        std::smatch m;
        const std::string s = text.str();
        EXPECT_FALSE(std::regex_search(s, m, forbidden)) << e.path() << " uses " << m.str();
        ++files;
    }
    EXPECT_GE(files, 7) << "lockimpl/ should hold the five algorithms and the seam";
}

}  // namespace
