// "pause": a client stops where it is (SIGSTOP; in the simulator its fibers stop being
// scheduled) for duration_ms, as a GC pause or a stalled VM stops it; with "task":
// "background" only its background tasks (a watchdog, a renewal timer) stop; with "node" a
// lock server stops instead, its connections left open.
#include "sim/engine/fault_kind.h"
#include "sim/engine/scenario_fields.h"

namespace lockbench {
namespace {

using scenario_parse::Fields;

void parse(Fields& f, FaultSpec& s, const WorkloadSpec& w, const std::string&) {
    if (!f.get("duration_ms")) f.fail(f.at("duration_ms"), "required for a pause");
    // At a point its start is unknown; at the least it must fit in the run.
    if (!s.duration_drawn_ms)
        s.duration_ms = f.integer("duration_ms", 0, 1, w.duration_ms - s.at_ms.value_or(0),
                                  "the pause would end after the run: " + scenario_parse::run_ends(w));
    if (f.get("task")) {
        const std::string task = f.string("task", "client");
        if (task != "client" && task != "background")
            f.fail(f.at("task"), "expected \"client\" or \"background\", got " + scenario_parse::quoted_excerpt(task));
        // A lock server has no background task of the client's.
        if (task == "background" && f.get("node"))
            f.fail(f.at("task"), "a background task is a client's: a pause of a node cannot name one");
        s.background = task == "background";
    }
    if (s.node && f.get("client") && (s.at_ms || s.repeats())) f.fail(f.at("client"), "a pause of a node at a time names no client");
}

std::string label(const FaultSpec& s) {
    std::string out = " " + (s.duration_drawn_ms ? describe_ms(*s.duration_drawn_ms) : std::to_string(s.duration_ms) + " ms");
    if (s.node) out += " of node " + node_text(*s.node);
    if (s.background) out += " of background tasks";
    return out;
}

bool fire(FaultFiring& on) {
    const FaultSpec& f = on.spec();
    bool in_place = true;
    if (f.node) in_place = on.world().pause_node(on.node());
    else if (f.background) on.world().pause_background(on.client());
    else in_place = on.world().pause(on.client());
    if (!in_place)
        on.not_in_place((f.node ? "node " + std::to_string(on.node()) : "client " + std::to_string(on.client())) +
                        " did not stop: a thread of it still ran at the pause's bound");
    on.log("start");
    on.lasts();
    return true;
}

void end(FaultFiring& on) {
    const FaultSpec& f = on.spec();
    if (f.node) on.world().resume_node(on.node());
    else if (f.background) on.world().resume_background(on.client());
    else on.world().resume(on.client());
    on.ended();
    on.log("end");
}

void needs(const FaultSpec& s, WorldNeeds& n) {
    if (s.node) n.stops_server = true;
}

std::string words(const nlohmann::json& f, const FaultWords& w) {
    return std::string(f.value("task", "") == "background" ? "watchdog pause" : "pause") + w.where +
           w.than(f.value("duration_ms", 0LL), "longer", "shorter");
}

void draw_client(FaultDraw& d, nlohmann::json& f) { f["duration_ms"] = d.within_run(f, d.scaled(-2, 1.6)); }

void draw_background(FaultDraw& d, nlohmann::json& f) {
    f["task"] = "background";
    f["duration_ms"] = d.within_run(f, d.scaled(-1, 2));
}

}  // namespace

const FaultKind& pause_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::pause,
        .name = "pause",
        .noun = "a pause",
        .aims_at_node = true,
        .lasts = true,
        .waits_for_another = true,
        .own_fields = {"task"},
        .parse = parse,
        .label = label,
        .fire = fire,
        .end = end,
        .needs = needs,
        .words = words,
        .shapes = {{.name = "pause", .draw = draw_client},
                   // Only a client with a background task can have it stopped alone.
                   {.name = "watchdog pause", .offered = [](const SearchRun& r) { return r.background; }, .draw = draw_background}},
    };
    return entry;
}

}  // namespace lockbench
