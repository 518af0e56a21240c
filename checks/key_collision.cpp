// key-collision: one bo_key serves calls that bind different static data (the key lacks the
// layer index), so later layers run on the first layer's resident weights.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "key-collision", Severity::error,
    "one bo_key serves calls that bind different static data (layer 1 runs on layer 0's "
    "weights: the bo_key lacks the layer index, or falls back to the kernel name)",
    "garbage or NaN from the second layer on",
    "lint: calls of one bo_key bind different tensors to a static slot; run: a skipped static "
    "slot holds data written from another binding and differs from the no-reuse engine's",
    "make bo_key unique per distinct weight set, e.g. bo_key=\"<kernel>_L{l}\"",
    kNeedRun | kNeedNoReuse, 0, true,
    "calls of one bo_key bind different static data, and the later ones run on what the first call uploaded"};

// From the declarations alone: one key, one static slot, two tensors.
void declared(const Trace& t, FindingSink& sink) {
  // (namespace, key, slot) -> first binding
  // (std::less<>: looked up by reference, so no key is copied on the calls that find one)
  std::map<std::tuple<std::string, std::string, int>, std::string, std::less<>> bound;
  for (auto& c : t.calls) {
    for (int s : c.statics) {
      if (s < 0 || static_cast<size_t>(s) >= c.slots.size()) continue;
      const HostArray& h = c.slots[static_cast<size_t>(s)].host;
      if (h.source != ArraySource::tensor && h.source != ArraySource::placeholder) continue;
      auto it = bound.find(std::tie(c.ns, c.bo_key, s));
      if (it == bound.end()) {
        bound.emplace(std::make_tuple(c.ns, c.bo_key, s), h.name);
        continue;
      }
      if (it->second == h.name) continue;
      Finding f = make_finding(kInfo, c, s, c.key_first_call);
      f.message = "bo_key '" + c.bo_key + "' already holds '" + it->second + "' in static slot " +
                  f.slot_name + "; this call binds '" + h.name + "', which will not be written";
      f.evidence = {{"resident binding", it->second}, {"this binding", h.name}};
      sink.add(std::move(f));
    }
  }
}

}  // namespace

void run_key_collision(const Trace& t, FindingSink& sink) {
  declared(t, sink);
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
      if (r.binding == s.host.name) continue;  // same binding: stale-static
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = "static slot " + s.name + " should hold '" + s.host.name + "' but the BO of '" +
                  c.bo_key + "' still holds '" + std::string(r.binding) + "' from call " +
                  std::to_string(r.call);
      f.evidence = {{"device bytes reuse vs no-reuse", hash_pair(s.reuse_pre, s.noreuse_pre)},
                    {"resident binding", std::string(r.binding)}};
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& key_collision_info() { return kInfo; }

}  // namespace bod
