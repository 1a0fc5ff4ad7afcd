#include "sim/engine/json_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <vector>

#include "lockimpl/params.h"

namespace lockbench {
namespace {

std::string kind_of(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "a special file";
}

std::string size_text(std::uintmax_t bytes) {
    return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

// The file's text. Anything but a regular file is refused on its stat, before it is opened;
// should a FIFO take its place in between, O_NONBLOCK keeps the open from waiting for a writer,
// and the descriptor's own stat refuses it.
std::string read_text(const std::filesystem::path& file, const JsonInputLimits& limits) {
    const std::string name = file.string();
    const auto not_regular = [&](mode_t mode) {
        if (S_ISDIR(mode)) return JsonInputError(name + ": a folder, not a " + limits.kind + " (name one of its .json files)");
        return JsonInputError(name + ": not a regular file (" + kind_of(mode) + "), so not a " + limits.kind);
    };
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0) throw JsonInputError(name + ": cannot open: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw JsonInputError(name + ": cannot open: " + std::strerror(errno));
    std::string text;
    try {
        if (::fstat(fd, &st) != 0) throw JsonInputError(name + ": cannot read: " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
        // One byte more than allowed tells a file that is too large, even one that grows.
        char chunk[65536];
        while (text.size() <= limits.max_bytes) {
            const ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw JsonInputError(name + ": cannot read: " + std::strerror(errno));
            if (n == 0) break;
            text.append(chunk, static_cast<size_t>(n));
        }
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    if (text.size() > limits.max_bytes) {
        const std::uintmax_t bytes = std::max<std::uintmax_t>(text.size(), static_cast<std::uintmax_t>(st.st_size));
        throw JsonInputError(name + ": " + std::to_string(bytes) + " bytes; a " + limits.kind + " is at most " +
                             size_text(limits.max_bytes));
    }
    return text;
}

// The parser's callback: refuses nesting beyond the limit and a key given twice in one object.
// It follows the open objects and arrays, so as to name a duplicate by its path as the parsers
// of the formats do: runs[1].params.ttl_ms.
class Checks {
public:
    Checks(const std::string& file, int max_depth) : file_(file), max_depth_(max_depth) {}

    bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (depth > max_depth_)
            throw JsonInputError(file_ + ": nested more than " + std::to_string(max_depth_) + " levels deep");
        switch (event) {
            case Event::object_start:
            case Event::array_start: {
                std::string path = next_path();
                open_.push_back({event == Event::object_start, std::move(path), {}, {}, 0});
                break;
            }
            case Event::key: {
                Open& object = open_.back();
                object.key = parsed.get<std::string>();
                if (!object.keys.insert(object.key).second)
                    throw JsonInputError(file_ + ": " + join(object.path, object.key) +
                                         ": duplicate key (each key may appear once in an object)");
                break;
            }
            case Event::value: next_path(); break;  // counts an array's element
            case Event::object_end:
            case Event::array_end: open_.pop_back(); break;
        }
        return true;
    }

    // Where the parser was when it stopped: the field whose value it was reading ("" at the top).
    std::string where() const {
        if (open_.empty()) return "";
        const Open& in = open_.back();
        if (in.object) return in.key.empty() ? in.path : join(in.path, in.key);
        return in.path + "[" + std::to_string(in.index) + "]";
    }

private:
    struct Open {
        bool object;
        std::string path;            // "" for the top level
        std::set<std::string> keys;  // an object's keys so far
        std::string key;             // an object's latest key, whose value comes next
        size_t index;                // an array's next element
    };

    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? excerpt_text(key) : path + "." + excerpt_text(key);
    }

    // Where the value that starts now sits; in an array, that counts it.
    std::string next_path() {
        if (open_.empty()) return "";
        Open& in = open_.back();
        return in.object ? join(in.path, in.key) : in.path + "[" + std::to_string(in.index++) + "]";
    }

    std::string file_;
    int max_depth_;
    std::vector<Open> open_;
};

}  // namespace

nlohmann::json read_json_input(const std::filesystem::path& file, const JsonInputLimits& limits) {
    const std::string text = read_text(file, limits);
    Checks checks(file.string(), limits.max_depth);
    try {
        return nlohmann::json::parse(text, std::ref(checks));
    } catch (const nlohmann::json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 9: ...; last read: '...'"
        // A number too large (1e400) is named by its field: the parser stops inside that value.
        const std::string what = e.what();
        const std::string field = what.find("number overflow") != std::string::npos ? checks.where() : "";
        throw JsonInputError(file.string() + ": " + (field.empty() ? "" : field + ": ") +
                             "not valid JSON: " + excerpt_text(what.substr(what.find(']') + 2), 160));
    }
}

}  // namespace lockbench
