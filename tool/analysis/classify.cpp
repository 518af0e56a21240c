#include "analysis/classify.h"

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace bod {

const char* role_name(InferredRole r) {
  switch (r) {
    case InferredRole::static_input:
      return "static";
    case InferredRole::intermediate:
      return "intermediate";
    case InferredRole::in_out:
      return "in-out";
    case InferredRole::input:
      return "input";
    case InferredRole::output_only:
      return "output";
  }
  return "?";
}

namespace {

struct Acc {
  bool read = false, written = false, partial = false, probed = false;
  bool constant = true, tensor = true;
  std::map<std::string, std::pair<uint64_t, int>> per_key;  // key -> (hash, calls)
};

std::string list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

void explain(SlotAdvice& a, bool rec_static, bool rec_inter) {
  std::string why;
  a.corrupts = (a.declared_static && !rec_static &&
                ((a.written && !a.fully_overwritten) || !a.host_constant)) ||
               (a.declared_inter && !rec_inter);
  if (a.declared_static && !rec_static)
    why = a.written          ? "declared static but the kernel writes it (static-clobber)"
          : !a.host_constant ? "declared static but its host data changes between calls of one "
                               "bo_key (stale-static)"
                             : "declared static but the kernel never reads it";
  else if (a.declared_inter && !rec_inter)
    why = a.read ? "declared intermediate but the kernel reads it before writing "
                   "(intermediate-read)"
                 : "declared intermediate but the kernel leaves part of it unwritten "
                   "(partial-overwrite)";
  else if (rec_static && !a.declared_static)
    why = "constant on every call and only read: static would save " + std::to_string(a.bytes) +
          " bytes per later call (missed-static)";
  else if (rec_inter && !a.declared_inter)
    why = "fully overwritten before any read: intermediate would save " + std::to_string(a.bytes) +
          " bytes per later call (missed-intermediate)";
  a.disagreement = why;
}

}  // namespace

bool any_corrupting(const std::vector<SiteAdvice>& sites) {
  for (auto& s : sites)
    for (auto& a : s.slots)
      if (a.corrupts) return true;
  return false;
}

std::vector<SiteAdvice> classify(const Trace& t) {
  std::map<std::string, size_t> at;
  std::vector<SiteAdvice> sites;
  std::vector<std::vector<Acc>> accs;
  std::vector<const TraceCall*> first;  // per site
  for (auto& c : t.calls) {
    auto [it, fresh] = at.emplace(c.path, sites.size());
    if (fresh) {
      SiteAdvice s{c.kernel, c.path, c.bo_key_template, 0, 0, c.number, {}, {}, {}, {}, {}, 0, 0};
      sites.push_back(s);
      accs.emplace_back(c.slots.size());
      first.push_back(&c);
    }
    SiteAdvice& site = sites[it->second];
    auto& acc = accs[it->second];
    site.calls++;
    for (auto& s : c.slots) {
      if (static_cast<size_t>(s.slot) >= acc.size()) continue;
      Acc& a = acc[static_cast<size_t>(s.slot)];
      a.written = a.written || (c.shadowed() && s.noreuse_post != s.noreuse_pre);
      if (s.probe.probed) {
        a.probed = true;
        a.read = a.read || s.probe.read;
        a.partial = a.partial || s.probe.unwritten_bytes > 0;
      }
      a.tensor = a.tensor && (s.host.source == ArraySource::tensor ||
                              s.host.source == ArraySource::placeholder);
      auto [kit, kfresh] = a.per_key.emplace(c.bo_key, std::make_pair(s.host.hash, 0));
      kit->second.second++;
      if (!kfresh && kit->second.first != s.host.hash && s.host.source != ArraySource::placeholder)
        a.constant = false;
    }
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    SiteAdvice& site = sites[i];
    const TraceCall* c = first[i];
    site.keys = 0;
    bool repeated = false;
    for (auto& [k, v] : accs[i][0].per_key) {
      site.keys++;
      repeated = repeated || v.second > 1;
    }
    for (size_t s = 0; s < accs[i].size(); ++s) {
      const Acc& a = accs[i][s];
      SlotAdvice sa;
      int si = static_cast<int>(s);
      sa.slot = si;
      sa.name = c->slots[s].name;
      sa.bytes = c->slots[s].host.bytes;
      sa.read = a.read;
      sa.written = a.written;
      sa.fully_overwritten = a.written && !a.read && !a.partial && a.probed;
      // Constant is known when a key was called twice with the same bytes or the data is an
      // immutable tensor. A var seen once per key may change on the next pass: unknown, and
      // then the declaration stands.
      bool known = !a.constant || repeated || a.tensor;
      sa.declared_static = c->is_static(si);
      sa.host_constant = a.constant && (known || sa.declared_static);
      sa.declared_inter = c->is_inter(si);
      sa.output = c->is_output(si);
      bool rec_static = !a.written && a.read && sa.host_constant;
      bool rec_inter = sa.fully_overwritten;
      sa.role = rec_static            ? InferredRole::static_input
                : rec_inter           ? InferredRole::intermediate
                : a.read && a.written ? InferredRole::in_out
                : a.written           ? InferredRole::output_only
                                      : InferredRole::input;
      if (rec_static) site.rec_static.push_back(si), site.recommended_saving += sa.bytes;
      if (rec_inter) site.rec_inter.push_back(si), site.recommended_saving += sa.bytes;
      if (sa.declared_static) site.declared_static.push_back(si), site.declared_saving += sa.bytes;
      if (sa.declared_inter) site.declared_inter.push_back(si), site.declared_saving += sa.bytes;
      explain(sa, rec_static, rec_inter);
      site.slots.push_back(sa);
    }
  }
  return sites;
}

std::string render_classify_text(const std::string& model, const std::vector<SiteAdvice>& sites) {
  std::ostringstream o;
  int disagreements = 0;
  for (auto& s : sites) {
    o << s.kernel << "  bo_key " << s.bo_key_template << "  (" << s.calls << " calls, " << s.keys
      << " keys, first call " << s.first_call << ")  " << s.path << "\n";
    o << "  declared:    static " << list(s.declared_static) << "  intermediate "
      << list(s.declared_inter) << "  saves " << s.declared_saving << " B/later call\n";
    o << "  recommended: static " << list(s.rec_static) << "  intermediate " << list(s.rec_inter)
      << "  saves " << s.recommended_saving << " B/later call\n";
    for (auto& a : s.slots) {
      if (a.disagreement.empty()) continue;
      ++disagreements;
      o << "    slot " << a.slot << " (" << a.name << "): " << a.disagreement
        << (a.corrupts ? " [corrupts results]" : "") << "\n";
    }
  }
  o << "\nbo-doctor classify " << model << ": " << sites.size() << " call sites, " << disagreements
    << " disagreement(s) with the declared reuse settings"
    << (any_corrupting(sites) ? "; the declared settings corrupt results -> FAIL\n" : " -> PASS\n");
  return o.str();
}

std::string render_classify_json(const std::string& model, const std::vector<SiteAdvice>& sites) {
  using J = nlohmann::ordered_json;
  J arr = J::array();
  for (auto& s : sites) {
    J slots = J::array();
    for (auto& a : s.slots)
      slots.push_back({{"slot", a.slot},
                       {"name", a.name},
                       {"bytes", a.bytes},
                       {"role", role_name(a.role)},
                       {"read", a.read},
                       {"written", a.written},
                       {"fully_overwritten", a.fully_overwritten},
                       {"host_constant", a.host_constant},
                       {"output", a.output},
                       {"declared_static", a.declared_static},
                       {"declared_intermediate", a.declared_inter},
                       {"disagreement", a.disagreement},
                       {"corrupts", a.corrupts}});
    arr.push_back({{"kernel", s.kernel},
                   {"path", s.path},
                   {"bo_key", s.bo_key_template},
                   {"calls", s.calls},
                   {"keys", s.keys},
                   {"first_call", s.first_call},
                   {"declared",
                    {{"static_input_indices", s.declared_static},
                     {"intermediate_indices", s.declared_inter},
                     {"bytes_saved_per_later_call", s.declared_saving}}},
                   {"recommended",
                    {{"static_input_indices", s.rec_static},
                     {"intermediate_indices", s.rec_inter},
                     {"bytes_saved_per_later_call", s.recommended_saving}}},
                   {"slots", slots}});
  }
  J j{{"schema_version", 2},
      {"tool", "bo-doctor"},
      {"command", "classify"},
      {"model", model},
      {"verdict", any_corrupting(sites) ? "fail" : "pass"},
      {"sites", arr}};
  return j.dump(2) + "\n";
}

}  // namespace bod
