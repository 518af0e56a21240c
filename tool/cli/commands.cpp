#include "cli/commands.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/classify.h"
#include "checks/checks.h"
#include "checks/registry.h"
#include "core/input_file.h"
#include "core/suggest.h"
#include "core/write_atomic.h"
#include "model/json_in.h"
#include "report/formats.h"
#include "report/report.h"
#include "runner/host_data.h"
#include "runner/runner.h"
#include "runtime/xrt/xrt_backend.h"
#include "skeleton/skeleton.h"
#include "trace/trace_io.h"

namespace bod {

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
  return Error{out, flag + " names the input file " + in +
                        "; writing there would overwrite the "
                        "input, expected another file name"};
}

// An existing output file is replaced only when it is empty or a previous bo-doctor output
// ("bo-doctor" within its first or last 4 KiB: every report, trace, baseline and skeleton
// says so), unless --force: a mistyped -o must not eat a source file.
Status may_replace(const std::string& flag, const std::string& out, bool force) {
  if (out.empty() || out == "-" || out == "/dev/stdout" || force) return ok_status();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(out, ec)))
    return ok_status();
  auto size = std::filesystem::file_size(out, ec);
  if (ec || size == 0) return ok_status();
  FILE* f = std::fopen(out.c_str(), "rb");
  if (!f) return ok_status();  // the write reports why it cannot open it
  std::string head(4096, '\0'), tail(4096, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f));
  if (size > 4096 && std::fseek(f, -4096, SEEK_END) == 0)
    tail.resize(std::fread(tail.data(), 1, tail.size(), f));
  else
    tail.clear();
  std::fclose(f);
  if (head.find("bo-doctor") != std::string::npos || tail.find("bo-doctor") != std::string::npos)
    return ok_status();
  return Error{out, flag +
                        " would replace a file that is not a bo-doctor report; expected a new "
                        "file name, or --force to replace it"};
}

namespace {

CommandResult fail(const Error& e) {
  return CommandResult{e.code, "", e.line()};
}

// Whether the run is timed: --timings, or a report format that shows times (markdown). A timed
// run copies on every write and sync (no shared buffers), so its times include what transfers
// cost.
bool timed_run(const CommandOptions& o) {
  return o.timings || timed_format(o.format);
}

// classify's and list-checks' formats, read like report_formats() (report/formats.h).
struct ClassifyFormat {
  const char* name;
  std::string (*render)(const std::string& model, const std::vector<SiteAdvice>& sites);
};
const std::vector<ClassifyFormat>& classify_format_table() {
  static const std::vector<ClassifyFormat> t = {{"text", render_classify_text},
                                                {"json", render_classify_json}};
  return t;
}

std::string list_checks_text(const std::vector<const CheckInfo*>& infos);
std::string list_checks_json(const std::vector<const CheckInfo*>& infos);
struct ListChecksFormat {
  const char* name;
  std::string (*render)(const std::vector<const CheckInfo*>& infos);
};
const std::vector<ListChecksFormat>& list_checks_format_table() {
  static const std::vector<ListChecksFormat> t = {{"text", list_checks_text},
                                                  {"json", list_checks_json}};
  return t;
}

Result<Plan> load_plan(const CommandOptions& o, Model& m) {
  auto lm = load_model(o.model);
  if (!lm) return lm.error();
  m = std::move(lm.value());
  ExpandOptions eo;
  if (!(o.max_memory_gib > 0) || o.max_memory_gib > 1 << 20)
    return Error{"--max-memory",
                 "expected a number of GiB more than 0 and at most 1048576 (1 PiB)"};
  eo.max_bytes = static_cast<size_t>(o.max_memory_gib * double(1 << 30));
  eo.share = !timed_run(o);  // as execute() runs it
  auto p = expand(m, eo);
  if (!p) return p.error();
  auto mib = [](size_t b) { return double(b) / (1 << 20); };
  const Plan::Memory& mem = p->memory;
  spdlog::info(
      "{}: {} calls, {} host steps, about {:.1f} MiB of memory at peak (tensors and vars "
      "{:.1f}, BOs {:.1f}, no-reuse buffers {:.1f}, kernel scratch {:.1f}, plan {:.1f}, "
      "process {:.1f})",
      o.model, p->calls.size(), p->hosts.size(), mib(mem.peak()), mib(mem.host), mib(mem.bos),
      mib(mem.noreuse), mib(mem.scratch), mib(mem.plan), mib(mem.process));
  return p;
}

// The backend, with every kernel's NPU binary loaded before any BO is allocated.
// `share`: see BackendOptions::share.
std::unique_ptr<Backend> open_backend(const CommandOptions& o, const Model& m, bool share) {
  auto b = make_backend(BackendOptions{o.backend, o.device, o.timeout_ms, share});
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
  bool pointer = e.where.empty() ||
                 (e.where[0] == '/' && e.where != o.model && e.where.rfind(o.model + ":", 0) != 0 &&
                  !std::filesystem::exists(e.where, ec));
  e = safe_error(std::move(e));
  if (pointer) e.where = o.model + ":" + e.where;
  return e;
}

// Whether writing `out` would replace the input file `in` (the same file, by any name).
// Every output option, checked before the run so a refused one costs nothing.
Status check_outputs(const CommandOptions& o) {
  BOD_CHECK(not_input("--output", o.output, o.model));
  BOD_CHECK(not_input("--save-trace", o.save_trace, o.model));
  BOD_CHECK(not_input("--write-baseline", o.write_baseline, o.model));
  BOD_CHECK(not_input("--write-baseline", o.write_baseline, o.baseline));
  BOD_CHECK(may_replace("--output", o.output, o.force));
  BOD_CHECK(may_replace("--save-trace", o.save_trace, o.force));
  return may_replace("--write-baseline", o.write_baseline, o.force);
}

// The gate the options describe (ids validated, baseline read), with the model's
// suppressions when there is a model.
Result<GateOptions> gate_options(const CommandOptions& o, const Model* m) {
  GateOptions g;
  BOD_CHECK(validate_check_ids(o.checks, "--checks"));
  BOD_CHECK(validate_check_ids(o.skip_checks, "--skip-checks"));
  g.checks = o.checks;
  g.skip_checks = o.skip_checks;
  BOD_TRY(g.fail_on, parse_fail_on(o.fail_on));
  if (!o.baseline.empty()) {
    BOD_TRY(g.baseline, read_baseline(o.baseline));
    g.has_baseline = true;
  }
  g.print_limit = o.print_limit;
  if (m)
    for (auto& d : m->suppressions)
      g.suppressions.push_back(
          {d.check, d.kernel, d.bo_key, d.slot, d.reason, o.model + ":" + d.path});
  return g;
}

// The progress line on stderr (when asked for) and the whole-run --timeout, as the runner's
// per-step callback.
std::function<void(size_t, size_t)> progress_fn(const CommandOptions& o, const std::string& what) {
  if (!o.progress && !(o.timeout_s > 0)) return {};
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto last = std::make_shared<Clock::time_point>(t0 - std::chrono::seconds(1));
  double timeout = o.timeout_s;
  bool show = o.progress;
  return [=](size_t done, size_t total) {
    auto now = Clock::now();
    double el = std::chrono::duration<double>(now - t0).count();
    if (timeout > 0 && el > timeout) {
      if (show) std::fprintf(stderr, "\r\033[K");
      throw FatalError{Error{"--timeout",
                             what + " stopped after " + std::to_string(done) + " of " +
                                 std::to_string(total) + " steps: over the limit of " +
                                 std::to_string(static_cast<long long>(timeout)) +
                                 " s; expected a smaller plan or a larger --timeout",
                             Exit::timeout}};
    }
    if (!show) return;
    if (done == total) {
      std::fprintf(stderr, "\r\033[K");
      return;
    }
    if (now - *last < std::chrono::milliseconds(200)) return;
    *last = now;
    double eta = done ? el / double(done) * double(total - done) : 0;
    std::fprintf(stderr, "\r\033[Kbo-doctor: %s: step %zu/%zu (%.0f%%), %.0f s, ETA %.0f s",
                 what.c_str(), done, total,
                 100.0 * double(done) / double(std::max<size_t>(total, 1)), el, eta);
    std::fflush(stderr);
  };
}

// The report to stdout, or atomically to --output.
CommandResult emit(const CommandOptions& o, std::string text, Exit code) {
  if (o.output.empty()) return {code, std::move(text), ""};
  if (auto st = not_input("--output", o.output, o.model); !st) return fail(st.error());
  auto st = write_atomic(o.output, text);
  if (!st) return fail(st.error());
  return {code, "", ""};
}

// The gate, positions in model.json, the baseline file, then the report in its format.
CommandResult finish(const CommandOptions& o, Report r, const GateOptions& g) {
  if (auto st = apply_gate(r, g); !st) return fail(st.error());
  // The model.json of a check or lint is the input; a trace's model.path is only a name,
  // opened on request (analyze --read-model) and under the model file's limits.
  bool may_read = r.command != "analyze" || o.read_model;
  if (may_read && !r.model_path.empty() && r.model_path != "-") {
    std::set<std::string> ptrs;
    for (auto& f : r.findings) ptrs.insert(f.path);
    if (r.trace)
      for (auto& c : r.trace->calls)
        if (c.first_of_key()) ptrs.insert(c.path);
    auto text = read_regular_file(r.model_path, "model file", "a model.json file",
                                  kMaxModelFileBytes, "64 MiB");
    if (text) r.positions = locate_pointers(text.value(), ptrs);  // else pointers stand alone
  }
  if (!o.write_baseline.empty())
    if (auto st = write_atomic(o.write_baseline, render_baseline(r)); !st) return fail(st.error());
  const ReportFormat* f = find_format(report_formats(), o.format);  // checked before the run
  std::string text = (f ? f : &report_formats().front())->render(r);
  return emit(o, std::move(text), r.fails() ? Exit::findings : Exit::ok);
}

// Loads the host data and runs the plan on the backend the options name; a weight-file or
// backend failure is the command's error.
Result<Trace> execute(const CommandOptions& o, const Model& m, const Plan& p,
                      const RunOptions& ro) {
  auto data = HostData::load(m);
  if (!data) return data.error();
  try {
    auto backend = open_backend(o, m, !ro.timings);
    return run_plan(p, o.model, data.value(), *backend, ro);
  } catch (const FatalError& e) {
    return at_model(o, e.error);
  }
}

Status check_format(const std::string& format) {
  if (find_format(report_formats(), format)) return ok_status();
  auto names = format_names(report_formats());
  return Error{"--format", "unknown format '" + format + "'" +
                               did_you_mean(lower_ascii(format), names) + "; expected " +
                               or_list(names)};
}

Status save_trace(const CommandOptions& o, const Trace& t) {
  if (o.save_trace.empty()) return ok_status();
  BOD_CHECK(not_input("--save-trace", o.save_trace, o.model));
  std::ostringstream s;
  write_trace(s, t);
  return write_atomic(o.save_trace, s.str());
}

// The registry's checks and the gate's own finding, for list-checks.
std::vector<const CheckInfo*> all_check_infos() {
  std::vector<const CheckInfo*> infos;
  for (auto& e : check_registry()) infos.push_back(e.info);
  infos.push_back(&unused_suppression_info());
  return infos;
}

std::string list_checks_text(const std::vector<const CheckInfo*>& infos) {
  std::ostringstream s;
  for (auto* i : infos) {
    char line[64];
    std::snprintf(line, sizeof line, "%-20s %-8s ", i->id, severity_name(i->severity));
    s << line << i->title << "\n";
  }
  return s.str();
}

std::string list_checks_json(const std::vector<const CheckInfo*>& infos) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (auto* i : infos)
    j.push_back({{"id", i->id}, {"severity", severity_name(i->severity)}, {"title", i->title}});
  return j.dump(2) + "\n";
}

// Kernels whose bodies are only `fill` ops (they read no input): a skeleton's stubs.
std::vector<std::string> stub_kernels(const Model& m) {
  std::vector<std::string> out;
  for (auto& k : m.kernels) {
    bool stub = !k.body.empty();
    for (auto& op : k.body) stub = stub && op.info && std::string(op.info->name) == "fill";
    if (stub) out.push_back(k.name);
  }
  return out;
}

// The report of a model's run, with its stub kernels named and their body-dependent notes
// left out.
Report model_report(const char* command, const Trace& t, bool timings, const Model& m) {
  Report r = build_report(command, t, timings);
  leave_out_stub_notes(r, stub_kernels(m));
  return r;
}

}  // namespace

CommandResult cmd_lint(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  if (auto st = HostData::validate_files(m); !st) return fail(st.error());
  auto g = gate_options(o, &m);
  if (!g) return fail(g.error());
  Trace t = plan_trace(p.value(), o.model);
  return finish(o, model_report("lint", t, false, m), g.value());
}

CommandResult cmd_check(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  auto g = gate_options(o, &m);
  if (!g) return fail(g.error());
  Trace t = plan_trace(p.value(), o.model);
  if (!has_inconsistent_declarations(t)) {
    RunOptions ro;
    ro.probe = o.probe || o.probe_every_call;
    ro.probe_every_call = o.probe_every_call;
    ro.timings = timed_run(o);
    ro.progress = progress_fn(o, "check");
    auto run = execute(o, m, p.value(), ro);
    if (!run) return fail(run.error());
    t = std::move(run.value());
  } else {
    spdlog::warn("config-error findings: the plan is not executed");
  }
  if (auto st = save_trace(o, t); !st) return fail(st.error());
  return finish(o, model_report("check", t, timed_run(o), m), g.value());
}

CommandResult cmd_analyze(const CommandOptions& o) {
  if (auto st = check_outputs(o); !st) return fail(st.error());
  if (auto st = check_format(o.format); !st) return fail(st.error());
  auto g = gate_options(o, nullptr);
  if (!g) return fail(g.error());
  auto t = read_trace(o.model);
  if (!t) return fail(t.error());
  return finish(o, build_report("analyze", t.value(), true, o.model), g.value());
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
  const ClassifyFormat* format = find_format(classify_format_table(), o.format);
  if (!format) {
    auto names = classify_formats();
    return fail(Error{"--format", "unknown format '" + o.format + "'" +
                                      did_you_mean(lower_ascii(o.format), names) +
                                      "; classify writes " + or_list(names)});
  }
  Model m;
  auto p = load_plan(o, m);
  if (!p) return fail(at_model(o, p.error()));
  RunOptions ro;
  ro.probe_all = true;
  ro.progress = progress_fn(o, "classify");
  auto run = execute(o, m, p.value(), ro);
  if (!run) return fail(run.error());
  auto sites = classify(run.value());
  return emit(o, format->render(o.model, sites), any_corrupting(sites) ? Exit::findings : Exit::ok);
}

CommandResult cmd_list_checks(const std::string& format_in) {
  const ListChecksFormat* format = find_format(list_checks_format_table(), format_in);
  if (!format)
    return fail(Error{"--format", "unknown format '" + format_in + "'; expected " +
                                      or_list(list_checks_formats())});
  return {Exit::ok, format->render(all_check_infos()), ""};
}

std::vector<std::string> classify_formats() {
  return format_names(classify_format_table());
}

std::vector<std::string> list_checks_formats() {
  return format_names(list_checks_format_table());
}

CommandResult cmd_explain(const std::string& id) {
  const CheckEntry* e = find_check(id);
  const CheckInfo* info = e                                    ? e->info
                          : id == unused_suppression_info().id ? &unused_suppression_info()
                                                               : nullptr;
  if (!info) {
    std::vector<std::string> ids;
    for (auto& c : check_registry()) ids.push_back(c.info->id);
    ids.push_back(unused_suppression_info().id);
    return {Exit::bad_input, "",
            "no such check: '" + id + "'" + did_you_mean(id, ids) + ". Try: bo-doctor list-checks"};
  }
  std::ostringstream s;
  s << info->id << " (" << severity_name(info->severity) << ")\n\n"
    << "What happened: " << info->title << "\n"
    << "Symptom:       " << info->symptom << "\n"
    << "Detection:     " << info->detection << "\n"
    << "Fix:           " << info->fix << "\n";
  return {Exit::ok, s.str(), ""};
}

}  // namespace bod
