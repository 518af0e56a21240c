// static-clobber: the kernel writes into a static slot (uses it as scratch), so the resident
// data is corrupt from the next call on.
#include <string>
#include <unordered_map>
#include <vector>

#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "static-clobber",
    Severity::error,
    "the kernel writes into a static slot (uses it as scratch)",
    "right once, corrupt from the next call on",
    "a static slot's device bytes after dispatch differ from before dispatch (no-reuse engine); "
    "an error when the body reads some of the bytes it clobbers before rewriting them, a "
    "warning when it always rewrites the whole slot before any read (harmless, the slot need "
    "not be static), a note when it rewrites only part of it before any read and only reads "
    "the rest (scratch inside a resident buffer)",
    "drop the slot from static_input_indices, or give the kernel its own scratch slot",
    kNeedNoReuse,
    kNeedAccess,
    false,
    "later calls of the key read the clobbered resident bytes"};

// Without access facts (a recorded run): the calls of the key that ran on clobbered bytes (the
// reuse BO before dispatch differs from the fresh no-reuse copy of the slot) and whether any of
// them diverged. Exposed calls with bit-identical outputs show the bytes are not read.
struct Exposure {
  int calls = 0;  // shadowed
  int like = 0;   // not shadowed (record --shadow's selection): an earlier call's run stands for it
  bool diverged = false;
};

// A (ns, bo_key, slot) as one string, each part length-prefixed.
std::string exposure_id(const TraceCall& c, int slot) {
  return std::to_string(c.ns.size()) + ":" + c.ns + std::to_string(c.bo_key.size()) + ":" +
         c.bo_key + std::to_string(slot);
}

// The exposure of every static slot of every key, in one pass over the calls (not one pass
// per finding: a rescan per clobbering call made 20k calls take 11.7 s).
std::unordered_map<std::string, Exposure> exposures(const Trace& t) {
  std::unordered_map<std::string, Exposure> out;
  std::vector<char> seen;
  for (auto& c : t.calls) {
    if (c.failed) continue;
    seen.assign(c.slots.size(), 0);
    for (int slot : c.statics) {
      if (slot < 0 || static_cast<size_t>(slot) >= c.slots.size()) continue;
      if (seen[static_cast<size_t>(slot)]++) continue;
      const TraceSlot& s = c.slots[static_cast<size_t>(slot)];
      if (s.written || s.reuse_pre == s.noreuse_pre) continue;
      Exposure& e = out[exposure_id(c, slot)];
      (c.shadowed() ? e.calls : e.like)++;
      e.diverged = e.diverged || c.diverged();
    }
  }
  return out;
}

Exposure exposure(const std::unordered_map<std::string, Exposure>& all, const TraceCall& c,
                  int slot) {
  auto it = all.find(exposure_id(c, slot));
  return it == all.end() ? Exposure{} : it->second;
}

}  // namespace

void run_static_clobber(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  // Only read without access facts.
  const auto all =
      t.header.caps.access ? std::unordered_map<std::string, Exposure>{} : exposures(t);
  for (auto& c : t.calls)
    for (auto& s : c.slots) {
      // A call not shadowed has no no-reuse after-hashes: nothing to see there.
      if (!c.shadowed() || s.role != SlotRole::static_input || s.noreuse_post == s.noreuse_pre)
        continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.evidence = {
          {"static BO before vs after dispatch", hash_pair(s.noreuse_pre, s.noreuse_post)}};
      // Severity from what the bytes do: clobbered bytes the kernel always rewrites before
      // reading them are never read by a later call.
      if (t.header.caps.access && s.access.rewritten_before_read && !s.access.overwritten) {
        // Part of the slot is the kernel's scratch (rewritten before every read), the rest is
        // resident data it only reads (the real decode o_gemv_ffn's packed norm buffer): the
        // static declaration is what keeps that data; nothing is wrong.
        f.severity = Severity::note;
        f.message = "kernel " + c.kernel + " writes part of static slot " + s.name +
                    " as scratch, always before reading it; the rows it never writes stay "
                    "resident, so later calls of '" +
                    c.bo_key + "' read correct bytes";
        f.evidence.push_back({"severity",
                              "note: the body rewrites what it clobbers before any "
                              "read, and the slot holds data it never writes"});
      } else if (t.header.caps.access && s.access.rewritten_before_read) {
        f.severity = Severity::warning;
        f.message = "kernel " + c.kernel + " writes into static slot " + s.name +
                    ", but every byte it writes there it writes before reading it: later calls "
                    "of '" +
                    c.bo_key + "' never read clobbered bytes (the slot need not be static)";
        f.evidence.push_back({"severity",
                              "warning: the body rewrites what it clobbers before "
                              "any read, on every call"});
      } else if (Exposure e = exposure(all, c, s.slot);
                 !t.header.caps.access && e.calls > 0 && !e.diverged) {
        f.severity = Severity::note;
        f.message = "kernel " + c.kernel + " writes into static slot " + s.name + "; " +
                    std::to_string(e.calls) + " call(s) of '" + c.bo_key +
                    "' ran on the clobbered bytes with outputs identical to a fresh run's" +
                    (e.like ? " (" + std::to_string(e.like) +
                                  " more not shadowed, each like an earlier call that was)"
                            : std::string()) +
                    ", so they are not read (or not yet)";
        f.evidence.push_back({"severity",
                              "note: every call that ran on the clobbered bytes "
                              "gave bit-identical outputs (no access facts)"});
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

const CheckInfo& static_clobber_info() {
  return kInfo;
}

}  // namespace bod
