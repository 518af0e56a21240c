#include "trace/spool.h"

#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "trace/trace_io.h"

namespace bod {

using ojson = nlohmann::ordered_json;

Result<std::string> trace_text_from_spool(std::istream& in, const std::string& name,
                                          SpoolSummary& summary) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  ojson header, kernels = ojson::array();
  std::vector<ojson> calls;
  std::vector<std::pair<size_t, ojson>> events;  // after how many calls, the event line
  long long h2d[2] = {0, 0}, writes[2] = {0, 0};
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::string where = name + ":" + std::to_string(i + 1);
    ojson j = ojson::parse(lines[i], nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (i + 1 == lines.size()) {  // cut off by the program's death: drop it
        summary.torn = true;
        break;
      }
      return Error{where, "not a JSON object; the spool is corrupt"};
    }
    std::string kind = j.value("kind", "");
    if (kind == "header") {
      header = j;
      summary.shadow = j.value("shadow", false);
    } else if (kind == "kernel") {
      j.erase("kind");
      kernels.push_back(std::move(j));
    } else if (kind == "call" && j.contains("call") && j["call"].is_object()) {
      ojson& c = j["call"];
      for (int e = 0; e < 2; ++e) {
        if (c.contains("h2d") && c["h2d"].is_array() && c["h2d"].size() == 2)
          h2d[e] += c["h2d"][e].get<long long>();
        if (c.contains("writes") && c["writes"].is_array() && c["writes"].size() == 2)
          writes[e] += c["writes"][e].get<long long>();
      }
      calls.push_back(std::move(c));
    } else if (kind == "view_read" && j.contains("event") && j["event"].is_object()) {
      events.emplace_back(calls.size(), std::move(j["event"]));
    } else if (kind == "end") {
      summary.ended = true;
      summary.recorder_seconds = j.value("recorder_seconds", 0.0);
    } else {
      return Error{where, "unknown spool line kind '" + kind + "'"};
    }
  }
  if (header.is_null()) return Error{name, "no header line: the recorder never started"};
  summary.calls = calls.size();
  std::string program;
  for (auto& a : header.value("argv", ojson::array()))
    if (a.is_string()) program += (program.empty() ? "" : " ") + a.get<std::string>();
  Trace t;  // header, figures and end as the trace contract writes them (trace_io.h)
  t.header.producer = header.value("producer", std::string("bo-doctor record"));
  t.header.model_name = program.empty() ? std::string("recorded run") : program;
  t.header.backend = "recorded";
  t.header.host_emulated = false;
  // The recorder wraps load_and_run and cannot tell pyxrt on an NPU from a stand-in: a device
  // is named only when the header says one ran the kernels.
  t.header.npu_launched = header.value("npu_launched", false);
  t.header.caps.run = true;
  t.header.caps.no_reuse = summary.shadow;
  t.header.top_k = 0;
  t.header.named_bindings = false;
  ojson h = ojson::parse(trace_header_line(t));
  h["kernels"] = kernels;  // the recorder's entries, in its order
  std::string out = h.dump() + "\n";
  size_t e = 0;
  for (size_t i = 0; i <= calls.size(); ++i) {
    for (; e < events.size() && events[e].first == i; ++e) out += events[e].second.dump() + "\n";
    if (i < calls.size()) out += calls[i].dump() + "\n";
  }
  for (int e = 0; e < 2; ++e) {
    EngineFigures& f = e == 0 ? t.reuse : t.noreuse;
    f.calls = static_cast<long>(calls.size());
    f.h2d_bytes = h2d[e];
    f.writes = writes[e];
  }
  out += trace_figures_line(t, TraceEngine::reuse) + "\n";
  if (summary.shadow) out += trace_figures_line(t, TraceEngine::no_reuse) + "\n";
  if (summary.ended) out += trace_end_line(t) + "\n";
  return out;
}

}  // namespace bod
