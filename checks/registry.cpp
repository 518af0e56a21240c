#include "checks/registry.h"

#include <set>
#include <string_view>
#include <tuple>

#include "checks/checks.h"
#include "core/hash.h"

namespace bod {

const std::vector<CheckEntry>& check_registry() {
  static const std::vector<CheckEntry> r = {
      {&stale_static_info(), run_stale_static},
      {&key_collision_info(), run_key_collision},
      {&size_mismatch_info(), run_size_mismatch},
      {&static_clobber_info(), run_static_clobber},
      {&intermediate_read_info(), run_intermediate_read},
      {&partial_overwrite_info(), run_partial_overwrite},
      {&output_divergence_info(), run_output_divergence},
      {&view_overwritten_info(), run_view_overwritten},
      {&placeholder_upload_info(), run_placeholder_upload},
      {&alias_conflict_info(), run_alias_conflict},
      {&missed_static_info(), run_missed_static},
      {&missed_intermediate_info(), run_missed_intermediate},
      {&config_error_info(), run_config_error},
      // Hand-managed BOs, recorded at the XRT boundary (capability xrt).
      {&unsynced_write_info(), run_unsynced_write},
      {&unsynced_read_info(), run_unsynced_read},
      {&write_in_flight_info(), run_write_in_flight},
      {&run_not_completed_info(), run_run_not_completed},
      {&unwritten_output_info(), run_unwritten_output},
  };
  return r;
}

const CheckEntry* find_check(const std::string& id) {
  for (auto& e : check_registry())
    if (id == e.info->id) return &e;
  return nullptr;
}

std::vector<CoverageGap> coverage_gaps(const Trace& t) {
  std::vector<CoverageGap> gaps;
  unsigned has = trace_has(t.header.caps);
  for (auto& e : check_registry()) {
    unsigned missing = e.info->needs & ~has;
    // The checks of hand-managed BOs judge a recording at the XRT boundary; on other traces
    // the syncs are the engine's own (bo-doctor's, KernelCache's): not a gap to report.
    if (!check_applies(*e.info, t.header.caps)) continue;
    if (missing) gaps.push_back({e.info->id, e.info->identity_part, need_names(missing)});
  }
  return gaps;
}

bool check_applies(const CheckInfo& info, const Capabilities& caps) {
  return !(info.needs & kNeedXrt) || caps.xrt;
}

void run_checks(const Trace& t, FindingSink& sink) {
  for (auto& e : check_registry()) e.run(t, sink);
}

std::string hash_pair(uint64_t a, uint64_t b) {
  return hash_hex(a) + " vs " + hash_hex(b);
}

bool no_reuse_before(const Capabilities& caps, const TraceSlot& s, uint64_t* hash) {
  if (caps.no_reuse) {
    *hash = s.noreuse_pre;
    return true;
  }
  if (s.written || s.host.source == ArraySource::placeholder || s.host.bytes != s.bo_bytes ||
      s.host.bytes == 0)
    return false;
  *hash = s.host.hash;
  return true;
}

bool stale_before(const Capabilities& caps, const TraceSlot& s) {
  uint64_t h = 0;
  return !s.written && no_reuse_before(caps, s, &h) && s.reuse_pre != h;
}

std::vector<std::pair<std::string, std::string>> before_evidence(const Trace& t,
                                                                 const TraceSlot& s) {
  if (t.header.caps.no_reuse)
    return {{"device bytes reuse vs no-reuse", hash_pair(s.reuse_pre, s.noreuse_pre)}};
  return {{"device bytes before dispatch vs the call's host data",
           hash_pair(s.reuse_pre, s.host.hash)}};
}

bool benign_by_outputs(const Trace& t, const TraceCall& c, Finding& f) {
  if (t.header.caps.no_reuse && !c.shadowed()) {
    f.severity = Severity::note;
    f.message += "; not shadowed: call " + std::to_string(c.shadow_like) +
                 ", with the same kernel, binary, shapes and kind of difference, gave "
                 "bit-identical outputs";
    f.severity_basis =
        "this call was not shadowed (record --shadow's selection); the earlier call the message "
        "names, whose bytes before dispatch differed from the no-reuse run's in the same slots "
        "and way, gave bit-identical outputs on its shadow run";
    return true;
  }
  if (!t.header.caps.no_reuse || c.outputs_cmp.empty() || c.diverged()) return false;
  f.severity = Severity::note;
  f.message += "; benign here: the call's outputs are bit-identical to the no-reuse run's";
  f.severity_basis =
      "the slot held other bytes than the no-reuse run's, yet every output of the call is "
      "bit-identical: the kernel did not depend on them at this call";
  return true;
}

std::vector<StaleStatic> stale_statics(const Trace& t) {
  std::vector<StaleStatic> r;
  if (!t.header.caps.run) return r;
  for (auto& c : t.calls) {
    if (c.failed) continue;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : c.slots) {
      if (s.role != SlotRole::static_input || !stale_before(t.header.caps, s) ||
          !size_note(t, c, s).empty())
        continue;
      if (s.place.pool == BoPool::alias) continue;  // an aliased BO: alias-conflict
      r.push_back({&c, &s, {}, false});
    }
  }
  if (r.empty()) return r;  // a clean run derives nothing more
  auto resident = residents(t);
  // Per (namespace, bo_key, slot): the host hashes in call order, and whether one comes back
  // after another was passed in between.
  struct Seq {
    uint64_t last = 0;
    bool any = false, alternates = false;
    std::set<uint64_t> seen;
  };
  std::map<std::tuple<std::string_view, std::string_view, int>, Seq> seqs;
  for (auto& x : r) seqs[{x.call->ns, x.call->bo_key, x.slot->slot}];
  for (auto& c : t.calls) {
    if (c.failed) continue;
    for (auto& s : c.slots) {
      auto it = seqs.find({c.ns, c.bo_key, s.slot});
      if (it == seqs.end() || s.host.source == ArraySource::placeholder) continue;
      Seq& q = it->second;
      if (q.any && s.host.hash != q.last && !q.seen.insert(s.host.hash).second) q.alternates = true;
      if (!q.any) q.seen.insert(s.host.hash);
      q.any = true;
      q.last = s.host.hash;
    }
  }
  for (auto& x : r) {
    x.resident =
        resident[static_cast<size_t>(x.call->number - 1)][static_cast<size_t>(x.slot->slot)];
    const TraceCall* by = t.call(x.resident.call);
    // Only for the key's own BO: a pooled BO is written by other keys' calls by design.
    bool other_layer = x.slot->place.pool == BoPool::key && by && by->layer >= 0 &&
                       x.call->layer >= 0 && by->layer != x.call->layer;
    x.collision = seqs[{x.call->ns, x.call->bo_key, x.slot->slot}].alternates || other_layer;
  }
  return r;
}

bool only_intermediates_stale(const TraceCall& c) {
  for (auto& s : c.slots)
    if (s.reuse_pre != s.noreuse_pre && s.role != SlotRole::intermediate) return false;
  return true;
}

KeySlotRuns key_slot_runs(
    const Trace& t,
    const std::function<bool(const TraceCall&, const TraceSlot&, const TraceSlot&)>& holds) {
  KeySlotRuns runs;
  for (auto& c : t.calls) {
    if (c.failed) continue;
    auto it = runs.find({c.ns, c.bo_key});
    if (it == runs.end()) it = runs.emplace(std::make_pair(c.ns, c.bo_key), 0).first;
    auto& slots = it->second;
    if (slots.size() < c.slots.size()) slots.resize(c.slots.size());
    for (auto& s : c.slots) {
      KeySlotRun& r = slots[static_cast<size_t>(s.slot)];
      if (!r.first) r.first = &c, r.first_slot = &s;
      r.calls++;
      r.always = r.always && holds(c, *r.first_slot, s);
    }
  }
  return runs;
}

bool lacks(const Trace& t, const CheckInfo& info) {
  return (info.needs & ~trace_has(t.header.caps)) != 0;
}

}  // namespace bod
