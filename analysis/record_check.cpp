#include "analysis/record_check.h"

#include <utility>

namespace lockbench {

RecordCheck::LeaseFacts& RecordCheck::facts(int lease) {
    if (leases_.size() <= static_cast<size_t>(lease)) leases_.resize(static_cast<size_t>(lease) + 1);
    return leases_[static_cast<size_t>(lease)];
}

std::string RecordCheck::history_file(int client) const {
    return (run_dir_ / "history" / ("client-" + std::to_string(client) + ".jsonl")).string();
}

void RecordCheck::begin_history(int client) {
    client_ = client;
    last_t_ns_ = 0;
    pending_.reset();
}

std::optional<std::string> RecordCheck::history_event(const ClientEvent& e, const Where& where) {
    if (e.client != client_)
        return "client " + std::to_string(e.client) + " in client " + std::to_string(client_) + "'s history";
    if (e.t_ns < last_t_ns_) return "t_ns " + std::to_string(e.t_ns) + " is earlier than the line before";
    last_t_ns_ = e.t_ns;
    if (e.type == EventType::invoke) {
        if (pending_)
            return std::string(op_name(e.op)) + " invoked while its " + op_name(*pending_) + " awaits its reply";
        pending_ = e.op;
    } else {
        if (pending_ != e.op)
            return std::string(op_name(e.op)) + " " + event_type_name(e.type) + " with no " + op_name(e.op) +
                   " invoked before it";
        pending_.reset();
    }
    if (!e.lease) return std::nullopt;
    // Only an ok is a claim about the store: a failed or timed-out operation says nothing.
    LeaseFacts& f = facts(*e.lease);
    if (e.op == OpKind::read && e.type == EventType::invoke) f.read_invoked = where;
    if (e.op == OpKind::read && e.type == EventType::ok) f.read_ok = where;
    if (e.op == OpKind::write && e.type == EventType::invoke) f.write_invoked = where;
    if (e.op == OpKind::write && e.type == EventType::ok) f.write_ok = where;
    return std::nullopt;
}

// Sequence numbers, lease ownership, and a write's exit right after it.
std::optional<std::string> RecordCheck::store_order(const StoreEntry& e) {
    const long long due = seq_ + 1;
    if (e.seq != due)
        return "seq " + std::to_string(e.seq) + " where " + std::to_string(due) + " was due (" +
               (e.seq > due ? "records are missing)" : "a duplicate or a record out of order)");
    seq_ = e.seq;
    const int owner = h_.lease_client.at(static_cast<size_t>(e.lease));
    if (owner != e.client)
        return "lease " + lease_name(e.lease) + " is client " + std::to_string(owner) + "'s, but this " +
               store_kind_name(e.kind) + " says client " + std::to_string(e.client);
    if (awaiting_exit_ && (e.kind != StoreKind::exit || e.lease != awaiting_exit_->lease))
        return std::string("the ") + store_kind_name(awaiting_exit_->kind) + " of lease " +
               lease_name(awaiting_exit_->lease) + " on the line before is not followed by its exit";
    awaiting_exit_.reset();
    return std::nullopt;
}

std::optional<std::string> RecordCheck::store_enter(const StoreEntry& e, const Where& where) {
    LeaseFacts& f = facts(e.lease);
    if (f.entered) return "lease " + lease_name(e.lease) + " enters again (it entered on line " +
                          std::to_string(f.entered->line) + ")";
    if (!f.read_invoked)
        return "lease " + lease_name(e.lease) + " enters, but " + history_file(e.client) +
               " never invoked its read (was the history cut short?)";
    if (e.read != counter_)
        return "the enter reads " + std::to_string(e.read) + ", but the writes before it left the counter at " +
               std::to_string(counter_);
    f.entered = where;
    f.enter_read = e.read;
    return std::nullopt;
}

std::optional<std::string> RecordCheck::store_write(const StoreEntry& e, const Where& where) {
    LeaseFacts& f = facts(e.lease);
    const std::string what = std::string("a ") + store_kind_name(e.kind) + " of lease " + lease_name(e.lease);
    if (!f.entered) return what + " that never entered";
    if (f.write_or_reject) return what + ", which has already written";
    if (!f.write_invoked) return what + ", but " + history_file(e.client) + " never invoked its write";
    if (e.read != *f.enter_read)
        return what + " that read " + std::to_string(e.read) + ", but its enter read " + std::to_string(*f.enter_read);
    if (e.prev != counter_)
        return what + " with prev " + std::to_string(e.prev) + ", but the writes before it left the counter at " +
               std::to_string(counter_);
    f.write_or_reject = true;
    if (e.kind == StoreKind::write) {
        f.wrote = where;
        counter_ = e.read + 1;
    }
    awaiting_exit_ = e;
    awaiting_exit_at_ = where;
    return std::nullopt;
}

std::optional<std::string> RecordCheck::store_entry(const StoreEntry& e, const Where& where) {
    if (auto wrong = store_order(e)) return wrong;
    switch (e.kind) {
        case StoreKind::enter: return store_enter(e, where);
        case StoreKind::write:
        case StoreKind::reject: return store_write(e, where);
        case StoreKind::exit: return std::nullopt;
    }
    return std::nullopt;
}

std::optional<std::string> RecordCheck::finish(long long final_counter, const std::string& run_json) const {
    if (awaiting_exit_)
        return awaiting_exit_at_.text() + ": the " + store_kind_name(awaiting_exit_->kind) + " of lease " +
               lease_name(awaiting_exit_->lease) + " is the log's last record: its exit is missing (was the log cut short?)";
    // The histories' claims, in the order the files were read.
    std::optional<std::pair<Where, std::string>> first;
    const auto claim = [&](const std::optional<Where>& at, bool holds, const std::string& what) {
        if (!at || holds) return;
        const bool earlier = !first || at->file < first->first.file ||
                             (at->file == first->first.file && at->line < first->first.line);
        if (earlier) first = std::make_pair(*at, what);
    };
    for (size_t i = 0; i < leases_.size(); ++i) {
        const LeaseFacts& f = leases_[i];
        const std::string lease = lease_name(static_cast<int>(i));
        claim(f.read_ok, f.entered.has_value(),
              "the read of lease " + lease + " is ok, but " + store_file() + " has no enter of it (was the log cut short?)");
        claim(f.write_ok, f.wrote.has_value(),
              "the write of lease " + lease + " is ok, but " + store_file() + " has no write of it (was the log cut short?)");
    }
    if (first) return first->first.text() + ": " + first->second;
    if (counter_ != final_counter)
        return run_json + ": final_counter is " + std::to_string(final_counter) + ", but the writes in " + store_file() +
               " leave the counter at " + std::to_string(counter_);
    return std::nullopt;
}

}  // namespace lockbench
