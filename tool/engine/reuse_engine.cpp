// The optimized engine's semantics: one BO set per bo_key, the first call writes every slot,
// later calls skip static and intermediate slots, sizes fixed at first use, shared_nonstatic
// pools keyed by (kernel, slot, bytes), shared_alias pools by name. The placements come from
// the plan.
#include <cstring>

#include "engine/engine.h"

#include "core/hash.h"

namespace bod {

Prepared ReuseEngine::prepare(const PlanCall& c, const std::vector<HostSlot>& host) {
  Prepared p;
  size_t n = c.kernel->slots.size();
  auto [kit, fresh] = keys_.try_emplace(c.bo_key, &c);
  const PlanCall& first = *kit->second;
  p.shape_call = &c;
  p.slots.resize(n);
  for (size_t s = 0; s < n; ++s) {
    int si = static_cast<int>(s);
    SlotWrite& w = p.slots[s];
    const Placement& place = c.place[s];
    size_t need = c.slot_bytes[s];
    auto at = static_cast<size_t>(place.bo);
    if (at >= bos_.size()) bos_.resize(at + 1, kNone);
    if (bos_[at] == kNone) bos_[at] = b_.alloc(BoDesc{need, si, c.kernel->name, place.label()});
    w.bo = bos_[at];
    w.bo_bytes = b_.size(w.bo);
    if (need != w.bo_bytes) {
      if (need > w.bo_bytes) {
        if (!p.failed)
          p.error = "slot " + c.kernel->slots[s].name + " is " + std::to_string(need) +
                    " bytes but its BO (" + place.label() + ") was sized " +
                    std::to_string(w.bo_bytes) + " bytes at first use; the call fails";
        p.failed = true;
      } else {
        p.shape_call = &first;  // the kernel was set up for the first call's sizes
      }
    }
    bool skip = !fresh && (c.is_static(si) || c.is_inter(si));
    if (skip || p.failed) continue;
    size_t nbytes = std::min(host[s].bytes, w.bo_bytes);
    uint8_t* m = b_.map(w.bo);
    if (host[s].data) std::memmove(m, host[s].data, nbytes);
    else std::memset(m, 0, nbytes);
    b_.sync_to_device(w.bo, nbytes);
    w.written = true;
    w.written_bytes = nbytes;
    w.written_hash = hash_bytes(m, nbytes);
    p.h2d_bytes += nbytes;
    p.writes++;
    changed_[w.bo] = LastChange{c.number, true};
  }
  // The kernel runs with the first call's shapes only where every BO can hold them.
  if (p.shape_call != &c) {
    bool fits = p.shape_call->kernel == c.kernel;
    for (size_t s = 0; fits && s < n; ++s) fits = p.shape_call->slot_bytes[s] <= p.slots[s].bo_bytes;
    if (!fits) p.shape_call = &c;
  }
  return p;
}

void ReuseEngine::note_dispatch(const PlanCall& c, const Prepared& p) {
  for (size_t s = 0; s < p.slots.size(); ++s)
    if (c.is_output(static_cast<int>(s))) changed_[p.slots[s].bo] = LastChange{c.number, false};
}

uint8_t* ReuseEngine::read_output(const Prepared& p, int slot) {
  BoHandle bo = p.slots[static_cast<size_t>(slot)].bo;
  b_.sync_from_device(bo);
  return b_.map(bo);
}

LastChange ReuseEngine::last_change(BoHandle bo) const {
  auto it = changed_.find(bo);
  return it == changed_.end() ? LastChange{} : it->second;
}

std::vector<BoHandle> NoReuseEngine::prepare(const PlanCall& c, const std::vector<HostSlot>& host) {
  std::vector<BoHandle> bos;
  for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
    BoHandle h =
        b_.alloc(BoDesc{c.slot_bytes[s], static_cast<int>(s), c.kernel->name, "no-reuse", true});
    uint8_t* m = b_.map(h);
    if (host[s].data) std::memcpy(m, host[s].data, c.slot_bytes[s]);
    else std::memset(m, 0, c.slot_bytes[s]);
    b_.sync_to_device(h, c.slot_bytes[s]);
    h2d_bytes += c.slot_bytes[s];
    writes++;
    bos.push_back(h);
  }
  return bos;
}

void NoReuseEngine::release(const std::vector<BoHandle>& bos) {
  for (auto h : bos) b_.release(h);
}

DispatchInfo dispatch_body(Backend& b, const PlanCall& c, const std::vector<BoHandle>& bos,
                           const std::vector<Shape>& shapes, const Body& body) {
  Dispatch d;
  d.kernel = c.kernel->name;
  d.binary = c.kernel->npu.mode == NpuBinary::Mode::none ? nullptr : &c.kernel->npu;
  d.bos = bos;
  for (size_t s = 0; s < bos.size(); ++s) d.slot_dtypes.push_back(c.kernel->slots[s].dtype);
  d.slot_shapes = shapes;
  d.body = [&body](const std::vector<TensorRef>& slots) { body.run(slots); };
  return b.dispatch(d);
}

}  // namespace bod
