// Probing: extra no-reuse runs of one call with chosen slots filled with canary patterns
// instead of their host data. A slot whose canary changes the outputs is read by the kernel;
// a canary byte that survives both patterns was never written. This finds intermediate-slot
// bugs whose stale bytes happen to equal the fresh ones today (latent), and lets classify
// infer each slot's role from behaviour.
#pragma once
#include <vector>

#include "engine/engine.h"

namespace bod {

struct SlotProbe {
  int slot = -1;
  bool read = false;           // the outputs changed when this slot held a canary
  size_t unwritten_bytes = 0;  // bytes of elements that kept the canary in both runs
};

// Canary fill of `n` bytes of `dtype`: pattern 0 is a NaN pattern, pattern 1 a distinct
// finite one (so a kernel that happens to write NaN is not mistaken for "unwritten").
void fill_canary(uint8_t* dst, size_t n, DType dtype, int pattern);

// Probes `slots` of call `c` (host data `host`, the no-reuse engine's inputs).
// `reference_outputs[s]` is the no-reuse engine's output bytes of each output slot (null for
// others). When `each` is false, all slots are probed together first and one at a time only if the
// outputs changed.
std::vector<SlotProbe> probe_slots(Backend& b, const PlanCall& c, const BoundKernel& body,
                                   const std::vector<HostSlot>& host,
                                   const std::vector<const uint8_t*>& reference_outputs,
                                   const std::vector<int>& slots);

}  // namespace bod
