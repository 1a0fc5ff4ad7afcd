#include "sim/engine/recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "sim/engine/clock.h"

namespace lockbench {

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    append_json_escaped(out, s);
    return out;
}

void append_json_escaped(std::string& out, std::string_view s) {
    out += '"';
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

HistoryLine& HistoryLine::str(std::string_view key, std::string_view value) {
    if (event_) {
        if (!skip_) event_->str(key, value);
        return *this;
    }
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
    text_ += json_escape(value);
    return *this;
}

HistoryLine& HistoryLine::num(std::string_view key, long long value) {
    if (event_) {
        if (!skip_) event_->num(key, value);
        return *this;
    }
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
    text_ += std::to_string(value);
    return *this;
}

HistoryLine& HistoryLine::real(std::string_view key, double value) {
    if (event_) {
        // As the file path sees it: the value printed with 3 decimals (to_chars rounds as
        // printf's %.3f does), read back.
        char buf[64];
        const auto end = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 3).ptr;
        double read = 0;
        std::from_chars(buf, end, read);
        if (!skip_) event_->real(key, read);
        return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", value);
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
    text_ += buf;
    return *this;
}

HistoryLine& HistoryLine::nodes(std::uint32_t mask) {
    if (event_) {
        if (!skip_) event_->nodes(mask);
        return *this;
    }
    text_ += ",\"nodes\":[";
    bool first = true;
    for (int n = 0; n < 32; ++n) {
        if (!(mask & (1u << n))) continue;
        if (!first) text_ += ',';
        text_ += std::to_string(n);
        first = false;
    }
    text_ += ']';
    return *this;
}

HistoryLine& HistoryLine::ints(std::string_view key, const std::vector<std::optional<long long>>& values) {
    if (event_) {
        if (!skip_) event_->ints(key, values);
        return *this;
    }
    text_ += ",\"";
    text_ += key;
    text_ += "\":[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) text_ += ',';
        text_ += values[i] ? std::to_string(*values[i]) : "null";
    }
    text_ += ']';
    return *this;
}

void HistoryLine::commit() {
    if (event_) {
        if (!skip_) event_->finish();
        skip_ = true;  // once
        return;
    }
    text_ += "}\n";
    recorder_.write(text_);
}

Recorder::Recorder(const std::string& path, int client) : client_(client) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
}

Recorder::~Recorder() {
    flush();
    if (fd_ >= 0) ::close(fd_);
}

void Recorder::flush() {
    if (fd_ < 0 || buffer_.empty()) return;
    std::string text = std::move(buffer_);
    buffer_.clear();
    write_now(text);
}

HistoryLine Recorder::line(std::string_view op, std::string_view type) {
    return line_at(clock_ ? clock_() : monotonic_ns(), op, type);
}

HistoryLine Recorder::line_at(long long t_ns, std::string_view op, std::string_view type) {
    if (events_) {
        HistoryLine line(*this, *events_);
        line.skip_ = !line.event_->begin(t_ns, client_, op, type);
        return line;
    }
    std::string prefix = "{\"t_ns\":" + std::to_string(t_ns) + ",\"client\":" + std::to_string(client_) + ",\"op\":\"";
    prefix += op;
    prefix += "\",\"type\":\"";
    prefix += type;
    prefix += '"';
    return HistoryLine(*this, std::move(prefix));
}

void Recorder::write(std::string& text) {
    if (fd_ < 0) return;
    if (buffered_) {  // one thread (a simulated world): no lock, one write(2) per 64 KiB
        buffer_ += text;
        if (buffer_.size() > 65536) flush();
        return;
    }
    std::lock_guard lock(mutex_);
    write_now(text);
}

void Recorder::write_now(const std::string& text) {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a full disk loses history lines; the checker sees the gap
        p += n;
        left -= static_cast<size_t>(n);
    }
}

}  // namespace lockbench
