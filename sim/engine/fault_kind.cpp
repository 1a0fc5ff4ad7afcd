#include "sim/engine/fault_kind.h"

#include <cstdlib>

namespace lockbench {

// Each kind's entry, defined in its own file of sim/engine/kinds/. The order is the search's
// (discover.cpp draws from the shapes in it: a seed draws the schedule it always drew) and the
// order a message lists kinds in.
extern const FaultKind kGateKind, kPauseKind, kClockKind, kLinkKind, kCrashKind, kKillKind;

const std::vector<const FaultKind*>& fault_kinds() {
    static const std::vector<const FaultKind*> kinds{&kGateKind, &kPauseKind, &kClockKind, &kLinkKind, &kCrashKind, &kKillKind};
    return kinds;
}

const FaultKind& fault_kind(FaultSpec::Kind kind) {
    for (const FaultKind* k : fault_kinds())
        if (k->kind == kind) return *k;
    std::abort();  // every kind has its entry (tests/compose_test.cpp, FaultKinds)
}

const FaultKind* find_fault_kind(const std::string& name) {
    for (const FaultKind* k : fault_kinds())
        if (name == k->name) return k;
    return nullptr;
}

std::string kind_nouns(bool (*has)(const FaultKind&)) {
    std::vector<std::string> nouns;
    for (const FaultKind* k : fault_kinds())
        if (has(*k)) nouns.emplace_back(k->noun);
    std::string out;
    for (std::size_t i = 0; i < nouns.size(); ++i)
        out += (i == 0 ? "" : i + 1 == nouns.size() ? " or " : ", ") + nouns[i];
    return out;
}

WorldNeeds world_needs(const std::vector<FaultSpec>& faults) {
    WorldNeeds n;
    for (const FaultSpec& f : faults)
        if (fault_kind(f.kind).needs) fault_kind(f.kind).needs(f, n);
    return n;
}

std::string FaultWords::than(long long v, const char* more, const char* less) const {
    if (!scale_ms) return "";
    return std::string(", ") + (std::llabs(v) > *scale_ms ? more : less) + " than " + scale_word;
}

}  // namespace lockbench
