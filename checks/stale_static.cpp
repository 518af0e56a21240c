// stale-static: a static slot's host data changed between calls of one key, but the write
// was skipped, so the kernel ran on the first call's data.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "stale-static",
    Severity::error,
    "a static slot's host data changed between calls of one bo_key (e.g. a position-dependent "
    "RoPE LUT marked static), but the reuse engine skipped the write",
    "subtle drift from the second call on",
    "the slot is static and skipped, and the reuse BO's bytes before dispatch differ from what "
    "the no-reuse engine writes there: its freshly written BO, or (a recording without "
    "--shadow) the host array the call passed; the slot's data moves on from call to call "
    "rather than coming back (that is key-collision)",
    "drop the slot from static_input_indices (it changes per call), or key the BO set by what "
    "makes the data differ",
    kNeedRun,
    kNeedNoReuse,
    false,
    "the kernel ran on resident bytes that differ from what this call's host data puts there"};

}  // namespace

void run_stale_static(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (const StaleStatic& x : stale_statics(t)) {
    if (x.collision) continue;  // data that comes back: several data sets share the key
    const TraceCall& c = *x.call;
    const TraceSlot& s = *x.slot;
    const Resident& r = x.resident;
    // Data unchanged (or a placeholder standing in for it): the BO was clobbered instead.
    if (s.host.source == ArraySource::placeholder || s.host.hash == r.hash) continue;
    Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
    f.message = "static slot " + s.name + " bound to '" + s.host.name + "' changed since call " +
                std::to_string(r.call) + " but was not rewritten; the kernel read the old data";
    f.evidence = before_evidence(t, s);
    f.evidence.push_back({"data written at call", std::to_string(r.call)});
    // The fix the evidence supports: labels of one layer on both calls say the data changes per
    // call; without layer labels, per-layer weights under a key that lacks the layer look the
    // same in one pass, so both fixes are named, the per-layer key first.
    const TraceCall* by = t.call(r.call);
    bool same_layer = by && by->layer >= 0 && by->layer == c.layer;
    if (!same_layer) {
      f.fix =
          "if the slot holds weights that differ per layer, give each layer its own bo_key "
          "(e.g. bo_key=f\"" +
          c.kernel +
          "_L{layer}\"); if its data changes per call, drop the slot from static_input_indices";
      std::string layers =
          by && by->layer >= 0 && c.layer >= 0
              ? "data written at layer " + std::to_string(by->layer) + ", read at layer " +
                    std::to_string(c.layer)
              : "no layer labels on these calls (label the layer loop with bo_doctor.label "
                "to decide)";
      f.evidence.push_back({"layers", layers});
    }
    benign_by_outputs(t, c, f);
    sink.add(std::move(f));
  }
}

const CheckInfo& stale_static_info() {
  return kInfo;
}

}  // namespace bod
