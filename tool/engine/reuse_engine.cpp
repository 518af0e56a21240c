// The optimized engine's semantics (DESIGN §2): one BO set per bo_key, the first call writes
// every slot, later calls skip static and intermediate slots, sizes fixed at first use,
// shared_nonstatic pools keyed by (kernel, slot, bytes), shared_alias pools by name.
#include <cstring>

#include "engine/engine.h"

#include "core/hash.h"

namespace bod {

BoHandle ReuseEngine::pooled(std::map<std::string, BoHandle>& pools, const std::string& id,
                             size_t bytes, const PlanCall& c, int slot) {
  auto it = pools.find(id);
  if (it != pools.end()) return it->second;
  BoHandle h = b_.alloc(BoDesc{bytes, slot, c.kernel->name, id});
  pools[id] = h;
  return h;
}

Prepared ReuseEngine::prepare(const PlanCall& c, const std::vector<HostSlot>& host) {
  Prepared p;
  size_t n = c.kernel->slots.size();
  auto [kit, fresh] = keys_.try_emplace(c.bo_key);
  KeySet& ks = kit->second;
  if (fresh) ks.first = &c;
  p.first_of_key = fresh;
  p.key_first_call = ks.first->number;
  p.shape_call = &c;
  p.slots.resize(n);
  bool count_mismatch = !fresh && ks.first->kernel->slots.size() != n;
  for (size_t s = 0; s < n; ++s) {
    int si = static_cast<int>(s);
    Placement& pl = p.slots[s];
    size_t need = c.slot_bytes[s];
    if (c.alias.count(si)) {
      pl.bo_id = "alias:" + c.alias.at(si);
      pl.bo = pooled(alias_, c.alias.at(si), need, c, si);
    } else if (c.shared_nonstatic && !c.is_static(si)) {
      pl.bo_id = "pool:" + c.kernel->name + "/" + std::to_string(s) + "/" + std::to_string(need);
      pl.bo = pooled(shared_, pl.bo_id, need, c, si);
    } else {
      pl.bo_id = "key:" + c.bo_key + "/" + std::to_string(s);
      if (!ks.bos.count(s)) ks.bos[s] = b_.alloc(BoDesc{need, si, c.kernel->name, pl.bo_id});
      if (count_mismatch && s >= ks.first->kernel->slots.size()) {
        pl.size_mismatch = true;
        pl.size_note = "bo_key '" + c.bo_key + "' was created with " +
                       std::to_string(ks.first->kernel->slots.size()) + " slots at call " +
                       std::to_string(ks.first->number) + "; this call passes " +
                       std::to_string(n) + ", so slot " + std::to_string(s) +
                       " gets a BO the first call never set up";
      }
      pl.bo = ks.bos.at(s);
    }
    pl.bo_bytes = b_.size(pl.bo);
    for (size_t o = 0; o < s; ++o)
      if (p.slots[o].bo == pl.bo) pl.shared = p.slots[o].shared = true;
    BoState& st = state_[pl.bo];
    pl.resident = st.resident;
    pl.resident_call = st.resident_call;
    pl.resident_hash = st.resident_hash;
    if (need != pl.bo_bytes) {
      pl.size_mismatch = true;
      pl.size_note = "slot " + c.kernel->slots[s].name + " is " + std::to_string(need) +
                     " bytes but its BO (" + pl.bo_id + ") was sized " +
                     std::to_string(pl.bo_bytes) + " bytes at first use";
      if (need > pl.bo_bytes) {
        if (!p.failed) p.fail_reason = pl.size_note + "; the call fails";
        p.failed = true;
      } else {
        p.shape_call = ks.first;  // the kernel was set up for the first call's sizes
      }
    }
    bool skip = !fresh && (c.is_static(si) || c.is_inter(si));
    if (skip || p.failed) continue;
    size_t nbytes = std::min(host[s].bytes, pl.bo_bytes);
    uint8_t* m = b_.map(pl.bo);
    if (host[s].data) std::memmove(m, host[s].data, nbytes);
    else std::memset(m, 0, nbytes);
    b_.sync_to_device(pl.bo, nbytes);
    pl.written = true;
    pl.written_bytes = nbytes;
    p.h2d_bytes += nbytes;
    p.writes++;
    st.resident = host[s].binding;
    st.resident_call = c.number;
    st.resident_hash = hash_bytes(m, nbytes);
    st.last_change = "the host write of call " + std::to_string(c.number) + " (" +
                     c.kernel->name + ")";
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
  for (size_t s = 0; s < p.slots.size(); ++s) {
    if (!c.is_output(static_cast<int>(s))) continue;
    state_[p.slots[s].bo].last_change =
        "call " + std::to_string(c.number) + " (" + c.kernel->name + ", " + c.where.str() + ")";
  }
}

uint8_t* ReuseEngine::read_output(const Prepared& p, int slot) {
  BoHandle bo = p.slots[static_cast<size_t>(slot)].bo;
  b_.sync_from_device(bo);
  return b_.map(bo);
}

std::string ReuseEngine::last_change(BoHandle bo) const {
  auto it = state_.find(bo);
  return it == state_.end() ? "another call" : it->second.last_change;
}

std::vector<BoHandle> ShadowEngine::prepare(const PlanCall& c, const std::vector<HostSlot>& host) {
  std::vector<BoHandle> bos;
  for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
    BoHandle h =
        b_.alloc(BoDesc{c.slot_bytes[s], static_cast<int>(s), c.kernel->name, "shadow", true});
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

void ShadowEngine::release(const std::vector<BoHandle>& bos) {
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
