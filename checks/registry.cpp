#include "checks/registry.h"

#include "checks/checks.h"
#include "core/hash.h"

namespace bod {

const std::vector<CheckEntry>& check_registry() {
  static const std::vector<CheckEntry> r = {
      {&stale_static_info(), make_stale_static},
      {&key_collision_info(), make_key_collision},
      {&size_mismatch_info(), make_size_mismatch},
      {&static_clobber_info(), make_static_clobber},
      {&intermediate_read_info(), make_intermediate_read},
      {&partial_overwrite_info(), make_partial_overwrite},
      {&output_divergence_info(), make_output_divergence},
      {&view_overwritten_info(), make_view_overwritten},
      {&placeholder_upload_info(), make_placeholder_upload},
      {&alias_conflict_info(), make_alias_conflict},
      {&missed_static_info(), make_missed_static},
      {&missed_intermediate_info(), make_missed_intermediate},
      {&config_error_info(), make_config_error},
  };
  return r;
}

const CheckEntry* find_check(const std::string& id) {
  for (auto& e : check_registry())
    if (id == e.info->id) return &e;
  return nullptr;
}

std::vector<std::unique_ptr<Check>> make_all_checks() {
  std::vector<std::unique_ptr<Check>> v;
  for (auto& e : check_registry()) v.push_back(e.make());
  return v;
}

std::map<std::string, int> key_first_calls(const Plan& p) {
  std::map<std::string, int> m;
  for (auto& c : p.calls) m.emplace(c.bo_key, c.number);
  return m;
}

std::string hash_pair(uint64_t a, uint64_t b) { return hash_hex(a) + " vs " + hash_hex(b); }

bool stale_before(const SlotRecord& s) { return !s.written && s.reuse_pre != s.shadow_pre; }

bool only_intermediates_stale(const CallRecord& r) {
  for (auto& s : r.slots)
    if (s.reuse_pre != s.shadow_pre && s.role != SlotRole::intermediate) return false;
  return true;
}

}  // namespace bod
