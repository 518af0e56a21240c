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
    false,
    "an optimisation; nothing stale is read"};

}  // namespace

void run_missed_intermediate(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  auto runs = key_slot_runs(t, [](const TraceCall&, const TraceSlot&, const TraceSlot& s) {
    return s.role == SlotRole::input && s.access.overwritten && s.written;
  });
  for (auto& [key, slots] : runs)
    for (auto& r : slots) {
      if (!r.first || !r.always || r.calls < 2) continue;
      size_t bytes = r.first_slot->host.bytes;
      Finding f = make_finding(kInfo, *r.first, r.first_slot->slot, r.first->key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + key.second +
                  "' is overwritten by the kernel before any read on all " +
                  std::to_string(r.calls) +
                  " calls but uploaded each time; intermediate would save " +
                  std::to_string(bytes) + " bytes per later call";
      f.evidence = {{"calls", std::to_string(r.calls)}, {"bytes/call", std::to_string(bytes)}};
      sink.add(std::move(f));
    }
}

const CheckInfo& missed_intermediate_info() {
  return kInfo;
}

}  // namespace bod
