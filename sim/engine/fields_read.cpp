#include "sim/engine/fields_read.h"

#include <atomic>
#include <cctype>
#include <mutex>

namespace lockbench {
namespace {

// One log for the process: parsers run in whichever thread reads a file (explore's pool too),
// so the set is guarded; the flag is read without the lock, so that a parse pays nothing more
// while nobody records.
struct FieldLog {
    std::atomic<bool> on{false};
    std::mutex mutex;
    std::set<std::string> paths;
};

FieldLog& field_log() {
    static FieldLog log;
    return log;
}

}  // namespace

void record_fields_read(bool on) {
    FieldLog& log = field_log();
    const std::lock_guard hold(log.mutex);
    if (on) log.paths.clear();
    log.on.store(on, std::memory_order_relaxed);
}

std::set<std::string> fields_read() {
    FieldLog& log = field_log();
    const std::lock_guard hold(log.mutex);
    return log.paths;
}

std::string field_pattern(const std::string& object) {
    std::string out;
    for (size_t i = 0; i < object.size(); ++i) {
        out += object[i];
        if (object[i] != '[') continue;
        size_t j = i + 1;
        while (j < object.size() && std::isdigit(static_cast<unsigned char>(object[j]))) ++j;
        if (j > i + 1 && j < object.size() && object[j] == ']') i = j - 1;  // drop the digits, keep ']'
    }
    return out;
}

void note_field_read(const std::string& object, const std::string& key) {
    FieldLog& log = field_log();
    if (!log.on.load(std::memory_order_relaxed)) return;
    std::string path = field_pattern(object);
    path += path.empty() ? key : "." + key;
    const std::lock_guard hold(log.mutex);
    log.paths.insert(std::move(path));
}

}  // namespace lockbench
