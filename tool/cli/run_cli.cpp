// Command-line parsing (CLI11): subcommands, flags, logging verbosity; usage errors exit 2
// with a did-you-mean for commands and flags. Help shows defaults, exit codes and examples.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>

#include "cli/commands.h"
#include "core/suggest.h"
#include "report/formats.h"

namespace bod {

namespace {

// Each command's own exit codes, in its --help.
const char* kGateCodes =
    "0 pass (no new finding at or above --fail-on); 1 a new finding at or above --fail-on; "
    "2 bad input or usage";
const char* kCheckCodes =
    "0 pass (no new finding at or above --fail-on); 1 a new finding at or above --fail-on, or "
    "a failed end-to-end verification; 2 bad input or usage; 3 backend unavailable or internal "
    "error; 4 the run exceeded --timeout";
const char* kClassifyCodes =
    "0 no declared setting corrupts results; 1 a declared setting corrupts results; 2 bad input "
    "or usage; 3 backend unavailable or internal error; 4 the run exceeded --timeout";
const char* kRecordCodes =
    "the program's own exit status (128 + N when signal N ended it), once the trace is written; "
    "record's own failures: 2 bad usage, a refused -o, or a program that cannot be started; "
    "3 the recorder wrote an invalid trace (its spool is kept)";
const char* kSkeletonCodes = "0 model written; 2 bad usage, or a trace that cannot be read";
const char* kInfoCodes = "0 printed; 2 bad usage or an unknown check id";
const char* kTopCodes =
    "0 pass; 1 findings at or above --fail-on (classify: declared settings that corrupt "
    "results); 2 bad input or usage; 3 backend unavailable or internal error; 4 the run "
    "exceeded --timeout; record: the program's own status. Each command's --help has its own.";

std::string footer(const char* codes, const std::string& examples) {
  return std::string("\nExit codes: ") + codes + ".\n\nExamples:\n" + examples;
}

// Case-insensitive choice of --format (the value is kept as given; commands lower-case it).
CLI::Validator format_of(std::vector<std::string> formats) {
  std::string list = name_list(formats);
  return CLI::Validator(
      [formats, list](std::string& v) -> std::string {
        std::string l = lower_ascii(v);
        for (auto& f : formats)
          if (f == l) {
            v = l;
            return "";
          }
        return "unknown format '" + v + "'" + did_you_mean(l, formats) + "; expected " + list;
      },
      "{" + list + "}", "format");
}

void add_gate_flags(CLI::App* c, CommandOptions& o) {
  c->add_option("--checks", o.checks, "report only these check ids (comma-separated)")
      ->delimiter(',');
  c->add_option("--skip-checks", o.skip_checks, "do not report these check ids (comma-separated)")
      ->delimiter(',');
  c->add_option("--fail-on", o.fail_on,
                "lowest severity that fails the run: error, warning, note or never");
  c->add_option("--baseline", o.baseline,
                "findings listed in FILE (from --write-baseline) are reported as known and do "
                "not fail the run");
  c->add_option("--write-baseline", o.write_baseline,
                "write this run's findings to FILE, to accept them as a baseline");
  c->add_option("--print-limit", o.print_limit,
                "finding groups shown in text output (0: all; JSON always has all)");
}

void add_report_flags(CLI::App* c, CommandOptions& o, const std::vector<std::string>& formats) {
  c->add_option("--format", o.format, "report format (any case)")->transform(format_of(formats));
  c->add_option("-o,--output", o.output,
                "write the report to FILE (atomically) instead of stdout; an existing file is "
                "replaced only when it is a bo-doctor output, or with --force");
  c->add_flag("--force", o.force,
              "let -o, --save-trace, --write-baseline replace any regular file");
}

void add_model_flags(CLI::App* c, CommandOptions& o) {
  c->add_option("MODEL", o.model, "model.json to analyse")->required();
  c->add_option("--max-memory", o.max_memory_gib,
                "refuse plans needing more than this many GiB (buffers and plan metadata)");
}

// The flags and subcommands of `app`, for did-you-mean.
std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app->get_options()) {
    for (auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// "unknown option '--fial-on'; did you mean '--fail-on'?" for the subcommand in use.
std::string extras_hint(const CLI::App& app, int argc, char** argv) {
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands({}))
    if (s->parsed()) sub = s;
  std::vector<std::string> names = flag_names(&app);
  if (sub)
    for (auto& n : flag_names(sub)) names.push_back(n);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;
    std::string name = a.substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    return "unknown option '" + name + "'" + did_you_mean(name, names) +
           (sub ? ". Try: bo-doctor " + sub->get_name() + " --help" : ". Try: bo-doctor --help");
  }
  return "";
}

}  // namespace

CommandResult run_cli(int argc, char** argv) {
  CLI::App app{"bo-doctor: finds buffer-object reuse bugs in NPU inference engines"};
  app.set_version_flag("--version", std::string("bo-doctor ") + BOD_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v / -q also after the subcommand
  app.option_defaults()->always_capture_default();
  app.footer(footer(
      kTopCodes,
      "  bo-doctor check model.json\n  bo-doctor check model.json --format sarif -o bo.sarif\n"));
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more logging on stderr (-vv for debug)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr (no progress line)");
  CommandOptions o;
  const std::vector<std::string> report_format_names = format_names(report_formats());

  auto* check = app.add_subcommand("check", "run every call with and without reuse and diagnose");
  add_model_flags(check, o);
  add_report_flags(check, o, report_format_names);
  add_gate_flags(check, o);
  auto* backend = check->add_option("--backend", o.backend, "cpu (reference device) or xrt");
  auto* device = check->add_option("--device", o.device, "XRT device index (--backend xrt only)");
  auto* timeout_ms = check->add_option("--timeout-ms", o.timeout_ms,
                                       "NPU run wait timeout in ms (--backend xrt only)");
  std::string probe_mode;
  check->add_flag("--probe{smart}", probe_mode,
                  "also run calls with canaries in intermediate slots (finds latent bugs): each "
                  "bo_key's first 2 calls and later calls whose shapes, params or placements "
                  "differ; --probe=all: every call");
  check->add_flag("--timings", o.timings, "include measured times (reports then differ per run)");
  check->add_option("--save-trace", o.save_trace,
                    "also write the run's Trace (JSON Lines, docs/trace-format.md) to FILE");
  check->add_option("--timeout", o.timeout_s, "stop the whole run after SECONDS (exit 4; 0: none)");
  check->footer(footer(
      kCheckCodes,
      "  bo-doctor check model.json --probe\n"
      "  bo-doctor check model.json --format sarif -o bo.sarif --baseline bo-baseline.json\n"));

  auto* analyze = app.add_subcommand(
      "analyze", "run the checks on a saved or recorded trace (docs/trace-format.md)");
  analyze->add_option("TRACE", o.model, "trace file (JSON Lines), or - for stdin")->required();
  add_report_flags(analyze, o, report_format_names);
  analyze->add_flag("--read-model", o.read_model,
                    "read the model.json the trace names (its model.path, at most 64 MiB) to "
                    "show findings at line:column; by default that file is not opened");
  add_gate_flags(analyze, o);
  analyze->footer(footer(kGateCodes,
                         "  bo-doctor analyze run.trace.jsonl\n"
                         "  bo-doctor analyze run.trace.jsonl --format junit -o bo.junit.xml\n"));

  auto* skeleton = app.add_subcommand(
      "skeleton", "write a model.json that replays a trace's calls, with stub kernel bodies");
  skeleton->add_option("TRACE", o.model, "trace file (JSON Lines), or - for stdin")->required();
  skeleton->add_option("-o,--output", o.output,
                       "write the model to FILE (atomically) instead of stdout");
  skeleton->add_flag("--force", o.force, "let -o replace a file that is not a bo-doctor output");
  skeleton->footer(footer(kSkeletonCodes,
                          "  bo-doctor skeleton run.trace.jsonl -o model.json\n"
                          "  bo-doctor skeleton - < run.trace.jsonl\n"));

  auto* classify = app.add_subcommand(
      "classify", "infer each slot's role from behaviour and recommend reuse indices");
  add_model_flags(classify, o);
  add_report_flags(classify, o, classify_formats());
  auto* cbackend = classify->add_option("--backend", o.backend, "cpu (reference device) or xrt");
  classify->add_option("--timeout", o.timeout_s,
                       "stop the whole run after SECONDS (exit 4; 0: none)");
  classify->footer(footer(kClassifyCodes,
                          "  bo-doctor classify model.json\n"
                          "  bo-doctor classify model.json --format json -o roles.json\n"));

  auto* lint = app.add_subcommand("lint", "static checks of the plan, without running it");
  add_model_flags(lint, o);
  add_report_flags(lint, o, report_format_names);
  add_gate_flags(lint, o);
  lint->footer(footer(kGateCodes,
                      "  bo-doctor lint model.json\n  bo-doctor lint model.json --format json\n"));

  RecordOptions ro;
  auto* record = app.add_subcommand(
      "record", "run a Python program with the recorder injected and write its trace");
  ro.output = "run.trace.jsonl";  // before add_option: --help shows it as the default
  record->add_option("-o,--output", ro.output, "trace file to write");
  record->add_flag("--force", ro.force,
                   "let -o replace an existing file that is not a bo-doctor output");
  record
      ->add_flag("--shadow{selective}", ro.shadow_mode,
                 "also run calls on fresh BOs with every slot written, and compare outputs: "
                 "--shadow runs each bo_key's first two calls and every call whose bytes before "
                 "dispatch differ from the no-reuse engine's in a way not yet shown harmless; "
                 "--shadow=all runs every call")
      ->check(CLI::IsMember({"selective", "all"}));
  record->add_option("--target", ro.target,
                     "module:Class.method to wrap (default: every KernelCache.load_and_run)");
  record->add_flag("--xrt", ro.xrt,
                   "record at the XRT API boundary: engines that manage their BOs by hand "
                   "(C++ xrt::bo/xrt::run, pyxrt); with --shadow every run is re-run on fresh "
                   "BOs (outputs compared for a pure-Python pyxrt only); docs/recording.md");
  record->add_option("--labels", ro.labels,
                     "auto (bo_doctor.label, else heuristics) or explicit (label() only)");
  record->add_option("COMMAND", ro.command, "the program and its arguments, after --")->required();
  record->footer(
      footer(kRecordCodes,
             "  bo-doctor record -- python3 run.py\n"
             "  bo-doctor record --shadow -o run.trace.jsonl -- python3 run.py --tokens 4\n"
             "  bo-doctor record --xrt -o run.trace.jsonl -- ./host_program args\n"));

  std::string list_format = "text";
  auto* list = app.add_subcommand("list-checks", "list every check id");
  list->add_option("--format", list_format, or_list(list_checks_formats()))
      ->transform(format_of(list_checks_formats()));
  list->footer(
      footer(kInfoCodes, "  bo-doctor list-checks\n  bo-doctor list-checks --format json\n"));
  std::string id;
  auto* explain = app.add_subcommand("explain", "explain one check");
  explain->add_option("CHECK-ID", id, "a check id from list-checks")->required();
  explain->footer(
      footer(kInfoCodes, "  bo-doctor explain stale-static\n  bo-doctor explain key-collision\n"));

  // An unknown command: name the closest (CLI11 would only say the argument was unexpected).
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> cmds;
    for (const CLI::App* s : app.get_subcommands({})) cmds.push_back(s->get_name());
    if (std::find(cmds.begin(), cmds.end(), argv[1]) == cmds.end())
      return {Exit::bad_input, "",
              std::string("unknown command '") + argv[1] + "'" + did_you_mean(argv[1], cmds) +
                  " (commands: " + name_list(cmds) + "). Try: bo-doctor --help"};
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    for (const CLI::App* s : app.get_subcommands({}))
      if (s->parsed()) return {Exit::ok, s->help(), ""};
    return {Exit::ok, app.help(), ""};
  } catch (const CLI::CallForAllHelp& e) {
    return {Exit::ok, app.help("", CLI::AppFormatMode::All), ""};
  } catch (const CLI::CallForVersion& e) {
    return {Exit::ok, std::string("bo-doctor ") + BOD_VERSION + "\n", ""};
  } catch (const CLI::ExtrasError& e) {
    std::string hint = extras_hint(app, argc, argv);
    return {Exit::bad_input, "",
            hint.empty() ? std::string(e.what()) + ". Try: bo-doctor --help" : hint};
  } catch (const CLI::ParseError& e) {
    return {Exit::bad_input, "", std::string(e.what()) + ". Try: bo-doctor --help"};
  }
  spdlog::set_level(quiet          ? spdlog::level::err
                    : verbose >= 2 ? spdlog::level::debug
                    : verbose == 1 ? spdlog::level::info
                                   : spdlog::level::warn);
  o.progress = !quiet && ::isatty(STDERR_FILENO);
  if (!probe_mode.empty()) {
    if (probe_mode != "smart" && probe_mode != "all")
      return {Exit::bad_input, "",
              "--probe: unknown mode '" + probe_mode + "'" +
                  did_you_mean(probe_mode, {"smart", "all"}) +
                  "; expected --probe (smart) or --probe=all"};
    o.probe = true;
    o.probe_every_call = probe_mode == "all";
  }
  if (o.timeout_s < 0)
    return {Exit::bad_input, "", "--timeout: expected 0 (none) or a positive number of seconds"};
  if (check->parsed() || classify->parsed()) {
    // Options of one backend are refused on another, rather than ignored.
    if (o.backend != "cpu" && o.backend != "xrt")
      return {Exit::bad_input, "",
              "--backend: unknown backend '" + o.backend + "'" +
                  did_you_mean(o.backend, {"cpu", "xrt"}) + "; expected cpu or xrt"};
    (void)backend;
    (void)cbackend;
    if (o.backend != "xrt" && device->count())
      return {Exit::bad_input, "",
              "--device applies to --backend xrt only; the cpu backend has no devices"};
    if (o.backend != "xrt" && timeout_ms->count())
      return {Exit::bad_input, "",
              "--timeout-ms applies to --backend xrt only (the NPU wait); "
              "for the whole run use --timeout"};
    if (o.timeout_ms <= 0)
      return {Exit::bad_input, "", "--timeout-ms: expected a positive number of ms"};
    if (o.device < 0) return {Exit::bad_input, "", "--device: expected a device index >= 0"};
  }
  if (check->parsed()) return cmd_check(o);
  if (record->parsed()) {
    ro.shadow = !ro.shadow_mode.empty();
    return cmd_record(ro);
  }
  if (analyze->parsed()) return cmd_analyze(o);
  if (skeleton->parsed()) return cmd_skeleton(o);
  if (lint->parsed()) return cmd_lint(o);
  if (classify->parsed()) return cmd_classify(o);
  if (list->parsed()) return cmd_list_checks(list_format);
  return cmd_explain(id);
}

}  // namespace bod
