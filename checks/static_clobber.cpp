// static-clobber: the kernel writes into a static slot (uses it as scratch), so the resident
// data is corrupt from the next call on.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "static-clobber", Severity::error,
    "the kernel writes into a static slot (uses it as scratch)",
    "right once, corrupt from the next call on",
    "a static slot's device bytes after dispatch differ from before dispatch (no-reuse engine)",
    "drop the slot from static_input_indices, or give the kernel its own scratch slot",
    kNeedNoReuse, 0, false};

}  // namespace

void run_static_clobber(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (s.role != SlotRole::static_input || s.noreuse_post == s.noreuse_pre) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "kernel " + c.kernel + " wrote into static slot " + s.name + "; later calls of '" +
                  c.bo_key + "' will read the clobbered bytes";
      f.evidence = {{"static BO before vs after dispatch", hash_pair(s.noreuse_pre, s.noreuse_post)}};
      sink.add(std::move(f));
    }
}

const CheckInfo& static_clobber_info() { return kInfo; }

}  // namespace bod
