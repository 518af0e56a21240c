#include "cli/commands.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <sstream>

#include "analysis/classify.h"
#include "checks/checks.h"
#include "checks/registry.h"
#include "model/json_in.h"
#include "report/report.h"
#include "runner/host_data.h"
#include "runner/runner.h"
#include "runtime/xrt/xrt_backend.h"
#include "skeleton/skeleton.h"
#include "trace/trace_io.h"

namespace bod {

namespace {

CommandResult fail(const Error& e) { return CommandResult{e.code, "", e.line()}; }

Result<Plan> load_plan(const CommandOptions& o, Model& m) {
  auto lm = load_model(o.model);
  if (!lm) return lm.error();
  m = std::move(lm.value());
  ExpandOptions eo;
  if (!(o.max_memory_gib > 0) || o.max_memory_gib > 1 << 20)
    return Error{"--max-memory", "expected a number of GiB more than 0 and at most 1048576 (1 PiB)"};
  eo.max_bytes = static_cast<size_t>(o.max_memory_gib * double(1 << 30));
  auto p = expand(m, eo);
  if (!p) return p.error();
  spdlog::info("{}: {} calls, {} host steps, about {:.1f} MiB of buffers", o.model,
               p->calls.size(), p->hosts.size(), double(p->estimated_bytes) / (1 << 20));
  return p;
}

// The backend, with every kernel's NPU binary loaded before any BO is allocated.
std::unique_ptr<Backend> open_backend(const CommandOptions& o, const Model& m) {
  auto b = make_backend(BackendOptions{o.backend, o.device, o.timeout_ms});
#ifdef BOD_WITH_XRT
  for (auto& k : m.kernels) xrt_prepare_kernel(*b, k.name, k.npu);
#else
  (void)m;
#endif
  return b;
}

// Prefixes JSON-pointer errors with the model path ("model.json:/kernels/x/slots/2").
// The error line quotes the model: made safe to print (docs/model-format.md §13).
Error at_model(const CommandOptions& o, Error e) {
  std::error_code ec;  // a pointer is no path: exists() may fail (name too long), never throw
  bool pointer = e.where.empty() || (e.where[0] == '/' && e.where != o.model &&
                                     e.where.rfind(o.model + ":", 0) != 0 &&
                                     !std::filesystem::exists(e.where, ec));
  e = safe_error(std::move(e));
  if (pointer) e.where = o.model + ":" + e.where;
  return e;
}

// Whether writing `out` would replace the input file `in` (the same file, by any name).
bool same_file(const std::string& out, const std::string& in) {
  if (out.empty() || in.empty() || out == "-" || in == "-") return false;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(out, in, ec)) return true;
  auto a = fs::weakly_canonical(out, ec);
  if (ec) return false;
  auto b = fs::weakly_canonical(in, ec);
  return !ec && a == b;
}

// An output option (-o, --save-trace) naming the input file is refused before any write.
Status not_input(const std::string& flag, const std::string& out, const std::string& in) {
  if (!same_file(out, in)) return ok_status();
  return Error{out, flag + " names the input file " + in + "; writing there would overwrite the "
                    "input, expected another file name"};
}

// Both output options, checked before the run so a refused one costs nothing.
Status check_outputs(const CommandOptions& o) {
  BOD_CHECK(not_input("--output", o.output, o.model));
  return not_input("--save-trace", o.save_trace, o.model);
}

// The report to stdout, or atomically to --output.
CommandResult emit(const CommandOptions& o, std::string text, Exit code) {
  if (o.output.empty()) return {code, std::move(text), ""};
  if (auto st = not_input("--output", o.output, o.model); !st) return fail(st.error());
  auto st = write_atomic(o.output, text);
  if (!st) return fail(st.error());
  return {code, "", ""};
}

CommandResult finish(const CommandOptions& o, const Report& r) {
  std::string text = o.format == "json"       ? render_json(r)
                     : o.format == "markdown" ? render_markdown(r)
                                              : render_text(r);
  return emit(o, std::move(text), r.has_error() ? Exit::findings : Exit::ok);
}

// Loads the host data and runs the plan on the backend the options name; a weight-file or
// backend failure is the command's error.
Result<Trace> execute(const CommandOptions& o, const Model& m, const Plan& p, const RunOptions& ro) {
  auto data = HostData::load(m);
  if (!data) return data.error();
  try {
    auto backend = open_backend(o, m);
    return run_plan(p, o.model, data.value(), *backend, ro);
  } catch (const FatalError& e) {
    return at_model(o, e.error);
  }
}

Status check_format(const std::string& f) {
  if (f == "text" || f == "json" || f == "markdown") return ok_status();
  return Error{"--format", "unknown format '" + f + "'; expected text, json or markdown"};
}


Status save_trace(const CommandOptions& o, const Trace& t) {
  if (o.save_trace.empty()) return ok_status();
  BOD_CHECK(not_input("--save-trace", o.save_trace, o.model));
  std::ostringstream s;
  write_trace(s, t);
  return write_atomic(o.save_trace, s.str());
}

}  // namespace

CommandResult cmd_lint(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  if (auto st = HostData::validate_files(m); !st) return fail(st.error());
  Trace t = plan_trace(p.value(), o.model);
  return finish(o, build_report("lint", t, false));
}

CommandResult cmd_check(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  Trace t = plan_trace(p.value(), o.model);
  if (!has_inconsistent_declarations(t)) {
    RunOptions ro;
    ro.probe = o.probe;
    ro.timings = o.timings || o.format == "markdown";  // the reuse block shows times
    auto run = execute(o, m, p.value(), ro);
    if (!run) return fail(run.error());
    t = std::move(run.value());
  } else {
    spdlog::warn("config-error findings: the plan is not executed");
  }
  if (auto st = save_trace(o, t); !st) return fail(st.error());
  return finish(o, build_report("check", t, o.timings || o.format == "markdown"));
}

CommandResult cmd_analyze(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  auto t = read_trace(o.model);
  if (!t) return fail(t.error());
  return finish(o, build_report("analyze", t.value(), true, o.model));
}

CommandResult cmd_skeleton(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  auto t = read_trace(o.model);
  if (!t) return fail(t.error());
  std::string name = o.model == "-" ? "stdin" : std::filesystem::path(o.model).filename().string();
  auto m = skeleton_model(t.value(), name);
  if (!m) return fail(m.error());
  return emit(o, m->dump(1) + "\n", Exit::ok);
}

CommandResult cmd_classify(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (o.format != "text" && o.format != "json")
    return fail(Error{"--format", "unknown format '" + o.format + "'; expected text or json"});
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  RunOptions ro;
  ro.probe_all = true;
  auto run = execute(o, m, p.value(), ro);
  if (!run) return fail(run.error());
  auto sites = classify(run.value());
  return emit(o, o.format == "json" ? render_classify_json(o.model, sites)
                                    : render_classify_text(o.model, sites),
              Exit::ok);
}

CommandResult cmd_list_checks(const std::string& format) {
  if (format != "text" && format != "json")
    return fail(Error{"--format", "unknown format '" + format + "'; expected text or json"});
  std::ostringstream s;
  if (format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (auto& e : check_registry())
      j.push_back({{"id", e.info->id}, {"severity", severity_name(e.info->severity)},
                   {"title", e.info->title}});
    return {Exit::ok, j.dump(2) + "\n", ""};
  }
  for (auto& e : check_registry()) {
    char line[64];
    std::snprintf(line, sizeof line, "%-20s %-8s ", e.info->id, severity_name(e.info->severity));
    s << line << e.info->title << "\n";
  }
  return {Exit::ok, s.str(), ""};
}

CommandResult cmd_explain(const std::string& id) {
  const CheckEntry* e = find_check(id);
  if (!e) return {Exit::bad_input, "", "no such check: '" + id + "'. Try: bo-doctor list-checks"};
  std::ostringstream s;
  s << e->info->id << " (" << severity_name(e->info->severity) << ")\n\n"
    << "What happened: " << e->info->title << "\n"
    << "Symptom:       " << e->info->symptom << "\n"
    << "Detection:     " << e->info->detection << "\n"
    << "Fix:           " << e->info->fix << "\n";
  return {Exit::ok, s.str(), ""};
}

}  // namespace bod
