#include "analysis/verdict.h"

#include "analysis/run_summary.h"

namespace lockbench {

const std::vector<Verdict>& verdicts() {
    static const std::vector<Verdict> all{Verdict::adapter_broke, Verdict::two_holders, Verdict::unsafe,
                                          Verdict::holder_write_refused, Verdict::stale_write_refused, Verdict::unavailable, Verdict::safe};
    return all;
}

std::string_view verdict_word(Verdict v) {
    switch (v) {
        case Verdict::adapter_broke: return "adapter broke";
        case Verdict::two_holders: return "2 holders";
        case Verdict::unsafe: return "unsafe";
        case Verdict::holder_write_refused: return "holder's write refused";
        case Verdict::stale_write_refused: return "stale write refused";
        case Verdict::unavailable: return "unavailable";
        case Verdict::safe: return "safe";
    }
    return "safe";
}

std::string_view verdict_meaning(Verdict v) {
    switch (v) {
        case Verdict::adapter_broke: return "a client failed because its adapter broke the protocol: not trusted";
        case Verdict::two_holders: return "two critical sections under different leases overlapped in the store";
        case Verdict::unsafe: return "no overlap, but a lost update, an accepted stale write or someone else's lock released";
        case Verdict::holder_write_refused:
            return "the store's check refused a write of the lock's current holder (the lock server said so right "
                   "after): its fence or token ran against the grants; nothing unsafe got in";
        case Verdict::stale_write_refused:
            return "the store's check (fence or token) refused a stale write and nothing unsafe got in";
        case Verdict::unavailable: return "nothing unsafe, but no section completed";
        case Verdict::safe: return "none of these";
    }
    return "none of these";
}

std::optional<Verdict> parse_verdict(std::string_view word) {
    for (Verdict v : verdicts())
        if (verdict_word(v) == word) return v;
    return std::nullopt;
}

std::string verdict_word_list() {
    std::string out;
    for (Verdict v : verdicts()) out += (out.empty() ? "\"" : ", \"") + std::string(verdict_word(v)) + "\"";
    return out;
}

Verdict verdict_of(const RunFigures& f, const std::vector<ClientFailure>& clients_failed) {
    if (!clients_failed.empty()) return Verdict::adapter_broke;
    if (f.metric("mutual_exclusion_violations") > 0) return Verdict::two_holders;
    if (f.metric("lost_updates") > 0 || f.metric("stale_writes_accepted") > 0 || f.metric("foreign_releases") > 0)
        return Verdict::unsafe;
    if (f.metric("holder_writes_rejected") > 0) return Verdict::holder_write_refused;
    if (f.metric("stale_writes_rejected") > 0) return Verdict::stale_write_refused;
    if (f.metric("sections_completed") == 0) return Verdict::unavailable;
    return Verdict::safe;
}

}  // namespace lockbench
