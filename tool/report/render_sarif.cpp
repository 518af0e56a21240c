// SARIF 2.1.0 (OASIS) for code scanning: one rule per check id, one result per finding group
// with its physical location in model.json (line and column from the JSON pointer), the bo_key's
// first call as a related location, and a fingerprint that follows the finding, not the line.
// docs/report-format.md, "SARIF".
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/suggest.h"
#include "report/report.h"

namespace bod {

namespace {
using J = nlohmann::ordered_json;

// A file path as a URI reference: relative paths stay relative (to the working folder the
// run was started in), absolute ones become file:// URIs; reserved characters are escaped.
std::string uri_of(const std::string& path) {
  std::string out = path.size() && path[0] == '/' ? "file://" : "";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

const char* level(Severity s) {
  switch (s) {
    case Severity::error:
      return "error";
    case Severity::warning:
      return "warning";
    case Severity::note:
      return "note";
  }
  return "none";
}

// A location: model.json at the pointer's line and column; a recorded "file.py:42" as that
// file and line; else the model (or trace) file alone with the pointer as a logical location.
J location(const Report& r, const std::string& pointer) {
  J phys;
  auto pos = r.positions.find(pointer);
  if (pos != r.positions.end()) {
    phys["artifactLocation"] = {{"uri", uri_of(r.model_path)}};
    phys["region"] = {{"startLine", pos->second.line}, {"startColumn", pos->second.col}};
    return J{{"physicalLocation", phys}};
  }
  auto colon = pointer.rfind(':');
  bool file_line = r.model_path.empty() && colon != std::string::npos &&
                   colon + 1 < pointer.size() &&
                   pointer.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                   pointer.size() - colon < 10;
  if (file_line) {
    phys["artifactLocation"] = {{"uri", uri_of(pointer.substr(0, colon))}};
    phys["region"] = {{"startLine", std::max(1, std::stoi(pointer.substr(colon + 1)))}};
    return J{{"physicalLocation", phys}};
  }
  std::string file = !r.model_path.empty() ? r.model_path : r.subject;
  J loc;
  if (!file.empty() && file != "-")
    loc["physicalLocation"] = {{"artifactLocation", {{"uri", uri_of(file)}}}};
  if (!pointer.empty())
    loc["logicalLocations"] = J::array({J{{"fullyQualifiedName", pointer}, {"kind", "element"}}});
  return loc;
}

J rule(const CheckInfo& c) {
  std::string anchor = c.id;
  return J{{"id", c.id},
           {"name", c.id},
           {"shortDescription", {{"text", c.title}}},
           {"fullDescription", {{"text", std::string(c.title) + ". Symptom: " + c.symptom}}},
           {"help",
            {{"text", std::string("Detection: ") + c.detection + " Fix: " + c.fix},
             {"markdown", std::string("**Detection:** ") + c.detection + "\n\n**Fix:** " + c.fix +
                              "\n\nSee `bo-doctor explain " + c.id + "` and docs/checks.md."}}},
           {"helpUri", "docs/checks.md#" + anchor},
           {"defaultConfiguration", {{"level", level(c.severity)}}},
           {"properties", {{"tags", J::array({"bo-reuse"})}}}};
}
}  // namespace

std::string render_sarif(const Report& r) {
  std::vector<const CheckInfo*> rules = selected_checks(r.gate);
  rules.push_back(&unused_suppression_info());
  auto rule_index = [&](const std::string& id) {
    for (size_t i = 0; i < rules.size(); ++i)
      if (id == rules[i]->id) return static_cast<int>(i);
    return -1;
  };
  J jr = J::array();
  for (auto* c : rules) jr.push_back(rule(*c));
  J results = J::array();
  for (auto& g : r.groups) {
    const Finding& f = r.findings[g.lead];
    std::string text = f.message;
    if (g.members.size() > 1) {
      std::vector<std::string> calls;
      for (int c : g.calls) calls.push_back(std::to_string(c));
      text += " (one cause, " + std::to_string(g.members.size()) + " findings";
      if (g.slots.size() > 1) text += "; slots " + name_list(g.slots, 8);
      if (g.bo_keys.size() > 1) text += "; bo_keys " + name_list(g.bo_keys, 4);
      text += "; calls " + name_list(calls, 8) + ")";
    }
    text += " Fix: " + f.fix;
    J res{{"ruleId", f.check}};
    int idx = rule_index(f.check);
    if (idx >= 0) res["ruleIndex"] = idx;
    res["level"] = level(g.severity);
    res["message"] = {{"text", text}};
    J loc = location(r, f.path);
    if (f.call) {
      std::string name =
          f.kernel +
          (f.slot >= 0 ? " slot " + std::to_string(f.slot) + " (" + f.slot_name + ")" : "");
      J logical{{"name", name},
                {"fullyQualifiedName", key_label(f.ns, f.bo_key) + "/" + name},
                {"kind", "function"}};
      if (!loc.contains("logicalLocations")) loc["logicalLocations"] = J::array();
      loc["logicalLocations"].push_back(logical);
    }
    res["locations"] = J::array({loc});
    const TraceCall* first = r.trace && f.key_first_call && !f.first_call_of_key
                                 ? r.trace->call(f.key_first_call)
                                 : nullptr;
    if (first) {
      J rel = location(r, first->path);
      rel["id"] = 1;
      rel["message"] = {{"text", "first call of bo_key '" + f.bo_key + "' (call " +
                                     std::to_string(first->number) + ", " + first->where() + ")"}};
      res["relatedLocations"] = J::array({rel});
    }
    res["partialFingerprints"] = {{"boDoctorFinding/v1", g.fingerprint}};
    if (r.gate.has_baseline)
      res["baselineState"] = g.status == FindingStatus::known ? "unchanged" : "new";
    if (g.status == FindingStatus::suppressed)
      res["suppressions"] = J::array(
          {J{{"kind", "inSource"}, {"status", "accepted"}, {"justification", f.status_reason}}});
    J props{{"call", f.call},     {"phase", f.phase},
            {"kernel", f.kernel}, {"bo_key", f.bo_key},
            {"slots", g.slots},   {"bo_keys", g.bo_keys},
            {"calls", g.calls},   {"occurrences", g.occurrences},
            {"latent", f.latent}, {"pointer", f.path}};
    res["properties"] = props;
    results.push_back(res);
  }
  J run{{"tool",
         {{"driver",
           {{"name", "bo-doctor"},
            {"version", BOD_VERSION},
            {"semanticVersion", BOD_VERSION},
            {"informationUri", "docs/checks.md"},
            {"rules", jr}}}}},
        {"columnKind", "unicodeCodePoints"},
        {"results", results},
        {"properties",
         {{"command", r.command},
          {"verdict", r.verdict()},
          {"fail_on", fail_on_name(r.gate.fail_on)}}}};
  if (r.ran && !r.coverage.note().empty()) run["properties"]["coverage"] = r.coverage.note();
  J j{{"version", "2.1.0"}, {"runs", J::array({run})}};
  return j.dump(2) + "\n";
}

}  // namespace bod
