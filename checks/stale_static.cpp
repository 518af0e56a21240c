// stale-static: a static slot's host data changed between calls of one key, but the write
// was skipped, so the kernel ran on the first call's data.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "stale-static", Severity::error,
    "a static slot's host data changed between calls of one bo_key (e.g. a position-dependent "
    "RoPE LUT marked static), but the reuse engine skipped the write",
    "subtle drift from the second call on",
    "the slot is static and skipped, the same binding is bound again, and the reuse BO's bytes "
    "before dispatch differ from the no-reuse engine's freshly written BO",
    "drop the slot from static_input_indices (it changes per call), or key the BO set by what "
    "makes the data differ",
    kNeedRun | kNeedNoReuse, 0, false,
    "the kernel ran on resident bytes that differ from what this call's host data puts there"};

}  // namespace

void run_stale_static(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  // Derived only when a slot needs it: a clean run has no stale static slot.
  std::vector<std::vector<Resident>> resident;
  bool derived = false;
  for (auto& c : t.calls) {
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : c.slots) {
      if (s.role != SlotRole::static_input || !stale_before(s) || !size_note(t, c, s).empty())
        continue;
      if (s.place.pool == BoPool::alias) continue;  // an aliased BO: alias-conflict
      if (!derived) resident = residents(t), derived = true;
      const Resident& r = resident[static_cast<size_t>(c.number - 1)][static_cast<size_t>(s.slot)];
      if (r.binding != s.host.name) continue;  // other data: key-collision
      // Data unchanged (or a placeholder standing in for it): the BO was clobbered instead.
      if (s.host.source == ArraySource::placeholder || s.host.hash == r.hash) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "static slot " + s.name + " bound to '" + s.host.name + "' changed since call " +
                  std::to_string(r.call) + " but was not rewritten; the kernel read the old data";
      f.evidence = {{"device bytes reuse vs no-reuse", hash_pair(s.reuse_pre, s.noreuse_pre)},
                    {"data written at call", std::to_string(r.call)}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& stale_static_info() { return kInfo; }

}  // namespace bod
