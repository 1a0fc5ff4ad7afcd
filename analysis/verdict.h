// One repetition's verdict, in the words of the verdict table: computed here from the
// checker's figures, once, and written into the results (summary.json's "verdict"); the
// tables, the report and `lockbench verdict` read it and never derive it again.
//
//   adapter broke        a client failed because its adapter broke the protocol: not trusted
//   2 holders            two critical sections under different leases overlapped in the store
//   unsafe               no overlap, but a lost update, an accepted stale write or someone
//                        else's lock released
//   stale write refused  the store's check (fence or token) refused a stale write and nothing
//                        unsafe got in
//   unavailable          nothing unsafe, but no section completed
//   safe                 none of these
//
// Worst first: a cell of several repetitions is coloured by the worst of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockbench {

struct RunFigures;
struct ClientFailure;

enum class Verdict { adapter_broke, two_holders, unsafe, stale_write_refused, unavailable, safe };

// Every verdict, worst first.
const std::vector<Verdict>& verdicts();
std::string_view verdict_word(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view word);
// "safe, unavailable, ..." for a message listing the words.
std::string verdict_word_list();

Verdict verdict_of(const RunFigures& figures, const std::vector<ClientFailure>& clients_failed);

}  // namespace lockbench
