// libFuzzer harness: model.json text -> parse_model -> expand with small caps -> lint. Any input
// must end in a Model/Plan or an Error, within bounded time and memory (docs/robustness.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "checks/registry.h"
#include "model/model.h"
#include "plan/plan.h"
#include "runner/runner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto m = bod::parse_model(text, "fuzz/model.json");
  if (!m) return 0;
  bod::ExpandOptions eo;
  eo.max_bytes = size_t(64) << 20;  // small caps: the fuzzer must not need gigabytes
  eo.max_steps = 20000;
  auto p = bod::expand(m.value(), eo);
  if (!p) return 0;
  bod::Trace t = bod::plan_trace(p.value(), "fuzz/model.json");
  bod::FindingSink sink;
  bod::run_checks(t, sink);
  return 0;
}
