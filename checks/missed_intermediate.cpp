// missed-intermediate (note): a slot the kernel always fully overwrites before reading is
// still uploaded each call: a B2 (intermediate BO) opportunity.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "missed-intermediate",
    Severity::note,
    "a slot is always fully overwritten by the kernel before any read, yet uploaded each call",
    "wasted host->device bytes per call (B2 opportunity)",
    "after the run: for every (bo_key, slot) not intermediate or static, the reference body "
    "writes the whole slot before any read and the host still wrote it, on every call",
    "add the slot to intermediate_indices",
    kNeedRun | kNeedAccess,
    0,
    false};

struct Acc {
  const TraceCall* first = nullptr;
  int calls = 0;
  bool always = true;
  size_t bytes = 0;
};

}  // namespace

void run_missed_intermediate(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  std::map<std::pair<std::string, std::string>, std::vector<Acc>> acc;  // (ns, key) -> slots
  for (auto& c : t.calls) {
    if (c.failed) continue;
    auto it = acc.find({c.ns, c.bo_key});
    if (it == acc.end()) it = acc.emplace(std::make_pair(c.ns, c.bo_key), std::vector<Acc>()).first;
    auto& slots = it->second;
    if (slots.size() < c.slots.size()) slots.resize(c.slots.size());
    for (auto& s : c.slots) {
      auto& a = slots[static_cast<size_t>(s.slot)];
      if (!a.first) {
        a.first = &c;
        a.bytes = s.host.bytes;
      }
      a.calls++;
      a.always = a.always && s.role == SlotRole::input && s.access.overwritten && s.written;
    }
  }
  for (auto& [k, slots] : acc)
    for (size_t slot = 0; slot < slots.size(); ++slot) {
      const Acc& a = slots[slot];
      if (!a.first || !a.always || a.calls < 2) continue;
      Finding f = make_finding(kInfo, *a.first, static_cast<int>(slot), a.first->key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + k.second +
                  "' is overwritten by "
                  "the kernel before any read on all " +
                  std::to_string(a.calls) +
                  " calls but uploaded each time; intermediate would save " +
                  std::to_string(a.bytes) + " bytes per later call";
      f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
      sink.add(std::move(f));
    }
}

const CheckInfo& missed_intermediate_info() {
  return kInfo;
}

}  // namespace bod
