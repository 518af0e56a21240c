// unwritten-output: an output the kernel changes on other runs came back from a run with exactly
// the bytes it had before it, although the run's inputs changed: the kernel did not run (a bare
// herd without its launch wrapper, a wrong instruction stream) and the host reads the previous
// result as if new.
#include <cstdlib>
#include <map>
#include <string_view>
#include <tuple>

#include "checks/checks.h"
#include "checks/xrt_util.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "unwritten-output",
    Severity::error,
    "an output came back from a completed run with exactly the bytes it had before the run, "
    "although the run's inputs changed and the same kernel changed that output on other runs",
    "the host reads the previous run's result as if new: a token repeats, a layer's output "
    "stays frozen, no error anywhere (a kernel that silently did not run, e.g. a bare herd "
    "without its launch wrapper)",
    "a recording at the XRT boundary hashes every read back of a BO; a range read back after a "
    "run (covered by a sync from the device) is compared with the same range read back after "
    "the BO's previous run when nothing was changed on the host or synced to the device there "
    "in between. Reported when every compared range came back the same while another argument "
    "of the run got new bytes (synced to the device) or another scalar value since the kernel's "
    "previous run, and the same kernel's argument at that index came back changed on another "
    "run (a device that computes nothing, such as XRT's noop device, never does: no finding)",
    "check that the run really launched the kernel: the instruction stream / launch wrapper it "
    "was given, the kernel name in the xclbin, the run's arguments; compare the output with a "
    "reference for that token",
    kNeedXrt,
    0,
    false,
    "every byte the host read back is the previous run's, although the device was given new "
    "input bytes and this kernel changes this output on other runs"};

// The first `n` items, "a, b and 2 more".
std::string listed(const std::vector<std::string>& v, size_t n = 3) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < n; ++i)
    s += (i ? (i + 1 == v.size() ? " and " : ", ") : "") + v[i];
  if (v.size() > n) s += " and " + std::to_string(v.size() - n) + " more";
  return s;
}

}  // namespace

void run_unwritten_output(const Trace& t, FindingSink& sink) {
  if (lacks(t, kInfo)) return;
  using Id = std::tuple<std::string_view, std::string_view, int>;  // ns, kernel, slot
  // Per (ns, kernel, slot): the runs whose read-back came back changed.
  std::map<Id, std::vector<int>> writes;
  for (auto& c : t.calls)
    for (auto& s : c.slots)
      if (s.xrt->is_bo && !s.xrt->out_changed.empty())
        writes[{c.ns, c.kernel, s.slot}].push_back(c.number);
  if (writes.empty()) return;  // no run of any kernel was seen changing an output
  std::map<std::pair<std::string_view, std::string_view>, const TraceCall*> previous;
  for (auto& c : t.calls) {
    const TraceCall* prev = previous[{c.ns, c.kernel}];
    previous[{c.ns, c.kernel}] = &c;
    if (c.xrt.state != "completed") continue;  // not known to have run: run-not-completed
    for (auto& s : c.slots) {
      const XrtSlot& x = s.xrt;
      if (!x.is_bo || x.out_compared.empty() || !x.out_changed.empty()) continue;
      auto w = writes.find({c.ns, c.kernel, s.slot});
      if (w == writes.end()) continue;  // this kernel never changed this output
      // The inputs that changed: new bytes the device got, or another scalar value.
      std::vector<std::string> bos, scalars;
      for (auto& o : c.slots) {
        if (o.slot == s.slot) continue;
        if (o.xrt->is_bo) {
          if (o.xrt->bo == x.bo) continue;
          ByteRanges sent = range_minus(o.xrt->new_values, o.xrt->unsynced);
          if (!sent.empty())
            bos.push_back(o.name + " (BO " + std::to_string(o.xrt->bo) + "): " + range_text(sent));
        } else if (prev && static_cast<size_t>(o.slot) < prev->slots.size()) {
          const TraceSlot& p = prev->slots[static_cast<size_t>(o.slot)];
          if (!p.xrt->is_bo && p.xrt->value != o.xrt->value)
            scalars.push_back(o.name + ": " + std::to_string(p.xrt->value) + " -> " +
                              std::to_string(o.xrt->value));
        }
      }
      if (bos.empty() && scalars.empty()) continue;  // same inputs, same output: no verdict
      // The nearest other run that changed this output.
      int other = 0;
      for (int n : w->second)
        if (n != c.number && (!other || std::abs(n - c.number) < std::abs(other - c.number)))
          other = n;
      if (!other) continue;
      Finding f = make_finding(kInfo, c, s.slot, c.key_first_call);
      f.message = range_text(x.out_compared) + " of " + xrt_bo_name(s) + " came back from " +
                  xrt_run_name(c) + " exactly as after the BO's previous run, although " +
                  (bos.empty() ? "a scalar argument changed" : "its inputs got new bytes") + "; " +
                  c.kernel + " changed this output on run " + std::to_string(other);
      f.evidence.push_back({"read back unchanged", range_text(x.out_compared) + " (" +
                                                       std::to_string(range_bytes(x.out_compared)) +
                                                       " bytes)"});
      if (!bos.empty()) f.evidence.push_back({"new input bytes sent", listed(bos)});
      if (!scalars.empty()) f.evidence.push_back({"scalar arguments changed", listed(scalars)});
      std::vector<std::string> runs;
      for (int n : w->second) runs.push_back("run " + std::to_string(n));
      f.evidence.push_back({"this output came back changed on", listed(runs, 4)});
      if (bos.empty()) {
        f.severity = Severity::warning;
        f.severity_basis =
            "only a scalar argument changed (a counter or a flag the kernel may ignore); no BO "
            "argument got new bytes";
      }
      sink.add(std::move(f));
    }
  }
}

const CheckInfo& unwritten_output_info() {
  return kInfo;
}

}  // namespace bod
