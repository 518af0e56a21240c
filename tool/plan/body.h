// A kernel's reference body bound to one call's slot shapes: ready to run on any backend's
// slot tensors, and analysed for which slots it reads before writing (B2 safety).
#pragma once
#include <vector>

#include "model/model.h"

namespace bod {

struct BodyOp {
  OpCall call;                           // operands carry shape/dtype; data set at run time
  std::map<std::string, int> slot_of;    // role -> slot index
};

struct Body {
  std::vector<BodyOp> ops;
  // Runs every op on `slots` (one TensorRef per kernel slot, in slot order).
  void run(const std::vector<TensorRef>& slots) const;
};

// An op's params evaluated in `env`, defaults for those not given; errors name path/param.
// (Kernel body ops and host steps share it.)
Result<std::map<std::string, double>> eval_params(const OpInfo& op,
                                                  const std::map<std::string, Param>& given,
                                                  const Env& env, const std::string& path);

// Evaluates the body's params in `env` (dims + kernel params) for the given slot shapes.
Result<Body> bind_body(const KernelDecl& k, const Env& env, const std::vector<Shape>& shapes);

struct SlotAccess {
  bool read_before_write = false;  // some op reads it before it is fully written
  bool overwritten = false;        // fully written before any read
  bool written = false;            // written at all (fully or partly)
  // Every row it writes is written before any op of the body reads it (rows: the 2-D view;
  // ops write leading rows and read whole operands).
  bool rewritten_before_read = false;
};
std::vector<SlotAccess> analyze_access(const Body& b, size_t n_slots);

}  // namespace bod
