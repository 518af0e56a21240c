// The two engines the shadow runner drives on one backend. ReuseEngine implements the
// reference engine's BO reuse exactly (DESIGN §2); ShadowEngine is the no-reuse baseline:
// fresh BOs every call, every slot written.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kernels/body.h"
#include "model/plan.h"
#include "runtime/backend.h"

namespace bod {

// The host array a call hands the engine for one slot.
struct HostSlot {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  bool placeholder = false;
  std::string binding;  // text, e.g. "wq[2]"
};

// Where a slot's BO came from and what the engine did with it this call.
struct Placement {
  BoHandle bo = 0;
  std::string bo_id;
  size_t bo_bytes = 0;
  bool written = false;
  size_t written_bytes = 0;
  std::string resident;    // binding last written into this BO before this call
  int resident_call = 0;
  uint64_t resident_hash = 0;  // hash of the host bytes of that write
  bool size_mismatch = false;
  std::string size_note;
  bool shared = false;     // another slot of the same call got the same BO
};

struct Prepared {
  std::vector<Placement> slots;
  bool first_of_key = false;
  int key_first_call = 0;
  bool failed = false;
  std::string fail_reason;
  size_t h2d_bytes = 0;
  int writes = 0;
  const PlanCall* shape_call = nullptr;  // whose slot shapes the kernel runs with
};

class ReuseEngine {
 public:
  explicit ReuseEngine(Backend& b) : b_(b) {}
  // Picks or allocates the BO of every slot and does the host writes the rules allow.
  Prepared prepare(const PlanCall& c, const std::vector<HostSlot>& host);
  // Syncs an output BO from the device; returns the zero-copy view into its mapping.
  uint8_t* read_output(const Prepared& p, int slot);
  // Who last changed a BO: "call 12 (o_ffn)"; used when a view turns out overwritten.
  std::string last_change(BoHandle bo) const;
  void note_dispatch(const PlanCall& c, const Prepared& p);

 private:
  struct KeySet {
    std::map<size_t, BoHandle> bos;  // slot -> BO (pooled slots are not in the set)
    const PlanCall* first = nullptr;
  };
  struct BoState {
    std::string resident;
    int resident_call = 0;
    uint64_t resident_hash = 0;
    std::string last_change;
  };
  BoHandle pooled(std::map<std::string, BoHandle>& pools, const std::string& id, size_t bytes,
                  const PlanCall& c, int slot);
  Backend& b_;
  std::map<std::string, KeySet> keys_;
  std::map<std::string, BoHandle> shared_, alias_;
  std::map<BoHandle, BoState> state_;
};

class ShadowEngine {
 public:
  explicit ShadowEngine(Backend& b) : b_(b) {}
  // Allocates fresh BOs for every slot and writes every slot from `host`.
  std::vector<BoHandle> prepare(const PlanCall& c, const std::vector<HostSlot>& host);
  void release(const std::vector<BoHandle>& bos);
  size_t h2d_bytes = 0;  // running total
  int writes = 0;

 private:
  Backend& b_;
};

// Hands the backend one dispatch of `body` on `bos`.
DispatchInfo dispatch_body(Backend& b, const PlanCall& c, const std::vector<BoHandle>& bos,
                           const std::vector<Shape>& shapes, const Body& body);

}  // namespace bod
