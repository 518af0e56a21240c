#include "report/gate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_set>

#include "checks/registry.h"
#include "core/hash.h"
#include "core/input_file.h"
#include "core/suggest.h"
#include "report/report.h"

namespace bod {

const char* fail_on_name(FailOn f) {
  switch (f) {
    case FailOn::note:
      return "note";
    case FailOn::warning:
      return "warning";
    case FailOn::error:
      return "error";
    case FailOn::never:
      return "never";
  }
  return "?";
}

Result<FailOn> parse_fail_on(const std::string& s) {
  std::string l = lower_ascii(s);
  for (FailOn f : {FailOn::error, FailOn::warning, FailOn::note, FailOn::never})
    if (l == fail_on_name(f)) return f;
  return Error{"--fail-on", "unknown value '" + s + "'" +
                                did_you_mean(l, {"error", "warning", "note", "never"}) +
                                "; expected error, warning, note or never"};
}

const CheckInfo& unused_suppression_info() {
  static const CheckInfo info{
      "unused-suppression",
      Severity::note,
      "a suppression in model.json matches no finding",
      "nothing breaks; the suppression would silently hide a future finding of its check",
      "the gate matches every suppression against the run's findings of its check",
      "remove the suppression, or narrow or correct its kernel / bo_key / slot scope",
      0,
      0,
      true,
      "a stale suppression hides nothing today, so it is a note"};
  return info;
}

namespace {
std::vector<std::string> all_ids() {
  std::vector<std::string> ids;
  for (auto& e : check_registry()) ids.push_back(e.info->id);
  ids.push_back(unused_suppression_info().id);
  return ids;
}

// "*" matches any run of characters; the rest literally.
bool glob(const std::string& pat, const std::string& s) {
  size_t p = 0, i = 0, star = std::string::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pat.size() && pat[p] == s[i]) {
      ++p;
      ++i;
    } else if (star != std::string::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool matches(const Suppression& s, const Finding& f) {
  if (s.check != f.check) return false;
  if (!s.kernel.empty() && !glob(s.kernel, f.kernel)) return false;
  if (!s.bo_key.empty() && !glob(s.bo_key, f.bo_key)) return false;
  if (!s.slot.empty() && !glob(s.slot, f.slot_name) &&
      !(f.slot >= 0 && s.slot == std::to_string(f.slot)))
    return false;
  return true;
}

bool selected(const GateOptions& g, const std::string& id) {
  if (!g.checks.empty() && std::find(g.checks.begin(), g.checks.end(), id) == g.checks.end())
    return false;
  return std::find(g.skip_checks.begin(), g.skip_checks.end(), id) == g.skip_checks.end();
}

std::string slot_label(const Finding& f) {
  if (f.slot < 0) return "";
  return std::to_string(f.slot) + (f.slot_name.empty() ? "" : " (" + f.slot_name + ")");
}
}  // namespace

Status validate_check_ids(const std::vector<std::string>& ids, const std::string& flag) {
  auto known = all_ids();
  for (auto& id : ids)
    if (std::find(known.begin(), known.end(), id) == known.end())
      return Error{flag, "unknown check id '" + id + "'" + did_you_mean(id, known) +
                             " (check ids: " + name_list(known, known.size()) +
                             "; see bo-doctor list-checks)"};
  return ok_status();
}

std::vector<const CheckInfo*> selected_checks(const GateOptions& g) {
  std::vector<const CheckInfo*> out;
  for (auto& e : check_registry())
    if (selected(g, e.info->id)) out.push_back(e.info);
  return out;
}

std::string fingerprint(const Finding& f) {
  // The cache instance only when there is one, so fingerprints of traces without stay as they were.
  std::string id = f.check + '\0' + f.kernel + '\0' + f.bo_key + '\0' +
                   (f.ns.empty() ? std::string() : f.ns + '\0') +
                   (f.slot_name.empty() ? std::to_string(f.slot) : f.slot_name) + '\0' +
                   (f.check == unused_suppression_info().id ? f.path : "");
  return hash_hex(hash_bytes(id.data(), id.size()));
}

Result<std::set<std::string>> read_baseline(const std::string& path) {
  constexpr size_t kMaxBaseline = 64u << 20;
  BOD_TRY(std::string text,
          read_regular_file(path, "baseline file", "a bo-doctor baseline file (--write-baseline)",
                            kMaxBaseline, "64 MiB"));
  auto j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](const std::string& what) {
    return Error{path, what + "; expected a file written by bo-doctor --write-baseline"};
  };
  if (j.is_discarded() || !j.is_object()) return bad("not JSON");
  if (j.value("kind", "") != "bo-doctor-baseline")
    return bad("no \"kind\": \"bo-doctor-baseline\"");
  if (!j.contains("findings") || !j["findings"].is_array()) return bad("no \"findings\" array");
  std::set<std::string> out;
  for (size_t i = 0; i < j["findings"].size(); ++i) {
    auto& e = j["findings"][i];
    if (!e.is_object() || !e.contains("fingerprint") || !e["fingerprint"].is_string())
      return bad("/findings/" + std::to_string(i) + " has no \"fingerprint\" string");
    out.insert(e["fingerprint"].get<std::string>());
  }
  return out;
}

Status apply_gate(Report& r, const GateOptions& g) {
  r.gate = g;
  for (auto& s : g.suppressions) {
    auto known = all_ids();
    if (std::find(known.begin(), known.end(), s.check) == known.end())
      return Error{s.where + "/check", "unknown check id '" + s.check + "'" +
                                           did_you_mean(s.check, known) +
                                           " (see bo-doctor list-checks)"};
  }
  std::vector<Finding> kept;
  for (auto& f : r.findings)
    if (selected(g, f.check)) kept.push_back(std::move(f));
  r.findings = std::move(kept);
  std::vector<bool> used(g.suppressions.size(), false);
  for (auto& f : r.findings) {
    f.fingerprint = fingerprint(f);
    for (size_t i = 0; i < g.suppressions.size(); ++i)
      if (matches(g.suppressions[i], f)) {
        used[i] = true;
        if (f.status == FindingStatus::active) {
          f.status = FindingStatus::suppressed;
          f.status_reason = g.suppressions[i].reason + " (" + g.suppressions[i].where + ")";
        }
      }
    if (f.status == FindingStatus::active && g.has_baseline && g.baseline.count(f.fingerprint))
      f.status = FindingStatus::known;
  }
  // An unused suppression is itself a finding (when its check was selected: otherwise no
  // finding of it could have matched). It is tied to no call; it sorts first.
  std::vector<Finding> unused;
  for (size_t i = 0; i < g.suppressions.size(); ++i) {
    const Suppression& s = g.suppressions[i];
    if (used[i] || !selected(g, s.check) || !selected(g, unused_suppression_info().id)) continue;
    Finding f;
    f.check = unused_suppression_info().id;
    f.severity = Severity::note;
    f.message = "suppression of " + s.check +
                (s.kernel.empty() ? "" : " kernel '" + s.kernel + "'") +
                (s.bo_key.empty() ? "" : " bo_key '" + s.bo_key + "'") +
                (s.slot.empty() ? "" : " slot '" + s.slot + "'") + " matches no finding";
    f.evidence.push_back({"reason", s.reason});
    f.evidence.push_back(
        {"severity", std::string("note: ") + unused_suppression_info().severity_basis});
    f.fix = unused_suppression_info().fix;
    auto colon = s.where.rfind(":/");
    f.path = colon == std::string::npos ? s.where : s.where.substr(colon + 1);
    f.fingerprint = fingerprint(f);
    if (g.has_baseline && g.baseline.count(f.fingerprint)) f.status = FindingStatus::known;
    unused.push_back(std::move(f));
  }
  r.findings.insert(r.findings.begin(), unused.begin(), unused.end());
  // Groups, in order of their first member.
  std::map<std::tuple<std::string, std::string, std::string, int>, size_t> index;
  // What each group already lists (one lookup per member; scanning the lists made a group of
  // n findings O(n^2): 120k findings of one site took 20 s).
  struct Seen {
    std::unordered_set<std::string> slots, bo_keys;
    std::unordered_set<int> calls;
  };
  std::vector<Seen> seen;
  r.groups.clear();
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    std::string site = !f.path.empty() ? "@" + f.path : "#" + f.bo_key;
    auto k = std::make_tuple(f.check, f.kernel, site, static_cast<int>(f.status));
    auto it = index.find(k);
    if (it == index.end()) {
      it = index.emplace(k, r.groups.size()).first;
      r.groups.emplace_back();
      r.groups.back().lead = i;
      r.groups.back().severity = f.severity;
      r.groups.back().status = f.status;
      seen.emplace_back();
    }
    FindingGroup& grp = r.groups[it->second];
    Seen& had = seen[it->second];
    grp.members.push_back(i);
    if (f.severity > grp.severity) {
      grp.severity = f.severity;
      grp.lead = i;
    }
    std::string sl = slot_label(f);
    if (!sl.empty() && had.slots.insert(sl).second) grp.slots.push_back(sl);
    std::string key = key_label(f.ns, f.bo_key);
    if (!f.bo_key.empty() && had.bo_keys.insert(key).second) grp.bo_keys.push_back(key);
    if (f.call && had.calls.insert(f.call).second) grp.calls.push_back(f.call);
    grp.every_call.insert(grp.every_call.end(), f.calls.begin(), f.calls.end());
    if (f.call) grp.every_call.push_back(f.call);
    grp.occurrences += f.occurrences;
  }
  for (auto& grp : r.groups) {
    std::sort(grp.calls.begin(), grp.calls.end());
    std::sort(grp.every_call.begin(), grp.every_call.end());
    grp.every_call.erase(std::unique(grp.every_call.begin(), grp.every_call.end()),
                         grp.every_call.end());
    std::vector<std::string> fps;
    for (size_t m : grp.members) fps.push_back(r.findings[m].fingerprint);
    std::sort(fps.begin(), fps.end());
    std::string all = r.findings[grp.lead].check + '\0' + r.findings[grp.lead].kernel;
    for (auto& f : fps) all += '\0' + f;
    grp.fingerprint = hash_hex(hash_bytes(all.data(), all.size()));
  }
  count_findings(r);
  return ok_status();
}

std::string render_baseline(const Report& r) {
  nlohmann::ordered_json j;
  j["kind"] = "bo-doctor-baseline";
  j["schema_version"] = 1;
  j["tool"] = {{"name", "bo-doctor"}, {"version", BOD_VERSION}};
  j["model"] = r.model_path;
  nlohmann::ordered_json fs = nlohmann::ordered_json::array();
  std::set<std::string> seen;
  for (auto& f : r.findings) {
    if (f.status == FindingStatus::suppressed || !seen.insert(f.fingerprint).second) continue;
    fs.push_back({{"fingerprint", f.fingerprint},
                  {"check", f.check},
                  {"severity", severity_name(f.severity)},
                  {"kernel", f.kernel},
                  {"bo_key", f.bo_key},
                  {"slot", f.slot_name.empty() ? std::to_string(f.slot) : f.slot_name},
                  {"message", f.message}});
  }
  j["findings"] = fs;
  return j.dump(2) + "\n";
}

}  // namespace bod
