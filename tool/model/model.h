// The parsed model.json (format version 1, see docs/model-format.md): dims, host tensors,
// host variables, kernels with slots and reference bodies, the program and verification
// settings. Loading validates everything that can be checked without expanding the program.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/npu_binary.h"
#include "core/tensor.h"
#include "kernels/op_table.h"
#include "model/expr.h"
#include "model/init.h"

namespace bod {

inline constexpr int kModelFormatVersion = 1;

// A host tensor (weights, LUTs, token ids): immutable, generated from the seed or loaded.
struct TensorDecl {
  std::string name, path;  // path: JSON pointer of the declaration
  DType dtype = DType::bf16;
  Shape shape;  // evaluated from dims at load
  std::optional<InitSpec> init;
  std::string file, format, key;  // when loaded from a file (file is absolute)
};

// A host variable: mutable arrays the program passes between calls (activations, KV cache).
struct VarDecl {
  std::string name, path;
  DType dtype = DType::bf16;
  Shape shape;
  std::optional<InitSpec> init;  // default: zeros
};

struct SlotDecl {
  std::string name;
  DType dtype = DType::bf16;
  std::vector<Expr> shape;  // over dims and the kernel's params
};

// Rows of a kernel-body operand's 2-D view: "s[r]" (one row), "s[a:b]" or "s[a:b:k]" (every
// k-th row: an interleaved operand). Expressions over dims and kernel params.
struct RowRange {
  bool single = false;  // [r]: one row, shape [cols]
  Expr start, step;
  std::optional<Expr> stop;  // absent: the operand's row count
  std::string text;          // as written, "[0::2]"
};

// One reference op of a kernel body or a host step; operands name slots or kernel locals
// (kernel body) or bindings (host step).
struct OpDecl {
  const OpInfo* info = nullptr;
  std::map<std::string, std::string> operands;  // role -> slot / local name, binding text
  std::map<std::string, RowRange> rows;         // kernel body: role -> rows of the operand
  std::map<std::string, Param> params;
  std::string path;
};

struct KernelDecl {
  std::string name, path;
  std::vector<SlotDecl> slots;
  std::vector<std::string> params;  // names a call must give values for (e.g. "n")
  std::vector<OpDecl> body;
  // Buffers inside the kernel that are no argument (on-chip temporaries): zeros at the start
  // of every dispatch, invisible to the engines and the checks.
  std::vector<SlotDecl> locals;
  NpuBinary npu;
  int slot_index(const std::string& n) const;
  int local_index(const std::string& n) const;
};

// What a call binds to a slot: a tensor or variable (optionally indexed along leading dims),
// a placeholder standing in for freed host weights, or zeros (unbound slot).
struct Binding {
  enum class Kind { zeros, tensor, var, placeholder } kind = Kind::zeros;
  // What a placeholder is as an array: a full-size zero array, numpy's np.empty(0) (a write
  // uploads 0 bytes), or a zero-stride np.broadcast_to (a write raises: not C-contiguous).
  enum class Placeholder { zeros, empty, broadcast } placeholder = Placeholder::zeros;
  std::string name;
  std::vector<Expr> index;
  // "x[l][a:b]": rows a..b-1 of the region the indices select (a contiguous sub-view; read
  // only). Absent: the whole region.
  std::optional<Expr> row_start, row_stop;
  std::string text;  // as written, e.g. "wq[l]"
};

// A slot reference in an index list, written as an integer or a slot name.
struct SlotRef {
  int index = -1;  // resolved at load
  std::string path;
};

struct OutputDecl {
  int slot = -1;
  Binding target;    // a var (optionally indexed)
  bool view = true;  // "view": zero-copy view into the BO (engine default); "copy"
};

struct CallDecl {
  int kernel = -1;
  std::string path;
  std::map<int, Binding> args;
  std::map<std::string, Expr> params;
  std::vector<SlotRef> static_inputs, intermediates;
  std::optional<std::vector<SlotRef>> outputs;  // absent: the last slot
  std::optional<std::string> bo_key;            // template; absent: the kernel name
  bool shared_nonstatic = false;
  std::map<int, std::string> shared_alias;  // slot -> pool name template
  std::string cache;                        // the KernelCache instance ("" = the only one)
  std::vector<OutputDecl> keep;             // where returned outputs go
};

// A host step between calls: a reference op on host arrays, or a host-only action.
struct HostDecl {
  std::string action;          // op name, or a host-only action (host_actions.h)
  const OpInfo* op = nullptr;  // the reference op, or the host action's own table entry
  std::map<std::string, Binding> operands;  // role -> binding
  std::map<std::string, Param> params;
  std::string path;
};

struct LoopDecl;
using StepDecl = std::variant<CallDecl, HostDecl, LoopDecl>;

struct LoopDecl {
  std::string var, path;
  Expr begin, end;  // [begin, end)
  std::vector<StepDecl> steps;
};

struct PhaseDecl {
  std::string name, path;
  std::string token_var;  // decode: the token loop variable ("" for a single pass)
  Expr repeat;            // number of passes (1 for prefill)
  std::vector<StepDecl> steps;
};

struct OutputTolerance {
  double cosine = 0.99, atol = -1, rtol = -1;  // negative: not checked
};

struct VerifyDecl {
  std::map<std::string, OutputTolerance> outputs;  // var name -> tolerance
  int top_k = 5;
};

// An accepted finding, declared in model.json ("suppressions"): findings of `check` whose
// kernel, bo_key and slot match the scope (each optional, "*" globs) are reported as
// suppressed with the reason and do not fail the run (docs/model-format.md §12).
struct SuppressionDecl {
  std::string check;
  std::string kernel, bo_key, slot;  // "" matches any
  std::string reason;                // required: why the finding is accepted
  std::string path;                  // JSON pointer of the entry
};

struct Model {
  std::string name, path, dir;  // path of model.json and its directory
  uint64_t seed = 0;
  Env dims;
  std::string layer_var = "l";
  std::vector<TensorDecl> tensors;
  std::vector<VarDecl> vars;
  std::vector<KernelDecl> kernels;
  std::vector<PhaseDecl> phases;
  VerifyDecl verify;
  std::vector<SuppressionDecl> suppressions;
  const TensorDecl* tensor(const std::string& n) const;
  const VarDecl* var(const std::string& n) const;
  int kernel_index(const std::string& n) const;
};

// Limits on hostile input (docs/model-format.md §13; the JSON and expression ones are in
// model/json_in.h and model/expr.h, the expansion ones in ExpandOptions).
constexpr int64_t kMaxElements = int64_t(1) << 40;           // one tensor, var or slot shape
constexpr uint64_t kMaxModelFileBytes = uint64_t(64) << 20;  // model.json, checked before reading
constexpr int kMaxLoopDepth = 32;                            // loops nested in the program

// Reads and validates model.json. Errors carry the JSON pointer of the offending value.
Result<Model> load_model(const std::string& path);
Result<Model> parse_model(const std::string& json_text, const std::string& path);

}  // namespace bod
