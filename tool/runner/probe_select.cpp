#include "runner/probe_select.h"

#include <climits>

namespace bod {

std::vector<std::vector<int>> ProbeSelection::select(const PlanCall& c) {
  size_t n = c.kernel->slots.size();
  std::vector<std::vector<int>> groups;
  if (rule_.all) {
    if (++calls_all_[c.key.bo_key] > rule_.calls_per_key) return groups;
    for (size_t s = 0; s < n; ++s) groups.push_back({static_cast<int>(s)});
    return groups;
  }
  std::vector<int> slots;
  for (auto& r : c.inters)
    if (r.index >= 0 && static_cast<size_t>(r.index) < n && !c.is_static(r.index))
      slots.push_back(r.index);
  if (slots.empty()) return groups;
  if (!rule_.every_call) {
    Seen& seen = seen_[c.key];
    std::vector<int64_t> sig = signature(c);
    if (seen.calls >= rule_.calls_per_key && seen.signatures.count(sig)) return groups;
    seen.calls++;
    seen.signatures.insert(std::move(sig));
  }
  groups.push_back(std::move(slots));
  return groups;
}

std::vector<int64_t> ProbeSelection::signature(const PlanCall& c) {
  std::vector<int64_t> sig{static_cast<int64_t>(reinterpret_cast<uintptr_t>(c.bound.get()))};
  for (auto& name : c.kernel->params) {
    auto it = c.env.find(name);
    sig.push_back(it == c.env.end() ? INT64_MIN : it->second);
  }
  for (size_t s = 0; s < c.slot_shapes.size(); ++s) {
    sig.push_back(-1);  // separator: shapes of different rank never collide
    for (int64_t d : c.slot_shapes[s]) sig.push_back(d);
    sig.push_back(static_cast<int64_t>(c.slot_bytes[s]));
    if (s < c.place.size()) sig.push_back(c.place[s].bo);
    if (s < c.args.size()) sig.push_back(static_cast<int64_t>(c.args[s].kind));
    sig.push_back(c.is_static(static_cast<int>(s)) * 2 + c.is_inter(static_cast<int>(s)));
  }
  return sig;
}

}  // namespace bod
