// size-mismatch: a reused BO set or pool sees arrays of another size, or another slot count,
// than at its first call.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "size-mismatch", Severity::error,
    "a reused BO set or pool gets arrays of another size or another slot count than at its "
    "first call",
    "stale tail bytes, missing scratch, or a failed call",
    "lint compares each call's slot sizes and count with the first call of its bo_key or alias "
    "pool; the run records every write into a BO of another size",
    "give calls with other shapes or slot lists their own bo_key (or pool name)",
    kNeedRun, 0, true};

void emit(FindingSink& sink, const TraceCall& c, int slot, int first, const std::string& msg) {
  Finding f = make_finding(kInfo, c, slot, first);
  f.message = msg;
  sink.add(std::move(f));
}

// From the declarations alone: sizes and slot counts against each key's and pool's first call.
void declared(const Trace& t, FindingSink& sink) {
  std::map<std::pair<std::string, std::string>, const TraceCall*> first;  // (ns, key)
  std::map<std::pair<std::string, std::string>, std::pair<size_t, const TraceCall*>> pools;
  for (auto& c : t.calls) {
    auto [it, fresh] = first.emplace(std::make_pair(c.ns, c.bo_key), &c);
    const TraceCall& f0 = *it->second;
    if (!fresh && f0.slots.size() != c.slots.size())
      emit(sink, c, -1, f0.number,
           "bo_key '" + c.bo_key + "' was created with " + std::to_string(f0.slots.size()) +
               " slots at call " + std::to_string(f0.number) + " (" + f0.kernel +
               "); this call passes " + std::to_string(c.slots.size()));
    for (auto& s : c.slots) {
      size_t bytes = s.host.bytes;
      if (c.alias.count(s.slot)) {
        const std::string& pool = c.alias.at(s.slot);
        auto [pi, pf] = pools.emplace(std::make_pair(c.ns, pool), std::make_pair(bytes, &c));
        if (!pf && pi->second.first != bytes)
          emit(sink, c, s.slot, pi->second.second->number,
               "alias pool '" + pool + "' holds " + std::to_string(pi->second.first) +
                   " bytes; slot " + s.name + " needs " + std::to_string(bytes));
        continue;
      }
      if (c.shared_nonstatic && !c.is_static(s.slot)) continue;  // pools are keyed by size
      auto si = static_cast<size_t>(s.slot);
      if (fresh || si >= f0.slots.size() || f0.slots[si].host.bytes == bytes) continue;
      emit(sink, c, s.slot, f0.number,
           "slot " + s.name + " is " + std::to_string(bytes) + " bytes but the BO of '" +
               c.bo_key + "' was sized " + std::to_string(f0.slots[si].host.bytes) +
               " bytes at call " + std::to_string(f0.number));
    }
  }
}

}  // namespace

std::string size_note(const Trace& t, const TraceCall& c, const TraceSlot& s) {
  if (s.host.bytes != s.bo_bytes)
    return "slot " + s.name + " is " + std::to_string(s.host.bytes) + " bytes but its BO (" +
           s.place.label() + ") was sized " + std::to_string(s.bo_bytes) + " bytes at first use";
  const TraceCall* first = t.call(c.key_first_call);
  if (s.place.pool != BoPool::key || !first || first == &c ||
      first->slots.size() == c.slots.size() || static_cast<size_t>(s.slot) < first->slots.size())
    return "";
  return "bo_key '" + c.bo_key + "' was created with " + std::to_string(first->slots.size()) +
         " slots at call " + std::to_string(first->number) + "; this call passes " +
         std::to_string(c.slots.size()) + ", so slot " + std::to_string(s.slot) +
         " gets a BO the first call never set up";
}

void run_size_mismatch(const Trace& t, FindingSink& sink) {
  declared(t, sink);
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      std::string note = size_note(t, c, s);
      if (!note.empty()) emit(sink, c, s.slot, c.key_first_call, note);
    }
}

const CheckInfo& size_mismatch_info() { return kInfo; }

}  // namespace bod
