// JUnit XML for CI test-result tabs: one testsuite per check, one testcase per bo_key the run
// saw (and per finding tied to no key); a finding that fails the gate is a <failure> carrying
// its text, a check the trace could not feed is <skipped>. docs/report-format.md, "JUnit".
#include <map>
#include <set>
#include <sstream>

#include "report/report.h"

namespace bod {

namespace {

// Text and attribute escaping; control characters XML 1.0 cannot carry become '?'.
std::string xml(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      case '\n':
        o += "&#10;";
        break;
      case '\t':
        o += "&#9;";
        break;
      default:
        o += c < 0x20 ? '?' : static_cast<char>(c);
    }
  }
  return o;
}

std::string finding_text(const Report& r, const Finding& f) {
  std::ostringstream o;
  o << r.location(f.path) << ": " << severity_name(f.severity) << "[" << f.check
    << "]: " << f.message << "\n";
  if (f.call) {
    o << "at call " << f.call << " (" << f.phase;
    if (f.token >= 0) o << " t=" << f.token;
    if (f.layer >= 0) o << " l=" << f.layer;
    o << ") kernel " << f.kernel << ", bo_key '" << f.bo_key << "'";
    if (!f.ns.empty()) o << " of cache '" << f.ns << "'";
    if (f.slot >= 0) o << ", slot " << f.slot << " (" << f.slot_name << ")";
    o << "\n";
  }
  if (f.occurrences > 1)
    o << "seen on " << f.occurrences << " calls (last: call " << f.last_call << ")\n";
  for (auto& [k, v] : f.evidence) o << k << ": " << v << "\n";
  o << "fix: " << f.fix << "\n";
  if (f.status == FindingStatus::known) o << "known: in the baseline\n";
  if (f.status == FindingStatus::suppressed) o << "suppressed: " << f.status_reason << "\n";
  return o.str();
}

struct Case {
  std::string name, file;
  int line = 0;
  std::vector<const Finding*> findings;
};

}  // namespace

std::string render_junit(const Report& r) {
  // Test cases per check: every bo_key of the run, in order of first call.
  std::vector<std::string> keys;
  std::map<std::string, const TraceCall*> first;
  if (r.trace)
    for (auto& c : r.trace->calls) {
      std::string k = (c.ns.empty() ? "" : c.ns + "/") + c.bo_key;
      if (first.emplace(k, &c).second) keys.push_back(k);
    }
  // Checks the trace could not feed at all are skipped (lint's plan-only trace included).
  std::map<std::string, const CoverageGap*> gaps;
  for (auto& g : r.gaps)
    if (!g.partly) gaps[g.check] = &g;
  std::vector<const CheckInfo*> checks = selected_checks(r.gate);
  checks.push_back(&unused_suppression_info());
  std::ostringstream body;
  int total = 0, total_fail = 0, total_skip = 0;
  for (auto* info : checks) {
    if (r.trace && !check_applies(*info, r.trace->header.caps)) continue;  // nothing to judge
    std::vector<Case> cases;
    std::map<std::string, size_t> by_key;
    bool gate_only = info == &unused_suppression_info();
    if (!gate_only)
      for (auto& k : keys) {
        by_key[k] = cases.size();
        cases.push_back({"bo_key " + k, r.model_path, 0, {}});
        auto pos = r.positions.find(first[k]->path);
        if (pos != r.positions.end()) cases.back().line = pos->second.line;
      }
    for (auto& f : r.findings) {
      if (f.check != info->id) continue;
      std::string k;
      if (r.trace && f.call)
        if (const TraceCall* c = r.trace->call(f.call))
          k = (c->ns.empty() ? "" : c->ns + "/") + c->bo_key;
      auto it = by_key.find(k);
      if (it == by_key.end()) {
        it = by_key.emplace(k.empty() ? "@" + f.path : k, cases.size()).first;
        cases.push_back({k.empty() ? (f.path.empty() ? f.message : f.path) : "bo_key " + k,
                         r.model_path,
                         0,
                         {}});
      }
      cases[it->second].findings.push_back(&f);
    }
    auto gap = gaps.find(info->id);
    if (cases.empty()) cases.push_back({"run", r.model_path, 0, {}});
    int failures = 0, skipped = 0;
    std::ostringstream suite;
    for (auto& c : cases) {
      suite << "    <testcase classname=\"bo-doctor." << xml(info->id) << "\" name=\""
            << xml(c.name) << "\"";
      if (!c.file.empty()) suite << " file=\"" << xml(c.file) << "\"";
      if (c.line) suite << " line=\"" << c.line << "\"";
      suite << " time=\"0\">\n";
      const Finding* failing = nullptr;
      std::string out;
      for (auto* f : c.findings) {
        if (!failing && r.fails(*f)) failing = f;
        out += finding_text(r, *f);
      }
      if (failing) {
        ++failures;
        suite << "      <failure type=\"" << severity_name(failing->severity) << "\" message=\""
              << xml(failing->message) << "\">" << xml(out) << "</failure>\n";
      } else if (gap != gaps.end() && c.findings.empty()) {
        ++skipped;
        suite << "      <skipped message=\"not run: the trace lacks " << xml(gap->second->missing)
              << "\"/>\n";
      } else if (!out.empty()) {
        suite << "      <system-out>" << xml(out) << "</system-out>\n";
      }
      suite << "    </testcase>\n";
    }
    body << "  <testsuite name=\"" << xml(info->id) << "\" tests=\"" << cases.size()
         << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped
         << "\" time=\"0\">\n";
    if (r.ran && !r.coverage.note().empty())  // what the verdict could not see, on every suite
      body << "    <properties><property name=\"coverage\" value=\"" << xml(r.coverage.note())
           << "\"/></properties>\n";
    body << suite.str() << "  </testsuite>\n";
    total += static_cast<int>(cases.size());
    total_fail += failures;
    total_skip += skipped;
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites name=\"bo-doctor " << xml(r.command) << " " << xml(r.subject) << "\" tests=\""
    << total << "\" failures=\"" << total_fail << "\" errors=\"0\" skipped=\"" << total_skip
    << "\" time=\"0\">\n"
    << body.str() << "</testsuites>\n";
  return o.str();
}

}  // namespace bod
