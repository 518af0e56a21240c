// The program of a model expanded into a flat, ordered list of kernel calls and host steps,
// with every loop variable, shape, binding, bo_key, BO placement and bound kernel body
// resolved. The engines and the runner work on this; nothing downstream evaluates
// expressions, rebuilds a placement or binds a body again.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/placement.h"
#include "model/model.h"
#include "plan/body.h"

namespace bod {

struct BoundArray {
  Binding::Kind kind = Binding::Kind::zeros;
  std::string name;            // tensor or var name ("" for zeros)
  std::vector<int64_t> index;  // leading-dim indices
  std::string text;            // "wq[2]"; "zeros" for unbound slots
  Binding::Placeholder placeholder = Binding::Placeholder::zeros;  // kind == placeholder only
  int64_t row0 = 0, nrows = -1;  // a row range of the region ("x[1:3]"); nrows -1: all rows
};

// The rows [row0, row0 + nrows) of `t`'s leading dimension (nrows -1: `t` itself).
TensorRef slice_rows(const TensorRef& t, int64_t row0, int64_t nrows);

struct Where {
  std::string phase;
  int64_t token = -1;       // decode token number (phase repeat variable), -1 outside
  int64_t layer = -1;       // value of the model's layer variable, -1 outside
  std::string path;         // JSON pointer of the step in model.json
  std::string str() const;  // "decode t=3 l=1"
};

struct KeptOutput {
  int slot = -1;
  BoundArray target;
  bool view = true;
};

// A kernel's reference body bound to one set of slot shapes, with its access analysis; shared
// by every call of the kernel with those shapes.
struct BoundKernel {
  Body body;
  std::vector<SlotAccess> access;  // one per slot
};

struct PlanCall {
  int number = 0;  // 1-based, in execution order
  Where where;
  const KernelDecl* kernel = nullptr;
  Env env;                         // dims, loop variables and kernel params of this call
  std::vector<Shape> slot_shapes;  // evaluated for this call
  std::vector<size_t> slot_bytes;
  std::vector<BoundArray> args;                   // one per slot
  std::vector<SlotRef> statics, inters, outputs;  // as declared (lint checks ranges)
  std::string bo_key;
  std::string bo_key_template;  // as written ("o_ffn_L{l}"); the kernel name when absent
  bool shared_nonstatic = false;
  std::map<int, std::string> alias;  // slot -> pool name
  std::vector<KeptOutput> keep;
  std::string cache;                    // the KernelCache instance: a namespace of keys and pools
  std::string raises;                   // what the real engine raises before any BO ("" none)
  int key_first_call = 0;               // number of the first call of (cache, bo_key)
  std::vector<Placement> place;         // per slot: the BO it lands in (reuse engine)
  std::shared_ptr<const BoundKernel> bound;  // the body at this call's slot shapes
  bool is_static(int s) const;
  bool is_inter(int s) const;
  bool is_output(int s) const;
};

struct PlanHost {
  Where where;
  const HostDecl* decl = nullptr;
  std::map<std::string, BoundArray> operands;
  std::map<std::string, double> params;
};

struct PlanStep {
  bool is_call = true;
  size_t index = 0;  // into calls or hosts
};

struct Plan {
  const Model* model = nullptr;
  std::vector<PlanCall> calls;
  std::vector<PlanHost> hosts;
  std::vector<PlanStep> order;
  size_t estimated_bytes = 0;  // peak memory estimate of a check run
};

struct ExpandOptions {
  size_t max_bytes = size_t(16) << 30;  // refuse plans whose buffers would exceed this
  size_t max_steps = 2000000;
};

// Expands and validates (bound shapes vs slot shapes, op operand shapes, index ranges,
// memory cap). Errors name the JSON path of the offending step.
Result<Plan> expand(const Model& m, const ExpandOptions& opt = {});

// Shape and dtype of a bound array (empty shape for zeros).
Result<TensorRef> bound_type(const Model& m, const BoundArray& b);

}  // namespace bod
