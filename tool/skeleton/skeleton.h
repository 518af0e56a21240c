// `bo-doctor skeleton`: a model.json (docs/model-format.md) that replays a trace's recorded call
// plan — the kernels with their slots, every call in order with the reuse settings it used,
// folded into loops and repeated phases where the recorded calls repeat — with seeded stand-in
// weights and placeholder kernel bodies the user fills in. Built from the Trace alone (it
// includes only core and trace), so a real engine's recording can be turned into a model that
// `lint` and, once the bodies are real, `check` can work on. docs/skeleton.md.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"
#include "trace/trace.h"

namespace bod {

// How every generated kernel's "doc" starts: the body is a stub to replace.
inline constexpr const char* kSkeletonTodo =
    "TODO(bo-doctor skeleton): replace this body with the kernel's reference ops";

// The model; `trace_name` (the trace's file name) goes into its name and description. Fails
// (exit 2) on a trace without calls, a call of a kernel the header does not declare, or a
// bo_key / shared_alias pool name holding '{' or '}' (model.json templates cannot spell it).
Result<nlohmann::ordered_json> skeleton_model(const Trace& t, const std::string& trace_name);

}  // namespace bod
