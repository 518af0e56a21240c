// missed-intermediate (note): a slot the kernel always fully overwrites before reading is
// still uploaded each call: a B2 (intermediate BO) opportunity.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "missed-intermediate", Severity::note,
    "a slot is always fully overwritten by the kernel before any read, yet uploaded each call",
    "wasted host->device bytes per call (B2 opportunity)",
    "after the run: for every (bo_key, slot) not intermediate or static, the reference body "
    "writes the whole slot before reading it and the kernel changed it on every call",
    "add the slot to intermediate_indices",
    kNeedRun | kNeedAccess, 0, false};

struct Acc {
  const TraceCall* first = nullptr;
  int calls = 0;
  bool always = true;
  size_t bytes = 0;
};

}  // namespace

void run_missed_intermediate(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  std::map<std::tuple<std::string, std::string, int>, Acc> acc;  // (ns, key, slot)
  for (auto& c : t.calls) {
    if (c.failed) continue;
    for (auto& s : c.slots) {
      auto& a = acc[{c.ns, c.bo_key, s.slot}];
      if (!a.first) {
        a.first = &c;
        a.bytes = s.host.bytes;
      }
      a.calls++;
      a.always = a.always && s.role == SlotRole::input && s.access.overwritten && s.written;
    }
  }
  for (auto& [k, a] : acc) {
    if (!a.always || a.calls < 2) continue;
    Finding f = make_finding(kInfo, *a.first, std::get<2>(k), a.first->key_first_call);
    f.message = "slot " + f.slot_name + " of bo_key '" + std::get<1>(k) + "' is overwritten by "
                "the kernel before any read on all " + std::to_string(a.calls) +
                " calls but uploaded each time; intermediate would save " +
                std::to_string(a.bytes) + " bytes per later call";
    f.evidence = {{"calls", std::to_string(a.calls)}, {"bytes/call", std::to_string(a.bytes)}};
    sink.add(std::move(f));
  }
}

const CheckInfo& missed_intermediate_info() { return kInfo; }

}  // namespace bod
