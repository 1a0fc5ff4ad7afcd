// One repetition's verdict, in the words of the verdict table: computed here from the
// checker's figures, once, and written into the results (summary.json's "verdict"); the
// tables, the report and `lockbench verdict` read it and never derive it again. The words,
// their order and what each means (verdict.cpp) are defined here alone: the report reads
// them from report/facts.json, which `lockbench list --json` writes.
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

enum class Verdict { adapter_broke, two_holders, unsafe, holder_write_refused, stale_write_refused, unavailable, safe };

// Every verdict, worst first.
const std::vector<Verdict>& verdicts();
std::string_view verdict_word(Verdict v);
// What the word means, in one line ("no overlap, but a lost update, ...").
std::string_view verdict_meaning(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view word);
// "safe, unavailable, ..." for a message listing the words.
std::string verdict_word_list();

Verdict verdict_of(const RunFigures& figures, const std::vector<ClientFailure>& clients_failed);

}  // namespace lockbench
