#include "sim/engine/fault_spec.h"

namespace lockbench {

const char* fault_kind_name(FaultSpec::Kind k) {
    switch (k) {
        case FaultSpec::Kind::pause: return "pause";
        case FaultSpec::Kind::kill: return "kill";
        case FaultSpec::Kind::gate: return "gate";
        case FaultSpec::Kind::clock: return "clock";
        case FaultSpec::Kind::link: return "link";
        case FaultSpec::Kind::crash: return "crash";
    }
    return "?";
}

std::optional<Point> parse_point(const std::string& name) {
    for (Point p : {Point::before_acquire, Point::during_acquire, Point::between_setnx_and_expire, Point::after_seen_expired,
                    Point::after_acquire, Point::before_write, Point::before_release})
        if (name == point_name(p)) return p;
    return std::nullopt;
}

std::optional<Point> parse_reported_point(const std::string& name) {
    return name == point_name(Point::in_line) ? std::optional(Point::in_line) : parse_point(name);
}

std::string node_text(int node) {
    if (node == kLeaderNode) return "leader";
    if (node == kFollowerNode) return "follower";
    return std::to_string(node);
}

namespace {

std::string number_text(double ms) {
    std::string s = std::to_string(ms);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
}

// "500 ms", "100..300 ms", "mean 400 ms": a drawn length as a label says it.
std::string describe_ms(const Distribution& d) {
    switch (d.kind) {
        case Distribution::Kind::fixed: return number_text(d.a) + " ms";
        case Distribution::Kind::uniform: return number_text(d.a) + ".." + number_text(d.b) + " ms";
        case Distribution::Kind::exponential: return "mean " + number_text(d.a) + " ms";
    }
    return "?";
}

}  // namespace

std::string FaultSpec::label() const {
    std::string s = fault_kind_name(kind);
    if (kind == Kind::pause) s += " " + (duration_drawn_ms ? describe_ms(*duration_drawn_ms) : std::to_string(duration_ms) + " ms");
    if (kind == Kind::pause && node) s += " of node " + node_text(*node);
    if (kind == Kind::pause && background) s += " of background tasks";
    if (kind == Kind::gate && !until_another_enters && !until_leader) s += " " + std::to_string(count) + " clients";
    if (kind == Kind::clock) {
        if (jump_ms) s += " " + std::string(jump_ms > 0 ? "+" : "") + std::to_string(jump_ms) + " ms";
        if (rate) s += " rate " + std::to_string(*rate);
        if (node) s += " on node " + node_text(*node);
    }
    if (kind == Kind::link) {
        s += " " + describe(link);
        for (int n : link_nodes) s += " n" + std::to_string(n);
        if (link_store) s += " store";
        if (link_replication) s += " replication";
        if (link_peers) s += " peers of node " + node_text(node.value_or(0));
        if (duration_drawn_ms) s += " for " + describe_ms(*duration_drawn_ms);
        else if (duration_ms) s += " for " + std::to_string(duration_ms) + " ms";
    }
    if (until_another_enters) s += " until another enters (at most " + std::to_string(max_ms) + " ms)";
    if (until_leader) s += " until a server leads (at most " + std::to_string(max_ms) + " ms)";
    if (keep_holder_ms)
        s += ", then keeps it in its section until client " + std::to_string(client.value_or(0)) +
             " enters, fails or waits in line behind it (at most " + std::to_string(keep_holder_ms) + " ms)";
    if (kind == Kind::crash) {
        s += " node " + node_text(node.value_or(0));
        s += restart_after_ms ? ", restart after " + std::to_string(*restart_after_ms) + " ms" : ", no restart";
    }
    if (point) s += std::string(" at ") + point_name(*point) + " #" + std::to_string(occurrence);
    if (at_ms) s += " at " + std::to_string(*at_ms) + " ms";
    if (client) s += " on client " + std::to_string(*client);
    if (target != Target::named) s += target == Target::holder ? " on the holder" : " on a random client";
    if (every_ms) s += " every " + describe_ms(*every_ms);
    return s;
}

}  // namespace lockbench
