// A kernel's reference body bound to one call's slot shapes: ready to run on any backend's
// slot tensors, and analysed for which slots it reads before writing (B2 safety).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "model/model.h"

namespace bod {

// Where an op operand's data lies: rows row0, row0+step, ... (nrows of them) of the 2-D view
// of a slot or a kernel local.
struct OperandPlace {
  int slot = -1;   // kernel slot index, or -1 for a local
  int local = -1;  // kernel local index, or -1 for a slot
  int64_t row0 = 0, nrows = 0, step = 1;
  int64_t total_rows = 0, cols = 0;  // of the whole slot / local
};

struct BodyOp {
  OpCall call;                             // operands carry shape/dtype; data set at run time
  std::map<std::string, OperandPlace> at;  // role -> where its data lies
};

struct Body {
  std::vector<BodyOp> ops;
  std::vector<TensorRef> locals;  // shape and dtype of each kernel local (no data)
  // Runs every op on `slots` (one TensorRef per kernel slot, in slot order); locals start as
  // zeros on every run.
  void run(const std::vector<TensorRef>& slots) const;
  // Bytes a run holds besides its slots at its peak: the locals plus the largest op's copies
  // of strided operands (run() gathers those rows). For the memory estimate.
  size_t scratch_bytes() const;
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
  // an op reads the rows of its operands and writes the leading `rows` of its output's).
  bool rewritten_before_read = false;
  // The rows it writes, as runs [first, end) of the `total_rows` rows of its 2-D view, in
  // order: a dispatch re-hashes only the bytes of these rows (BoHashes::after_dispatch).
  std::vector<std::pair<int64_t, int64_t>> written_rows;
  int64_t total_rows = 0;
};
std::vector<SlotAccess> analyze_access(const Body& b, size_t n_slots);

}  // namespace bod
