// Host-only actions a program can run between kernel calls, besides the reference ops
// (which can also run on the host). Same table shape as op_table so one parser serves both.
#pragma once
#include <string_view>
#include <vector>

#include "kernels/op_table.h"

namespace bod {

const std::vector<OpInfo>& host_action_table();
const OpInfo* find_host_action(std::string_view name);
std::string host_action_names();

// Shape/dtype check of a host-only action before running (operands carry shapes only).
// Returns "" or one sentence naming the operand and what is expected.
std::string check_host_action(const OpCall& call);

// Runs a host-only action. Returns "" or an error sentence (bad row offset, ...).
// `tokens` receives the token chosen by argmax when its `record` param is set.
std::string run_host_action(const OpCall& call, std::vector<int32_t>* tokens);

}  // namespace bod
