#include "runner/probe.h"

#include <algorithm>
#include <cstring>

namespace bod {

void fill_canary(uint8_t* dst, size_t n, DType dtype, int pattern) {
  // Pattern 0: quiet NaNs (bf16 0x7fc1, f32 0x7fc10001). Pattern 1: about 1.2345, a value
  // that adding anything visibly changes (a huge canary would absorb small sums and look
  // untouched); integers get 0x5a bytes.
  uint32_t word = pattern == 0           ? (dtype == DType::bf16 ? 0x7fc17fc1u : 0x7fc10001u)
                  : dtype == DType::bf16 ? 0x3f9e3f9eu
                  : dtype == DType::f32  ? 0x3f9e0652u
                                         : 0x5a5a5a5au;
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(word >> (8 * (i % 4)));
}

namespace {

struct Outcome {
  bool outputs_changed = false;
  std::vector<std::vector<uint8_t>> post;  // post bytes of the probed slots
};

Outcome run_once(Backend& b, const PlanCall& c, const BoundKernel& body,
                 const std::vector<HostSlot>& host, const std::vector<const uint8_t*>& ref,
                 const std::vector<int>& slots, int pattern) {
  std::vector<BoHandle> bos;
  for (size_t s = 0; s < c.slot_bytes.size(); ++s) {
    BoHandle h =
        b.alloc(BoDesc{c.slot_bytes[s], static_cast<int>(s), c.kernel->name, "probe", true});
    bool canary = std::find(slots.begin(), slots.end(), static_cast<int>(s)) != slots.end();
    if (canary)
      fill_canary(b.map(h), c.slot_bytes[s], c.kernel->slots[s].dtype, pattern);
    else if (host[s].data)
      b.write(h, host[s].data, c.slot_bytes[s], host[s].stable);
    else
      std::memset(b.map(h), 0, c.slot_bytes[s]);
    b.sync_to_device(h, c.slot_bytes[s]);
    bos.push_back(h);
  }
  dispatch_body(b, c, bos, c.slot_shapes, body);
  Outcome o;
  for (size_t s = 0; s < bos.size() && !o.outputs_changed; ++s) {
    if (!ref[s]) continue;
    const uint8_t* d = b.device_bytes(bos[s]);
    bool canary = std::find(slots.begin(), slots.end(), static_cast<int>(s)) != slots.end();
    if (!canary) {
      o.outputs_changed = std::memcmp(d, ref[s], c.slot_bytes[s]) != 0;
      continue;
    }
    // A probed output: compare only the elements the kernel wrote (canary gone).
    size_t es = dtype_size(c.kernel->slots[s].dtype);
    std::vector<uint8_t> can(c.slot_bytes[s]);
    fill_canary(can.data(), can.size(), c.kernel->slots[s].dtype, pattern);
    for (size_t e = 0; e + es <= can.size() && !o.outputs_changed; e += es)
      if (std::memcmp(d + e, can.data() + e, es) != 0 && std::memcmp(d + e, ref[s] + e, es) != 0)
        o.outputs_changed = true;
  }
  for (int s : slots) {
    const uint8_t* d = b.device_bytes(bos[static_cast<size_t>(s)]);
    o.post.emplace_back(d, d + c.slot_bytes[static_cast<size_t>(s)]);
  }
  for (auto h : bos) b.release(h);
  return o;
}

// Elements of probed slot `i` that kept canary A in run `a` and canary B in run `z`.
size_t unwritten(const PlanCall& c, int slot, const std::vector<uint8_t>& a,
                 const std::vector<uint8_t>& z) {
  DType dt = c.kernel->slots[static_cast<size_t>(slot)].dtype;
  std::vector<uint8_t> ca(a.size()), cz(a.size());
  fill_canary(ca.data(), ca.size(), dt, 0);
  fill_canary(cz.data(), cz.size(), dt, 1);
  size_t es = dtype_size(dt), n = 0;  // whole elements: a written value may share bytes
  for (size_t k = 0; k + es <= a.size(); k += es)
    if (std::memcmp(&a[k], &ca[k], es) == 0 && std::memcmp(&z[k], &cz[k], es) == 0) n += es;
  return n;
}

}  // namespace

std::vector<SlotProbe> probe_slots(Backend& b, const PlanCall& c, const BoundKernel& body,
                                   const std::vector<HostSlot>& host,
                                   const std::vector<const uint8_t*>& ref,
                                   const std::vector<int>& slots) {
  std::vector<SlotProbe> out;
  if (slots.empty()) return out;
  Outcome a = run_once(b, c, body, host, ref, slots, 0);
  Outcome z = run_once(b, c, body, host, ref, slots, 1);
  bool changed = a.outputs_changed || z.outputs_changed;
  for (size_t i = 0; i < slots.size(); ++i) {
    SlotProbe p;
    p.slot = slots[i];
    if (!changed || slots.size() == 1) {
      p.read = changed;
      p.unwritten_bytes = unwritten(c, p.slot, a.post[i], z.post[i]);
    } else {
      // A canary that was read can flow into the other probed slots: measure each alone.
      Outcome one = run_once(b, c, body, host, ref, {p.slot}, 0);
      Outcome two = run_once(b, c, body, host, ref, {p.slot}, 1);
      p.read = one.outputs_changed || two.outputs_changed;
      p.unwritten_bytes = unwritten(c, p.slot, one.post[0], two.post[0]);
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace bod
