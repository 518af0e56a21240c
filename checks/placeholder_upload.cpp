// placeholder-upload: a placeholder standing in for freed host weights is uploaded into a BO.
#include "checks/checks.h"

namespace bod {
namespace {

const CheckInfo kInfo{
    "placeholder-upload", Severity::error,
    "a key's first call uploads placeholder data into a static slot (host weights were freed "
    "before the key was preloaded)",
    "a layer silently runs on zero weights",
    "lint: the first call of a bo_key binds a placeholder, or a placeholder sits in a slot that "
    "is not static; run: the reuse engine wrote a placeholder into a BO",
    "preload every bo_key (one call with the real weights) before freeing host weights, or keep "
    "the weights until the key's first call"};

class PlaceholderUpload final : public Check {
 public:
  const CheckInfo& info() const override { return kInfo; }

  void lint(const Plan& p, FindingSink& sink) override {
    auto first = key_first_calls(p);
    for (auto& c : p.calls)
      for (size_t s = 0; s < c.args.size(); ++s) {
        if (c.args[s].kind != Binding::Kind::placeholder) continue;
        int si = static_cast<int>(s);
        bool uploads = first[c.bo_key] == c.number || !c.is_static(si);
        if (!uploads) continue;
        Finding f = make_finding(kInfo, c, si, first[c.bo_key]);
        f.message = "placeholder for '" + c.args[s].text + "' is uploaded into slot " +
                    f.slot_name + (c.is_static(si) ? " on the first call of bo_key '" + c.bo_key + "'"
                                                   : " (not static: written every call)");
        sink.add(std::move(f));
      }
  }

  void on_call(const CallRecord& r, FindingSink& sink) override {
    if (r.failed) return;  // the reuse engine never ran it: size-mismatch says why
    for (auto& s : r.slots) {
      if (!s.placeholder || !s.written) continue;
      Finding f = make_finding(kInfo, *r.call, s.slot, r.key_first_call);
      f.message = "placeholder for '" + s.binding.text + "' was written into slot " + s.name +
                  "; the kernel ran on placeholder data instead of the weights";
      f.evidence = {{"device bytes reuse vs shadow", hash_pair(s.reuse_pre, s.shadow_pre)}};
      sink.add(std::move(f));
    }
  }
};

}  // namespace

std::unique_ptr<Check> make_placeholder_upload() { return std::make_unique<PlaceholderUpload>(); }
const CheckInfo& placeholder_upload_info() { return kInfo; }

}  // namespace bod
