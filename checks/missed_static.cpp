// missed-static (note): a slot's data is identical on every call of a key but uploaded each
// time: a B1 (weight BO) opportunity.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "missed-static",
    Severity::note,
    "a slot's host data is identical on every call of a bo_key, the kernel never writes it, "
    "yet it is uploaded each time",
    "wasted host->device bytes per call (B1 opportunity)",
    "after the run: for every (bo_key, slot) not static, the host hash never changed over two "
    "or more calls and the BO was never modified by the kernel",
    "add the slot to static_input_indices (and keep bo_key unique per weight set)",
    kNeedRun | kNeedNoReuse,
    0,
    false};

struct Acc {
  const TraceCall* first = nullptr;
  int calls = 0;
  uint64_t hash = 0;
  bool constant = true;
  size_t bytes = 0;
};

}  // namespace

void run_missed_static(const Trace& t, FindingSink& sink) {
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
      bool eligible = s.role == SlotRole::input && !s.output && s.noreuse_post == s.noreuse_pre &&
                      (s.host.source == ArraySource::tensor || s.host.source == ArraySource::var);
      if (!a.first) {
        a.first = &c;
        a.hash = s.host.hash;
        a.bytes = s.host.bytes;
      }
      a.calls++;
      a.constant = a.constant && eligible && s.host.hash == a.hash;
    }
  }
  for (auto& [k, slots] : acc)
    for (size_t slot = 0; slot < slots.size(); ++slot) {
      const Acc& a = slots[slot];
      if (!a.first || !a.constant || a.calls < 2) continue;
      Finding f = make_finding(kInfo, *a.first, static_cast<int>(slot), a.first->key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + k.second +
                  "' is re-uploaded with "
                  "the same " +
                  std::to_string(a.bytes) + " bytes on all " + std::to_string(a.calls) +
                  " calls; static would save " + std::to_string(a.bytes) + " bytes per later call";
      f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
      sink.add(std::move(f));
    }
}

const CheckInfo& missed_static_info() {
  return kInfo;
}

}  // namespace bod
