#include "trace/trace_schema.h"

#include "trace/trace_records.h"

namespace bod {

using namespace trace_json;

namespace {

// A field's description: its gate first, so the schema says when the field is present.
std::string describe(const FieldInfo& f) {
  std::string d;
  if (f.gate == Gate::timings)
    d = "with measured times: ";
  else if (f.gate != Gate::none)
    d = std::string("capability ") + gate_name(f.gate) + ": ";
  d += f.doc;
  if (f.presence == Presence::optional) d += " (optional)";
  return d;
}

ojson record_schema(const RecordInfo& r) {
  ojson props = ojson::object();
  ojson required = ojson::array();
  if (r.line) {
    props["type"] = {{"const", r.name}};
    required.push_back("type");
  }
  for (auto& f : r.fields) {
    ojson s = f.schema;
    s["description"] = describe(f);
    props[f.key] = std::move(s);
    if (f.gate == Gate::none && f.presence == Presence::required) required.push_back(f.key);
  }
  props["x"] = {{"$ref", "#/$defs/x"}};
  return {{"type", "object"},
          {"description", r.doc},
          {"required", std::move(required)},
          {"properties", std::move(props)},
          {"additionalProperties", false}};
}

}  // namespace

std::string trace_schema_json() {
  ojson defs = shared_defs();
  ojson events = ojson::array();
  for (auto& r : all_records()) {
    defs[r.name] = record_schema(r);
    if (r.line && std::string(r.name) != "call")
      events.push_back({{"$ref", std::string("#/$defs/") + r.name}});
  }
  defs["event"] = {{"description", "a line after the calls' lines may interleave with them"},
                   {"oneOf", std::move(events)}};
  ojson s = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://github.com/bo-doctor/bo-doctor/docs/trace.schema.json"},
      {"title", "bo-doctor trace, format version " + std::to_string(kTraceVersion) + ": one line"},
      {"description",
       "A trace is JSON Lines: the header on line 1, then call and event lines; each line "
       "validates against this schema. Reference: docs/trace-format.md. Printed from the "
       "reader's own record tables (tool/trace/trace_records*.cpp). The reader also checks what "
       "a per-line schema cannot: consecutive call numbers, kernels and slot counts against the "
       "header, call references, fields present exactly when the header declares their "
       "capability, and its size limits."},
      {"oneOf",
       {{{"$ref", "#/$defs/header"}}, {{"$ref", "#/$defs/call"}}, {{"$ref", "#/$defs/event"}}}},
      {"$defs", std::move(defs)}};
  return s.dump(2) + "\n";
}

std::vector<std::string> trace_field_names() {
  std::vector<std::string> r;
  for (auto& rec : all_records())
    for (auto& f : rec.fields) r.push_back(std::string(rec.name) + "." + f.key);
  return r;
}

}  // namespace bod
