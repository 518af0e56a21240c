// Shared state of the model.json loader, split over loader*.cpp by section.
#pragma once
#include <string>
#include <vector>

#include "model/json_in.h"
#include "model/model.h"

namespace bod {

struct LoadCtx {
  Model& m;
  std::vector<std::string> dim_names() const;
};

Result<SlotDecl> parse_slot(const json& j, const std::string& path,
                            const std::vector<std::string>& scope);
Status parse_kernels(LoadCtx& c, const json& j, const std::string& path);
// "unknown slot 'x' in kernel k; did you mean 'y'? (its slots: a, b, c)": the message for a
// slot name a kernel does not have (with_locals: a body operand may also name a local).
std::string unknown_slot(const KernelDecl& k, const std::string& name, bool with_locals = false);
Status parse_program(LoadCtx& c, const json& j, const std::string& path);
// "wq[l][0]" / {"placeholder": "wq[l]"} -> Binding, names checked against scope.
Result<Binding> parse_binding(const LoadCtx& c, const json& j, const std::string& path,
                              const std::vector<std::string>& scope);
// Reads the op's operands and params using the op table; `operand_ok` validates a name.
Status parse_op_fields(const json& j, const std::string& path, const OpInfo& info,
                       const std::vector<std::string>& scope, std::map<std::string, Param>& params,
                       std::map<std::string, std::string>& operands);
Result<InitSpec> parse_init(const json& j, const std::string& path);

}  // namespace bod
