// The built-in checks (one file each) for the registry, plus small helpers several share.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"

namespace bod {

#define BOD_DECLARE_CHECK(name)                      \
  void run_##name(const Trace& t, FindingSink& sink); \
  const CheckInfo& name##_info();
BOD_DECLARE_CHECK(stale_static)
BOD_DECLARE_CHECK(key_collision)
BOD_DECLARE_CHECK(size_mismatch)
BOD_DECLARE_CHECK(static_clobber)
BOD_DECLARE_CHECK(intermediate_read)
BOD_DECLARE_CHECK(partial_overwrite)
BOD_DECLARE_CHECK(output_divergence)
BOD_DECLARE_CHECK(view_overwritten)
BOD_DECLARE_CHECK(placeholder_upload)
BOD_DECLARE_CHECK(alias_conflict)
BOD_DECLARE_CHECK(missed_static)
BOD_DECLARE_CHECK(missed_intermediate)
BOD_DECLARE_CHECK(config_error)
#undef BOD_DECLARE_CHECK

// config-error's declaration rules fire (a plan bo-doctor does not execute); the engine-raise
// rules do not count: those calls fail in the run as they would in the real engine.
bool has_inconsistent_declarations(const Trace& t);
// "a1b2...  vs  c3d4..." evidence value.
std::string hash_pair(uint64_t a, uint64_t b);
// True when the reuse engine skipped a slot whose device bytes then differed from the
// no-reuse engine's.
bool stale_before(const TraceSlot& s);
// True when every slot whose bytes differed before dispatch is an intermediate: only then can a
// difference after dispatch be blamed on an intermediate slot.
bool only_intermediates_stale(const TraceCall& c);
// Why the reuse engine's BO for slot `s` of `c` does not fit this call ("" when it does): its
// size differs from this call's array, or the key's first call set up fewer slots.
std::string size_note(const Trace& t, const TraceCall& c, const TraceSlot& s);
// What the calls of one (namespace, bo_key) did with one slot index, over the calls that ran:
// the first of them, how many, and whether `holds(first slot, this slot)` held on every one.
struct KeySlotRun {
  const TraceCall* first = nullptr;
  const TraceSlot* first_slot = nullptr;
  int calls = 0;
  bool always = true;
};
using KeySlotRuns = std::map<std::pair<std::string, std::string>, std::vector<KeySlotRun>>;
KeySlotRuns key_slot_runs(const Trace& t,
                          const std::function<bool(const TraceSlot&, const TraceSlot&)>& holds);
// The check's rule needs data the trace lacks.
bool lacks(const Trace& t, const CheckInfo& info);

}  // namespace bod
