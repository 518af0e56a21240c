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
    false,
    "an optimisation; nothing stale is read"};

}  // namespace

void run_missed_static(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  auto runs = key_slot_runs(t, [](const TraceCall& c, const TraceSlot& first, const TraceSlot& s) {
    // The kernel left the slot's BO as written: on the fresh BO of the no-reuse run, or on a
    // call that was not shadowed (record --shadow's selection), on the reuse BO, read after it.
    bool unchanged = c.shadowed() ? s.noreuse_post == s.noreuse_pre
                                  : s.reuse_post == s.reuse_pre && s.reuse_post != 0;
    return s.role == SlotRole::input && !s.output && unchanged &&
           (s.host.source == ArraySource::tensor || s.host.source == ArraySource::var) &&
           s.host.hash == first.host.hash;
  });
  for (auto& [key, slots] : runs)
    for (auto& r : slots) {
      if (!r.first || !r.always || r.calls < 2) continue;
      size_t bytes = r.first_slot->host.bytes;
      Finding f = make_finding(kInfo, *r.first, r.first_slot->slot, r.first->key_first_call);
      f.message = "slot " + f.slot_name + " of bo_key '" + key.second +
                  "' is re-uploaded with the same " + std::to_string(bytes) + " bytes on all " +
                  std::to_string(r.calls) + " calls; static would save " + std::to_string(bytes) +
                  " bytes per later call";
      f.evidence = {{"calls", std::to_string(r.calls)}, {"bytes/call", std::to_string(bytes)}};
      sink.add(std::move(f));
    }
}

const CheckInfo& missed_static_info() {
  return kInfo;
}

}  // namespace bod
