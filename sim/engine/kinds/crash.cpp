// "crash": a lock node dies (its connections lost, its data too without persistence) and,
// with restart_after_ms, is started again then; the schedule waits for it to answer and for a
// client to ask it something before any wait's bound counts (fault_schedule.cpp).
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;

void parse(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string&) {
    if (!s.node) f.fail(f.at("node"), "required: which lock node crashes");
    if (f.get("restart_after_ms"))
        s.restart_after_ms = f.integer("restart_after_ms", 0, 0, w.duration_ms - 1 - s.at_ms.value_or(0),
                                       "the restart would come after the run: " + scenario_parse::run_ends(w));
    if (s.repeats() && !s.restart_after_ms)
        f.fail(f.at("restart_after_ms"), "required for a repeating crash: the node comes back before the next");
}

std::string label(const FaultSpec& s) {
    return " node " + node_text(s.node.value_or(0)) +
           (s.restart_after_ms ? ", restart after " + std::to_string(*s.restart_after_ms) + " ms" : ", no restart");
}

bool fire(FaultFiring& on) {
    on.world().crash(on.node());
    on.log("start");
    if (on.spec().restart_after_ms) on.restarts_after(*on.spec().restart_after_ms);
    return true;
}

bool stays(const FaultSpec& s) { return !s.restart_after_ms; }

void needs(const FaultSpec&, WorldNeeds& n) {
    n.loses_messages = true;
    n.crashes_server = true;
}

std::string words(const nlohmann::json& f, const FaultWords& w) {
    std::string restarted = ", restarted";
    if (w.keeps_data) restarted += *w.keeps_data ? " with its data" : " empty";
    return "node crash" + w.where + (f.contains("restart_after_ms") ? restarted : ", stays down");
}

void draw(FaultDraw& d, nlohmann::json& f) {
    f["node"] = d.node();
    if (!d.chance(0.25)) f["restart_after_ms"] = d.chance(0.5) ? 0LL : std::min(d.scaled(-2, 1), d.duration_ms() - 1 - f.value("at_ms", 0LL));
    if (f.contains("at_ms")) f.erase("client");  // a node at a time names no client
}

}  // namespace

const FaultKind& crash_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::crash,
        .name = "crash",
        .noun = "a crash",
        .aims_at_node = true,
        .own_fields = {"restart_after_ms"},
        .parse = parse,
        .label = label,
        .lease_scaled = {"restart_after_ms"},
        .fire = fire,
        .stays = stays,
        .needs = needs,
        .words = words,
        .shapes = {{.name = "node crash", .node_fault = true, .draw = draw}},
    };
    return entry;
}

}  // namespace lockbench
