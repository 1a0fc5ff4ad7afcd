// "kill": the client dies for good (SIGKILL; in the simulator its fiber unwinds), as a
// crashed application server does; whatever lock it held stays until its lease runs out.
#include "sim/engine/fault_kind.h"

namespace lockbench {
namespace {

bool fire(FaultFiring& on) {
    on.killed();  // marked first: it may be reaped at once
    on.log("start");
    on.world().kill(on.client());
    return false;
}

std::string words(const nlohmann::json&, const FaultWords& w) { return "client killed" + w.where; }

}  // namespace

const FaultKind& kill_kind() {
    static const FaultKind entry{
        .kind = FaultSpec::Kind::kill,
        .name = "kill",
        .noun = "a kill",
        .blocks_client = true,
        .no_repeat = "a kill happens once",
        .fire = fire,
        .words = words,
        .shapes = {{.name = "client kill", .draw = [](FaultDraw&, nlohmann::json&) {}}},
    };
    return entry;
}

}  // namespace lockbench
