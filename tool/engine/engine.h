// The two engines the runner drives on one backend. ReuseEngine implements the optimized
// engine's BO reuse (docs/model-format.md, "What the reuse engine does"); NoReuseEngine is the
// reference: fresh BOs on every call, every slot written. Which BO a slot lands in comes from
// the plan (PlanCall::place); the engines only allocate, write and dispatch.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "runtime/backend.h"

namespace bod {

// The host array a call hands the engine for one slot.
struct HostSlot {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  // XXH3-64 of the bytes, when the caller already took it (hashed): the reuse engine's record
  // of a whole write reuses it instead of hashing the bytes again.
  uint64_t hash = 0;
  bool hashed = false;
  // The bytes stay unchanged and alive for the whole run (a model tensor, the zeros): the
  // backend may share them instead of copying (Backend::write).
  bool stable = false;
};

// What the reuse engine did with one slot this call.
struct SlotWrite {
  BoHandle bo = 0;
  size_t bo_bytes = 0;   // the BO's size, fixed at its first use
  bool written = false;  // host write + sync happened this call
  size_t written_bytes = 0;
  uint64_t written_hash = 0;  // XXH3-64 of the bytes written
};

struct Prepared {
  std::vector<SlotWrite> slots;
  bool failed = false;  // the engine raised instead of running the kernel
  std::string error;    // what it raised
  size_t h2d_bytes = 0;
  int writes = 0;
  const PlanCall* shape_call = nullptr;  // whose slot shapes (and body) the kernel runs with
};

// Who last changed a BO: the call, and whether by its host write or its kernel.
struct LastChange {
  int call = 0;
  bool host_write = false;
};

class ReuseEngine {
 public:
  // `hash_writes` false: SlotWrite::written_hash is left 0 (a run that records nothing).
  explicit ReuseEngine(Backend& b, bool hash_writes = true) : b_(b), hash_writes_(hash_writes) {}
  // Picks or allocates the BO of every slot and does the host writes the rules allow.
  Prepared prepare(const PlanCall& c, const std::vector<HostSlot>& host);
  // Syncs an output BO from the device; returns its mapping's bytes (a zero-copy view reads
  // them again through Backend::host_bytes).
  const uint8_t* read_output(const Prepared& p, int slot);
  LastChange last_change(BoHandle bo) const;
  void note_dispatch(const PlanCall& c, const Prepared& p);
  static constexpr BoHandle kNone = ~BoHandle(0);  // a slot without a BO

 private:
  // The slot's BO (allocated at its first use); false when the slot has none.
  bool bind(const PlanCall& c, int s, SlotWrite& w);
  void write(const PlanCall& c, size_t s, const HostSlot& host, SlotWrite& w);
  // False when slot s is not written: skipped, or a placeholder the real engine cannot write
  // (zero-stride: raises) or turns into a 0-byte BO (empty, first call: not modelled).
  bool placeholder_write(const PlanCall& c, size_t s, bool skip, bool fresh, const SlotWrite& w,
                         Prepared& p, bool& not_run);
  Backend& b_;
  bool hash_writes_ = true;
  std::map<BoKeyId, const PlanCall*> keys_;  // key -> its first call
  std::vector<BoHandle> bos_;                // by Placement::bo (kNone: not allocated yet)
  std::map<BoHandle, LastChange> changed_;
  std::set<BoHandle> zero_byte_;  // BOs the real engine allocates with 0 bytes
};

class NoReuseEngine {
 public:
  explicit NoReuseEngine(Backend& b) : b_(b) {}
  // Allocates fresh BOs for every slot and writes every slot from `host`.
  std::vector<BoHandle> prepare(const PlanCall& c, const std::vector<HostSlot>& host);
  void release(const std::vector<BoHandle>& bos);
  // Counts the writes prepare would do, without allocating or writing (the runner's shadow,
  // when it takes the reuse engine's results instead of running the call).
  void account(const PlanCall& c);
  size_t h2d_bytes = 0;  // running total
  int writes = 0;

 private:
  Backend& b_;
};

// Hands the backend one dispatch of the bound body `k` on `bos` (with what the body does to
// each slot, from its access analysis).
DispatchInfo dispatch_body(Backend& b, const PlanCall& c, const std::vector<BoHandle>& bos,
                           const std::vector<Shape>& shapes, const BoundKernel& k);

}  // namespace bod
