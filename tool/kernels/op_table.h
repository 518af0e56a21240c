// The reference ops a kernel body is made of. One table drives parsing of model.json bodies,
// shape checking, access analysis (which slots an op reads / writes, fully or partly) and the
// docs, so they cannot drift apart.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace bod {

enum class Access { read, write };

// One operand of an op, referring to a kernel slot by name in model.json.
struct OperandSpec {
  const char* role;  // field name in the op object, e.g. "a", "out"
  bool required;
  Access access;  // write operands are outputs; `accumulate`/`rows` make writes partial
};

// One numeric parameter; model.json gives a number or a dim expression.
struct ParamSpec {
  const char* name;
  bool required;
  double default_value;
  const char* help;
};

struct OpCall;

struct OpInfo {
  const char* name;
  const char* summary;
  std::vector<OperandSpec> operands;
  std::vector<ParamSpec> params;
  // Host-only actions (host_actions.h) carry their own shape check and run; both null for a
  // reference op (which has check_shapes and compute below). Callers test `run` instead of
  // looking the name up.
  std::string (*check)(const OpCall&) = nullptr;
  std::string (*run)(const OpCall&, std::vector<int32_t>* tokens) = nullptr;
  // For an action that writes only part of its write operand (write_rows: a few rows of a KV
  // cache): {byte offset, byte count} of that part, so the bytes around it keep their hashes.
  // Called with the operands bound and before the shape check: an invalid call answers with
  // the whole operand. Null: it writes all of it.
  std::pair<size_t, size_t> (*written_part)(const OpCall&) = nullptr;
  // A reference op's own shape check, after the ones every op gets (operands bound and known,
  // dtypes): "" or the message without the op's name. Null: nothing more to check.
  std::string (*check_shapes)(const OpCall&) = nullptr;
  // A reference op's implementation (what run_op runs).
  void (*compute)(const OpCall&) = nullptr;
  // Operands of any dtype (the op converts: copy, cast, fill). Otherwise bf16 or f32, and i32
  // for `ids` and `kv_len`.
  bool any_dtype = false;
};

const std::vector<OpInfo>& op_table();
const OpInfo* find_op(std::string_view name);
std::string op_names();  // "gemm, gemv, ..." for error messages

// An op ready to run: operands bound to tensors, params evaluated to numbers
// (absent optional params hold their table default).
struct OpCall {
  const OpInfo* info = nullptr;
  std::map<std::string, TensorRef> operands;
  std::map<std::string, double> params;
  double param(const std::string& n) const;
  bool has(const std::string& role) const { return operands.count(role) != 0; }
  const TensorRef& operand(const std::string& role) const { return operands.at(role); }
};

// Empty when the operand shapes fit; otherwise one sentence naming the operand, what it is and
// what is expected, e.g. "b is [32,64] but a has 48 columns; expected b rows == 48".
std::string check_op_shapes(const OpCall& call);

// Runs the op on its tensors: f32 accumulation, bf16 results rounded to nearest even.
// Precondition: check_op_shapes(call) is empty.
void run_op(const OpCall& call);

// Number of leading rows of `out` the op writes (all rows unless the `rows` param limits it).
int64_t rows_written(const OpCall& call);

}  // namespace bod
