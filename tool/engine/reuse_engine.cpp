// The real KernelCache.load_and_run, row by row ("R" = a line of the real cache.py): one BO
// list per (cache, bo_key), set up at the key's first call (R645-658; pools are looked up only
// then), the first call writes every slot, later calls skip static and intermediate slots
// (R675-688), a larger array raises where it is written (R684) or read back, a smaller one is a
// prefix write; arguments beyond the key's BO list are not bound (R695-700). The placements
// come from the plan.
#include <cstring>

#include "core/hash.h"
#include "engine/engine.h"

namespace bod {

Prepared ReuseEngine::prepare(const PlanCall& c, const std::vector<HostSlot>& host) {
  Prepared p;
  size_t n = c.kernel->slots.size();
  p.shape_call = &c;
  p.slots.resize(n);
  if (!c.raises.empty()) {  // raised before any BO was touched (R581-601)
    for (size_t s = 0; s < n; ++s) p.slots[s] = SlotWrite{kNone, c.place[s].bytes};
    p.failed = true;
    p.error = "the real engine raises " + c.raises;
    return p;
  }
  bool fresh = c.key_first_call == c.number;
  auto [kit, known] = keys_.try_emplace(c.key, &c);
  (void)known;
  const PlanCall& first = *kit->second;
  bool not_run = false;  // the engine writes its slots but bo-doctor cannot model the launch
  for (size_t s = 0; s < n; ++s) {
    int si = static_cast<int>(s);
    SlotWrite& w = p.slots[s];
    bool skip = !fresh && (c.is_static(si) || c.is_inter(si));
    if (!bind(c, si, w)) {  // beyond the BO list the key's first call set up
      if (!p.failed)
        p.error = skip ? "the real launch binds only the " + std::to_string(first.place.size()) +
                             " BOs of bo_key '" + c.key.bo_key + "' (call " +
                             std::to_string(first.number) + "); the kernel never sees argument " +
                             std::to_string(s) + " and bo-doctor does not model that launch"
                       : "the real engine raises IndexError writing argument " + std::to_string(s) +
                             ": bo_key '" + c.key.bo_key + "' has " +
                             std::to_string(first.place.size()) + " BOs (R675-688)";
      p.failed = true;
      continue;
    }
    size_t need = c.slot_bytes[s];
    if (need > w.bo_bytes) {
      // Writing it raises (R684); a skipped one raises only when read back as an output.
      bool raises = !skip || c.is_output(si);
      if (raises && !p.failed)
        p.error = "the real engine raises ValueError: slot " + c.kernel->slots[s].name + " is " +
                  std::to_string(need) + " bytes but its BO (" + c.place[s].label() + ") holds " +
                  std::to_string(w.bo_bytes) + (skip ? " (output readback)" : " (host write)");
      p.failed = p.failed || raises;
      if (!raises) p.shape_call = &first;  // the kernel runs on the BO it was set up with
    } else if (need < w.bo_bytes) {
      p.shape_call = &first;  // the kernel was set up for the first call's sizes
    }
    if (!placeholder_write(c, s, skip, fresh, w, p, not_run)) continue;
    write(c, s, host[s], w);
    p.h2d_bytes += w.written_bytes;
    p.writes++;
  }
  p.failed = p.failed || not_run;
  // The kernel runs with the first call's shapes only where every BO can hold them.
  if (p.shape_call != &c) {
    bool fits = p.shape_call->kernel == c.kernel;
    for (size_t s = 0; fits && s < n; ++s)
      fits = p.shape_call->slot_bytes[s] <= p.slots[s].bo_bytes;
    if (!fits) p.shape_call = &c;
  }
  return p;
}

bool ReuseEngine::placeholder_write(const PlanCall& c, size_t s, bool skip, bool fresh,
                                    const SlotWrite& w, Prepared& p, bool& not_run) {
  const BoundArray& arg = c.args[s];
  bool placeholder = arg.kind == Binding::Kind::placeholder;
  const std::string& name = c.kernel->slots[s].name;
  // A 0-byte BO (an empty placeholder at the key's first call) that this call does not fill:
  // the real kernel reads whatever the device holds there, which bo-doctor does not model.
  if (zero_byte_.count(w.bo) && (skip || placeholder) && !not_run) {
    not_run = true;
    if (!p.failed)
      p.error = "slot " + name +
                " has a 0-byte BO (an empty placeholder at the first call of bo_key '" +
                c.key.bo_key + "'); bo-doctor does not model what the kernel reads there";
  }
  if (skip || p.failed) return false;
  if (placeholder && arg.placeholder == Binding::Placeholder::broadcast) {
    p.failed = true;
    p.error = "the real engine raises ValueError: ndarray is not C-contiguous (slot " + name +
              " is written from a zero-stride placeholder)";
    return false;
  }
  if (placeholder && arg.placeholder == Binding::Placeholder::empty && fresh) {
    zero_byte_.insert(w.bo);  // sizes come from this call's arrays: 0 bytes
    if (!not_run && !p.failed)
      p.error = "slot " + name +
                " gets a 0-byte BO: the key's first call passes an empty "
                "placeholder, so the kernel would read whatever the device holds; bo-doctor "
                "does not model that launch";
    not_run = true;
    return false;
  }
  return true;
}

bool ReuseEngine::bind(const PlanCall& c, int s, SlotWrite& w) {
  const Placement& place = c.place[static_cast<size_t>(s)];
  if (place.pool == BoPool::unbound) {
    w = SlotWrite{kNone, 0};
    return false;
  }
  auto at = static_cast<size_t>(place.bo);
  if (at >= bos_.size()) bos_.resize(at + 1, kNone);
  if (bos_[at] == kNone) bos_[at] = b_.alloc(BoDesc{place.bytes, s, c.kernel->name, place.label()});
  w.bo = bos_[at];
  w.bo_bytes = b_.size(w.bo);
  return true;
}

void ReuseEngine::write(const PlanCall& c, size_t s, const HostSlot& host, SlotWrite& w) {
  size_t nbytes = std::min(host.bytes, w.bo_bytes);
  if (host.data) {
    b_.write(w.bo, host.data, nbytes, host.stable);
  } else {
    std::memset(b_.map(w.bo), 0, nbytes);
  }
  b_.sync_to_device(w.bo, nbytes);
  w.written = true;
  w.written_bytes = nbytes;
  // The bytes written are the host array's when it was written whole: its hash is theirs.
  w.written_hash = !hash_writes_ ? 0
                   : host.hashed && host.data && nbytes == host.bytes
                       ? host.hash
                       : hash_bytes(b_.host_bytes(w.bo), nbytes);
  changed_[w.bo] = LastChange{c.number, true};
  (void)s;
}

void ReuseEngine::note_dispatch(const PlanCall& c, const Prepared& p) {
  for (size_t s = 0; s < p.slots.size(); ++s)
    if (c.is_output(static_cast<int>(s))) changed_[p.slots[s].bo] = LastChange{c.number, false};
}

const uint8_t* ReuseEngine::read_output(const Prepared& p, int slot) {
  BoHandle bo = p.slots[static_cast<size_t>(slot)].bo;
  b_.sync_from_device(bo);
  return b_.host_bytes(bo);
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
    if (host[s].data)
      b_.write(h, host[s].data, c.slot_bytes[s], host[s].stable);
    else
      std::memset(b_.map(h), 0, c.slot_bytes[s]);
    b_.sync_to_device(h, c.slot_bytes[s]);
    h2d_bytes += c.slot_bytes[s];
    writes++;
    bos.push_back(h);
  }
  return bos;
}

void NoReuseEngine::account(const PlanCall& c) {
  for (size_t b : c.slot_bytes) {
    h2d_bytes += b;
    writes++;
  }
}

void NoReuseEngine::release(const std::vector<BoHandle>& bos) {
  for (auto h : bos) b_.release(h);
}

DispatchInfo dispatch_body(Backend& b, const PlanCall& c, const std::vector<BoHandle>& bos,
                           const std::vector<Shape>& shapes, const BoundKernel& k) {
  Dispatch d;
  d.kernel = c.kernel->name;
  d.binary = c.kernel->npu.mode == NpuBinary::Mode::none ? nullptr : &c.kernel->npu;
  d.bos = bos;
  for (size_t s = 0; s < bos.size(); ++s) d.slot_dtypes.push_back(c.kernel->slots[s].dtype);
  d.slot_shapes = shapes;
  if (k.access.size() == bos.size())
    for (const SlotAccess& a : k.access)
      d.slot_use.push_back(!a.written                              ? SlotUse::read
                           : a.overwritten && !a.read_before_write ? SlotUse::overwrite
                                                                   : SlotUse::write);
  const Body& body = k.body;
  d.body = [&body](const std::vector<TensorRef>& slots) { body.run(slots); };
  return b.dispatch(d);
}

}  // namespace bod
