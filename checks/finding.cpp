#include "checks/finding.h"

#include <algorithm>
#include <tuple>

namespace bod {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::note:
      return "note";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "?";
}

const char* finding_status_name(FindingStatus s) {
  switch (s) {
    case FindingStatus::active:
      return "new";
    case FindingStatus::known:
      return "known";
    case FindingStatus::suppressed:
      return "suppressed";
  }
  return "?";
}

std::string key_label(const std::string& ns, const std::string& bo_key) {
  return ns.empty() ? bo_key : ns + "/" + bo_key;
}

void FindingSink::add(Finding f) {
  if (f.last_call == 0) f.last_call = f.call;
  bool stated = false;
  for (auto& [k, v] : f.evidence) stated = stated || k == "severity";
  if (!stated && f.severity_basis)
    f.evidence.push_back(
        {"severity", std::string(severity_name(f.severity)) + ": " + f.severity_basis});
  // Each part length-prefixed, so no two identities spell the same string.
  std::string id;
  for (const std::string* part : {&f.check, &f.kernel, &f.bo_key, &f.ns})
    id += std::to_string(part->size()) + ":" + *part;
  id += std::to_string(f.slot);
  auto [at, added] = index_.emplace(std::move(id), items_.size());
  if (!added) {
    size_t i = at->second;
    Finding& g = items_[i];
    // A more severe occurrence supersedes less severe ones, a diverging one latent ones (its
    // call and evidence are what bite); otherwise the earliest occurrence is kept.
    bool supersede = f.severity > g.severity || (f.severity == g.severity && g.latent && !f.latent);
    bool downgrade = f.severity < g.severity || (f.latent && !g.latent);
    bool earlier = f.call != 0 && (g.call == 0 || f.call < g.call);
    calls_[i].insert(f.call);
    int last = std::max(g.last_call, f.call);
    if (supersede || (earlier && !downgrade)) g = std::move(f);
    g.occurrences = static_cast<int>(calls_[i].size());
    g.last_call = last;
    return;
  }
  calls_.push_back({f.call});
  items_.push_back(std::move(f));
}

std::vector<Finding> FindingSink::sorted() const {
  auto v = items_;
  for (size_t i = 0; i < v.size(); ++i)
    for (int c : calls_[i])
      if (c) v[i].calls.push_back(c);
  std::stable_sort(v.begin(), v.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.call, a.check, a.kernel, a.slot, a.bo_key) <
           std::tie(b.call, b.check, b.kernel, b.slot, b.bo_key);
  });
  return v;
}

bool FindingSink::has_error() const {
  return std::any_of(items_.begin(), items_.end(),
                     [](const Finding& f) { return f.severity == Severity::error; });
}

}  // namespace bod
