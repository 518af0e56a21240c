// The built-in checks (one file each) for the registry, plus small helpers several share.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"

namespace bod {

#define BOD_DECLARE_CHECK(name)                       \
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
BOD_DECLARE_CHECK(unsynced_write)
BOD_DECLARE_CHECK(unsynced_read)
BOD_DECLARE_CHECK(write_in_flight)
BOD_DECLARE_CHECK(run_not_completed)
BOD_DECLARE_CHECK(unwritten_output)
#undef BOD_DECLARE_CHECK

// config-error's declaration rules fire (a plan bo-doctor does not execute); the engine-raise
// rules do not count: those calls fail in the run as they would in the real engine.
bool has_inconsistent_declarations(const Trace& t);
// "a1b2...  vs  c3d4..." evidence value.
std::string hash_pair(uint64_t a, uint64_t b);
// The bytes the no-reuse engine had (or would have had) in slot s's BO before dispatch: its
// recorded hash when the trace has the no-reuse engine; otherwise, for a slot the reuse engine
// skipped, the hash of the host array the call passed (the no-reuse engine writes it whole),
// unknown (false) for a placeholder or an array that does not fill the BO.
bool no_reuse_before(const Capabilities& caps, const TraceSlot& s, uint64_t* hash);
// True when the reuse engine skipped a slot whose device bytes then differed from the
// no-reuse engine's (recorded, or derived as above).
bool stale_before(const Capabilities& caps, const TraceSlot& s);
// A static slot the reuse engine skipped although its BO held other bytes than the call's host
// data, with what the BO held (the last write into it) and whether it is a key-collision:
// the calls of its (namespace, bo_key) pass data that alternates in that slot (A, B, A:
// several weight sets share the key), or, before any data came back, the resident data was
// written by a call of another layer. Otherwise (A, B, C) it is stale-static. Both are errors
// at the same call and slot: the layer label only names which of the two it is.
struct StaleStatic {
  const TraceCall* call;
  const TraceSlot* slot;
  Resident resident;
  bool collision;
};
// With shadow outputs, a stale slot whose call's compared outputs are all bit-identical to the
// no-reuse run's did no harm there: its finding becomes a note saying so (severity from
// evidence). False without compared outputs.
bool benign_by_outputs(const Trace& t, const TraceCall& c, Finding& f);
// In call order; the rule both stale-static and key-collision judge by bytes, not by names.
std::vector<StaleStatic> stale_statics(const Trace& t);
// The evidence of a stale slot: the BO's bytes before dispatch against the no-reuse engine's,
// or against the host data the call passed.
std::vector<std::pair<std::string, std::string>> before_evidence(const Trace& t,
                                                                 const TraceSlot& s);
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
KeySlotRuns key_slot_runs(
    const Trace& t,
    const std::function<bool(const TraceCall&, const TraceSlot&, const TraceSlot&)>& holds);
// The check's rule needs data the trace lacks.
bool lacks(const Trace& t, const CheckInfo& info);

}  // namespace bod
