// The program of a model expanded into a flat, ordered list of kernel calls and host steps,
// with every loop variable, shape, binding, bo_key, BO placement and bound kernel body
// resolved. The engines and the runner work on this; nothing downstream evaluates
// expressions, rebuilds a placement or binds a body again.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/bo_key.h"
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
  BoKeyId key;                  // the bo_key (its template expanded) in its cache instance
  std::string bo_key_template;  // as written ("o_ffn_L{l}"); the kernel name when absent
  bool shared_nonstatic = false;
  std::map<int, std::string> alias;  // slot -> pool name
  std::vector<KeptOutput> keep;
  std::string raises;                        // what the real engine raises before any BO ("" none)
  int key_first_call = 0;                    // number of the first call of its key
  std::vector<Placement> place;              // per slot: the BO it lands in (reuse engine)
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
  // What a check run of the plan needs (buffers and plan metadata; what --max-memory caps).
  size_t estimated_bytes = 0;
  // Its parts, and the peak it predicts for the whole process (`-v`; tested against the
  // measured peak).
  struct Memory {
    size_t host = 0;     // model tensors and vars
    size_t bos = 0;      // what the reuse engine's BOs add
    size_t noreuse = 0;  // the largest call's no-reuse buffers, plus the device's spares
    size_t scratch = 0;  // the largest kernel body's scratch (Body::scratch_bytes)
    size_t plan = 0;     // the plan's own metadata
    size_t process = 0;  // the process before any plan
    size_t plan_needs() const { return host + bos + noreuse + scratch + plan; }
    size_t peak() const { return plan_needs() + process; }
  } memory;
};

struct ExpandOptions {
  size_t max_bytes = size_t(16) << 30;  // refuse plans whose buffers would exceed this
  size_t max_steps = 2000000;
  // The run's CPU device shares BO memory (BackendOptions::share; false in timed runs): the
  // memory estimate counts what that device allocates.
  bool share = true;
};

// Expands and validates (bound shapes vs slot shapes, op operand shapes, index ranges,
// memory cap). Errors name the JSON path of the offending step.
Result<Plan> expand(const Model& m, const ExpandOptions& opt = {});

// Shape and dtype of a bound array (empty shape for zeros).
Result<TensorRef> bound_type(const Model& m, const BoundArray& b);

}  // namespace bod
