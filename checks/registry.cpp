#include "checks/registry.h"

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
    if (missing) gaps.push_back({e.info->id, e.info->identity_part, need_names(missing)});
  }
  return gaps;
}

void run_checks(const Trace& t, FindingSink& sink) {
  for (auto& e : check_registry()) e.run(t, sink);
}

std::string hash_pair(uint64_t a, uint64_t b) { return hash_hex(a) + " vs " + hash_hex(b); }

bool stale_before(const TraceSlot& s) { return !s.written && s.reuse_pre != s.noreuse_pre; }

bool only_intermediates_stale(const TraceCall& c) {
  for (auto& s : c.slots)
    if (s.reuse_pre != s.noreuse_pre && s.role != SlotRole::intermediate) return false;
  return true;
}

KeySlotRuns key_slot_runs(const Trace& t,
                          const std::function<bool(const TraceSlot&, const TraceSlot&)>& holds) {
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
      r.always = r.always && holds(*r.first_slot, s);
    }
  }
  return runs;
}

bool lacks(const Trace& t, const CheckInfo& info) {
  return (info.needs & ~trace_has(t.header.caps)) != 0;
}

}  // namespace bod
