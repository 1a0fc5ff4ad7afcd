// FNV-1a, 64 bits: a stable name for bytes where no adversary is at stake, only damage and
// drift (a matrix spec's id, the files a checker read). One helper, so that every digest the
// project writes is the same function.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace lockbench {

class Fnv1a {
public:
    void add(std::string_view bytes) {
        for (const unsigned char c : bytes) h_ = (h_ ^ c) * 1099511628211ull;
    }
    std::uint64_t value() const { return h_; }
    std::string hex() const {  // 16 hex digits
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
        return buf;
    }

private:
    std::uint64_t h_ = 14695981039346656037ull;
};

}  // namespace lockbench
