// libFuzzer harness: model.json text -> load -> expand (caps of a few MiB) -> run on the CPU
// reference device with both engines -> every check. Exercises the runner, the engines, the
// reference ops and host actions on whatever plan the fuzzer builds (docs/robustness.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "checks/registry.h"
#include "model/model.h"
#include "plan/plan.h"
#include "runner/runner.h"
#include "runtime/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto m = bod::parse_model(text, "fuzz/model.json");
  if (!m) return 0;
  bod::ExpandOptions eo;
  eo.max_bytes = size_t(8) << 20;
  eo.max_steps = 2000;
  auto p = bod::expand(m.value(), eo);
  if (!p) return 0;
  auto d = bod::HostData::load(m.value());
  if (!d) return 0;
  try {
    auto b = bod::make_backend(bod::BackendOptions{"cpu", 0, 1000});
    bod::Trace t = bod::run_plan(p.value(), "fuzz/model.json", d.value(), *b);
    bod::FindingSink sink;
    bod::run_checks(t, sink);
  } catch (const bod::FatalError&) {
    // a bad host step (exit 2) or a backend failure (exit 3): an error, not a crash
  }
  return 0;
}
