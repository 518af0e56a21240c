#include "trace/spool.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "trace/trace_io.h"

namespace bod {

using ojson = nlohmann::ordered_json;

namespace {

// One spool file as the first pass found it.
struct Proc {
  std::string name;  // file path (error messages)
  std::string base;  // file name (a forked child's header names its parent's by it)
  std::function<std::unique_ptr<std::istream>()> open;
  size_t lines = 0;  // lines to read (a torn last one left out)
  ojson header;
  std::vector<std::pair<std::string, ojson>> kernels;  // name, entry (without "kind")
  size_t calls = 0;
  long long start_ns = 0;
  long long fork_calls = 0;  // fork_of.calls: numbers up to it are the parent's
  std::string fork_of;       // fork_of.spool
  bool ended = false;
  bool torn = false;         // its last line was cut off by its death (a call lost)
  long long stopped_at = 0;  // the recorder stopped at this local call number (0: it did not)
  std::string stopped_why;   // what it said
  // Second pass
  int parent = -1;       // index (after ordering) of the process it forked from
  long long offset = 0;  // global number of its call fork_calls + 1, minus 1
  std::map<std::string, std::string> kernel_names;  // its name -> the trace's
};

long long get_ll(const ojson& j, const char* key, long long dflt = 0) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return dflt;
  return it->get<long long>();
}

// j[key] as a bool or a string, dflt where j is no object or the key is absent or of another
// type (ojson::value would throw on another type: a spool line is the recorder's, or anything).
bool get_bool(const ojson& j, const char* key, bool dflt) {
  if (!j.is_object()) return dflt;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
}

std::string get_str(const ojson& j, const char* key, const std::string& dflt = "") {
  if (!j.is_object()) return dflt;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : dflt;
}

// The first pass over one file: header, kernels, call count, figures; torn last line dropped.
Status scan(Proc& p, SpoolSummary& summary, long long h2d[2], long long writes[2]) {
  auto in = p.open();
  if (!*in) return Error{p.name, "cannot read the spool file"};
  std::string line, next;
  bool have = static_cast<bool>(std::getline(*in, line));
  size_t i = 0;
  while (have) {
    bool more = static_cast<bool>(std::getline(*in, next));
    ++i;
    std::string where = p.name + ":" + std::to_string(i);
    if (!line.empty()) {
      ojson j = ojson::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        if (!more) {  // cut off by the process's death: drop it
          summary.torn = p.torn = true;
          break;
        }
        return Error{where, "not a JSON object; the spool is corrupt"};
      }
      std::string kind = j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>()
                                                                     : std::string();
      if (kind == "header") {
        if (!p.header.is_null()) return Error{where, "a second header line in one spool file"};
        p.header = std::move(j);
        p.start_ns = get_ll(p.header, "start_ns");
        if (auto f = p.header.find("fork_of"); f != p.header.end() && f->is_object()) {
          p.fork_calls = get_ll(*f, "calls");
          if (p.fork_calls < 0 || p.fork_calls > (1LL << 40))
            return Error{where, "fork_of.calls " + std::to_string(p.fork_calls) +
                                    " out of range; the spool is corrupt"};
          if (f->contains("spool") && (*f)["spool"].is_string())
            p.fork_of = (*f)["spool"].get<std::string>();
        }
      } else if (p.header.is_null()) {
        return Error{where, "a '" + kind + "' line before the header line"};
      } else if (kind == "kernel") {
        j.erase("kind");
        std::string name = j.contains("name") && j["name"].is_string()
                               ? j["name"].get<std::string>()
                               : std::string();
        p.kernels.emplace_back(name, std::move(j));
      } else if (kind == "call" && j.contains("call") && j["call"].is_object()) {
        const ojson& c = j["call"];
        long long n = get_ll(c, "n", -1);
        if (n != p.fork_calls + static_cast<long long>(p.calls) + 1)
          return Error{where, "call " + std::to_string(n) + " where call " +
                                  std::to_string(p.fork_calls + p.calls + 1) +
                                  " was expected; the spool is corrupt"};
        ++p.calls;
        for (int e = 0; e < 2; ++e) {
          if (c.contains("h2d") && c["h2d"].is_array() && c["h2d"].size() == 2 &&
              c["h2d"][e].is_number_integer())
            h2d[e] += c["h2d"][e].get<long long>();
          if (c.contains("writes") && c["writes"].is_array() && c["writes"].size() == 2 &&
              c["writes"][e].is_number_integer())
            writes[e] += c["writes"][e].get<long long>();
        }
      } else if (kind == "view_read" && j.contains("event") && j["event"].is_object()) {
      } else if (kind == "stopped") {
        // The recorder's own failure: no later call of this process is in the spool.
        if (!p.stopped_at) {
          p.stopped_at = std::max(1LL, get_ll(j, "call", 1));
          if (j.contains("why") && j["why"].is_string()) p.stopped_why = j["why"];
        }
        ++summary.stopped;
      } else if (kind == "end") {
        p.ended = true;
        auto it = j.find("recorder_seconds");
        if (it != j.end() && it->is_number()) summary.recorder_seconds += it->get<double>();
      } else {
        return Error{where, "unknown spool line kind '" + kind + "'"};
      }
    }
    p.lines = i;
    line.swap(next);
    have = more;
  }
  return ok_status();
}

// The global number of process p's local call n; 0 when it is not in the trace.
long long global(const std::vector<Proc>& ps, int p, long long n) {
  while (p >= 0) {
    const Proc& q = ps[static_cast<size_t>(p)];
    if (n > q.fork_calls)
      return n - q.fork_calls <= static_cast<long long>(q.calls) ? q.offset + (n - q.fork_calls)
                                                                 : 0;
    p = q.parent;
  }
  return 0;
}

Status assemble(std::vector<Proc>& ps, std::ostream& out, SpoolSummary& summary) {
  long long h2d[2] = {0, 0}, writes[2] = {0, 0};
  for (auto& p : ps) BOD_CHECK(scan(p, summary, h2d, writes));
  ps.erase(std::remove_if(ps.begin(), ps.end(),
                          [](const Proc& p) { return p.header.is_null() && p.calls == 0; }),
           ps.end());
  if (ps.empty()) return Error{"spool", "no header line: the recorder never started"};
  // Processes in the order they started (a parent always before the children it forked).
  std::stable_sort(ps.begin(), ps.end(), [](const Proc& a, const Proc& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.base < b.base;
  });
  long long total = 0;
  ojson kernels = ojson::array();
  std::map<std::string, size_t> kernel_at;  // the trace's kernel name -> index in kernels
  for (size_t i = 0; i < ps.size(); ++i) {
    Proc& p = ps[i];
    if (!p.fork_of.empty())
      for (size_t k = 0; k < i; ++k)
        if (ps[k].base == p.fork_of) p.parent = static_cast<int>(k);
    if (p.parent >= 0) p.kernel_names = ps[static_cast<size_t>(p.parent)].kernel_names;
    p.offset = total;
    total += static_cast<long long>(p.calls);
    summary.processes_ended += p.ended;
    for (auto& [name, k] : p.kernels) {
      std::string as = name;
      for (int s = 0; kernel_at.count(as) && kernels[kernel_at[as]] != k; ++s) {
        as = name + "@p" + std::to_string(i) + (s ? "." + std::to_string(s) : "");
        k["name"] = as;
      }
      if (!kernel_at.count(as)) {
        kernel_at[as] = kernels.size();
        kernels.push_back(k);
      }
      p.kernel_names[name] = as;
    }
  }
  const ojson& root = ps[0].header;
  summary.processes = ps.size();
  summary.calls = static_cast<size_t>(total);
  summary.shadow = get_bool(root, "shadow", false);
  summary.ended = ps[0].ended;
  std::string program;
  for (auto& a : root.value("argv", ojson::array()))
    if (a.is_string()) program += (program.empty() ? "" : " ") + a.get<std::string>();
  Trace t;  // header, figures and end as the trace contract writes them (trace_io.h)
  t.header.producer = get_str(root, "producer", "bo-doctor record");
  t.header.model_name = program.empty() ? std::string("recorded run") : program;
  t.header.backend = "recorded";
  t.header.host_emulated = false;
  // The recorder wraps load_and_run and cannot tell pyxrt on an NPU from a stand-in: a device
  // is named only when the header says one ran the kernels.
  t.header.npu_launched = get_bool(root, "npu_launched", false);
  t.header.caps.run = true;
  t.header.caps.no_reuse = summary.shadow;
  t.header.top_k = 0;
  t.header.named_bindings = false;
  ojson h = ojson::parse(trace_header_line(t));
  h["kernels"] = std::move(kernels);  // the recorder's entries, in its order
  out << h.dump() << "\n";

  // Second pass: the calls and events, one line at a time.
  std::map<std::string, long long> bo_first;  // BO identity of a process after the first
  for (size_t i = 0; i < ps.size(); ++i) {
    Proc& p = ps[i];
    const int pi = static_cast<int>(i);
    const std::string suffix = i ? "@p" + std::to_string(i) : "";
    auto in = p.open();
    std::string line;
    for (size_t l = 0; l < p.lines && std::getline(*in, line); ++l) {
      if (line.empty()) continue;
      ojson j = ojson::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("kind")) continue;
      const ojson& kind = j["kind"];
      if (kind == "call") {
        ojson& c = j["call"];
        long long n = p.offset + (get_ll(c, "n") - p.fork_calls);
        c["n"] = n;
        auto ref = [&](ojson& v) {  // a call reference: local -> global, 0 when not there
          if (!v.is_number_integer()) return;
          long long g = global(ps, pi, v.get<long long>());
          v = g;
        };
        if (c.contains("kernel") && c["kernel"].is_string()) {
          auto it = p.kernel_names.find(c["kernel"].get<std::string>());
          if (it != p.kernel_names.end()) c["kernel"] = it->second;
        }
        if (c.contains("key_first_call")) {
          ref(c["key_first_call"]);
          if (c["key_first_call"] == 0) c["key_first_call"] = n;
        }
        if (i && c.contains("ns") && c["ns"].is_string())
          c["ns"] = c["ns"].get<std::string>() + suffix;
        if (c.contains("slots") && c["slots"].is_array())
          for (auto& s : c["slots"]) {
            if (!s.is_object()) continue;
            if (s.contains("host") && s["host"].is_object() && s["host"].contains("view_of_call")) {
              ojson& v = s["host"]["view_of_call"];
              ref(v);
              if (v == 0 && get_str(s["host"], "source") == "view") v = n;
            }
            if (i && s.contains("bo") && s["bo"].is_object()) {
              ojson& b = s["bo"];
              if (b.contains("ns") && b["ns"].is_string())
                b["ns"] = b["ns"].get<std::string>() + suffix;
              if (get_str(b, "pool") != "unbound") {
                std::string id = get_str(b, "ns") + '\n' + get_str(b, "pool") + '\n' +
                                 get_str(b, "name") + '\n' + std::to_string(get_ll(b, "index"));
                b["first_call"] = bo_first.emplace(id, n).first->second;
              }
            }
          }
        if (c.contains("x") && c["x"].is_object() && c["x"].contains("shadow_fed") &&
            c["x"]["shadow_fed"].is_array())
          for (auto& f : c["x"]["shadow_fed"])
            if (f.is_array() && f.size() == 2) ref(f[1]);
        if (c.contains("shadow_like"))
          ref(c["shadow_like"]);
        else
          summary.shadowed++;
        if (i) c["process"] = i;
        out << c.dump() << "\n";
      } else if (kind == "view_read") {
        ojson& e = j["event"];
        bool keep = true;
        for (const char* k : {"read_call", "captured_call", "overwritten_by"})
          if (e.contains(k) && e[k].is_number_integer() && e[k].get<long long>() != 0) {
            long long g = global(ps, pi, e[k].get<long long>());
            keep = keep && g != 0;
            e[k] = g;
          }
        if (keep) out << e.dump() << "\n";
      }
    }
    // What of this process is missing, after its calls (a gap names its last call before).
    long long last = p.calls ? p.offset + static_cast<long long>(p.calls)
                             : (p.parent >= 0 ? global(ps, p.parent, p.fork_calls) : 0);
    auto gap = [&](GapCause cause, const std::string& detail) {
      RecordingGap g;
      g.process = pi;
      g.after_call = static_cast<int>(last);
      g.cause = cause;
      g.detail = detail;
      out << trace_gap_line(g) << "\n";
    };
    if (p.stopped_at) gap(GapCause::recorder_stopped, p.stopped_why);
    if (p.torn) gap(GapCause::cut_off, "");
  }
  for (int e = 0; e < 2; ++e) {
    EngineFigures& f = e == 0 ? t.reuse : t.noreuse;
    f.calls = static_cast<long>(total);
    f.h2d_bytes = h2d[e];
    f.writes = writes[e];
  }
  out << trace_figures_line(t, TraceEngine::reuse) << "\n";
  if (summary.shadow) out << trace_figures_line(t, TraceEngine::no_reuse) << "\n";
  if (summary.ended) out << trace_end_line(t) << "\n";
  if (!out) return Error{"trace", "cannot write the trace"};
  return ok_status();
}

}  // namespace

Status assemble_spools(const std::vector<std::string>& files, std::ostream& out,
                       SpoolSummary& summary) {
  std::vector<Proc> ps;
  for (auto& f : files) {
    Proc p;
    p.name = f;
    p.base = f.substr(f.find_last_of('/') + 1);
    p.open = [f]() -> std::unique_ptr<std::istream> {
      return std::make_unique<std::ifstream>(f, std::ios::binary);
    };
    ps.push_back(std::move(p));
  }
  return assemble(ps, out, summary);
}

Result<std::string> trace_text_from_spool(std::istream& in, const std::string& name,
                                          SpoolSummary& summary) {
  auto text = std::make_shared<std::string>(std::istreambuf_iterator<char>(in),
                                            std::istreambuf_iterator<char>());
  std::vector<Proc> ps(1);
  ps[0].name = ps[0].base = name;
  ps[0].open = [text]() -> std::unique_ptr<std::istream> {
    return std::make_unique<std::istringstream>(*text);
  };
  std::ostringstream out;
  BOD_CHECK(assemble(ps, out, summary));
  return out.str();
}

}  // namespace bod
