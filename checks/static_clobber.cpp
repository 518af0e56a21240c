// static-clobber: the kernel writes into a static slot (uses it as scratch), so the resident
// data is corrupt from the next call on.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "static-clobber", Severity::error,
    "the kernel writes into a static slot (uses it as scratch)",
    "right once, corrupt from the next call on",
    "a static slot's device bytes after dispatch differ from before dispatch (no-reuse engine); "
    "an error when the body reads some of the bytes it clobbers before rewriting them, a "
    "warning when it always rewrites the whole slot before any read (harmless, the slot need "
    "not be static), a note when it rewrites only part of it before any read and only reads "
    "the rest (scratch inside a resident buffer)",
    "drop the slot from static_input_indices, or give the kernel its own scratch slot",
    kNeedNoReuse, kNeedAccess, false,
    "later calls of the key read the clobbered resident bytes"};

}  // namespace

void run_static_clobber(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      if (s.role != SlotRole::static_input || s.noreuse_post == s.noreuse_pre) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.evidence = {{"static BO before vs after dispatch", hash_pair(s.noreuse_pre, s.noreuse_post)}};
      // Severity from what the bytes do: clobbered bytes the kernel always rewrites before
      // reading them are never read by a later call.
      if (t.header.caps.access && s.access.rewritten_before_read && !s.access.overwritten) {
        // Part of the slot is the kernel's scratch (rewritten before every read), the rest is
        // resident data it only reads (the real decode o_gemv_ffn's packed norm buffer): the
        // static declaration is what keeps that data; nothing is wrong.
        f.severity = Severity::note;
        f.message = "kernel " + c.kernel + " writes part of static slot " + s.name +
                    " as scratch, always before reading it; the rows it never writes stay "
                    "resident, so later calls of '" + c.bo_key + "' read correct bytes";
        f.evidence.push_back({"severity", "note: the body rewrites what it clobbers before any "
                                          "read, and the slot holds data it never writes"});
      } else if (t.header.caps.access && s.access.rewritten_before_read) {
        f.severity = Severity::warning;
        f.message = "kernel " + c.kernel + " writes into static slot " + s.name +
                    ", but every byte it writes there it writes before reading it: later calls "
                    "of '" + c.bo_key + "' never read clobbered bytes (the slot need not be static)";
        f.evidence.push_back({"severity", "warning: the body rewrites what it clobbers before "
                                          "any read, on every call"});
      } else {
        f.message = "kernel " + c.kernel + " wrote into static slot " + s.name +
                    "; later calls of '" + c.bo_key + "' will read the clobbered bytes";
        f.evidence.push_back({"severity", t.header.caps.access
                                              ? "error: the body reads bytes of the slot before "
                                                "rewriting them"
                                              : "error: the trace has no access facts to show "
                                                "the clobbered bytes are never read"});
      }
      sink.add(std::move(f));
    }
}

const CheckInfo& static_clobber_info() { return kInfo; }

}  // namespace bod
