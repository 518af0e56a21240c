// intermediate-read: a slot in intermediate_indices is read by the kernel before it is
// written, so skipping its host write feeds the kernel stale bytes.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "intermediate-read", Severity::error,
    "a slot in intermediate_indices is read by the kernel before it is written (e.g. a GEMM "
    "that accumulates into its output)",
    "NaN or garbage on the second call, or right only by luck",
    "the skipped slot held stale bytes before dispatch and the kernel then wrote different "
    "values than in the shadow run (or the outputs diverged), i.e. it read them",
    "drop the slot from intermediate_indices so the host writes it each call, or make the "
    "kernel overwrite it before reading"};

class IntermediateRead final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }
  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    bool others_fine = only_intermediates_stale(r);
    for (auto& s : r.slots) {
      if (s.role != SlotRole::intermediate) continue;
      bool stale = stale_before(s);
      // Stale bytes went in and different values came out; blamed on this slot when nothing
      // else was stale and the kernel's body reads the slot before writing it.
      bool blame = stale && others_fine && s.kernel_reads_first;
      bool wrote_differently =
          blame && s.reuse_post != s.shadow_post && s.stale_diff_bytes < s.diff_bytes;
      bool silent_read = blame && s.reuse_post == s.shadow_post && r.diverged();
      if (!wrote_differently && !silent_read) {
        if (s.probed && s.probe_read) latent(r, s, sink);
        continue;
      }
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "intermediate slot " + s.name + " held stale bytes and the kernel read them: " +
                  (wrote_differently ? std::to_string(s.diff_bytes - s.stale_diff_bytes) +
                                           " bytes it wrote differ from the shadow run"
                                     : std::string("the outputs diverged"));
      f.evidence = {{"device bytes before (reuse vs shadow)", hash_pair(s.reuse_pre, s.shadow_pre)},
                    {"device bytes after (reuse vs shadow)", hash_pair(s.reuse_post, s.shadow_post)}};
      sink.add(std::move(f));
    }
  }

 private:
  static void latent(const CallRecord& r, const SlotRecord& s, FindingSink& sink) {
    Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
    f.latent = true;
    f.message = "intermediate slot " + s.name + " is read by the kernel: filling it with a "
                "canary changed the outputs; today its stale bytes match, so nothing diverges yet";
    f.evidence = {{"probe", "canary in slot changed the outputs"},
                  {"stale before dispatch", stale_before(s) ? "yes" : "no"}};
    sink.add(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Check> make_intermediate_read() { return std::make_unique<IntermediateRead>(); }
const CheckInfo& intermediate_read_info() { return kInfo; }

}  // namespace bod
