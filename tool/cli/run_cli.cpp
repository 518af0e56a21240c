// Command-line parsing (CLI11): subcommands, flags, logging verbosity; usage errors exit 2.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"

namespace bod {

namespace {
void add_report_flags(CLI::App* c, CommandOptions& o) {
  c->add_option("MODEL", o.model, "model.json to analyse")->required();
  c->add_option("--format", o.format, "report format: text, json or markdown");
  c->add_option("-o,--output", o.output, "write the report to FILE (atomically) instead of stdout");
  c->add_option("--max-memory", o.max_memory_gib,
                "refuse plans needing more than this many GiB of buffers (default 16)");
}
}  // namespace

CommandResult run_cli(int argc, char** argv) {
  CLI::App app{"bo-doctor: finds buffer-object reuse bugs in NPU inference engines"};
  app.set_version_flag("--version", std::string("bo-doctor ") + BOD_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v / -q also after the subcommand
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more logging on stderr (-vv for debug)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  CommandOptions o;
  auto* check = app.add_subcommand("check", "run every call with and without reuse and diagnose");
  add_report_flags(check, o);
  check->add_option("--backend", o.backend, "cpu (reference device) or xrt");
  check->add_option("--device", o.device, "XRT device index");
  check->add_option("--timeout-ms", o.timeout_ms, "NPU run wait timeout");
  check->add_flag("--probe", o.probe,
                  "also run each call with canaries in intermediate slots (finds latent bugs)");
  check->add_flag("--timings", o.timings, "include measured times (reports then differ per run)");
  check->add_option("--save-trace", o.save_trace,
                    "also write the run's Trace (JSON Lines, docs/trace-format.md) to FILE");
  auto* analyze = app.add_subcommand(
      "analyze", "run the checks on a saved or recorded trace (docs/trace-format.md)");
  analyze->add_option("TRACE", o.model, "trace file (JSON Lines), or - for stdin")->required();
  analyze->add_option("--format", o.format, "report format: text, json or markdown");
  analyze->add_option("-o,--output", o.output,
                      "write the report to FILE (atomically) instead of stdout");
  auto* skeleton = app.add_subcommand(
      "skeleton", "write a model.json that replays a trace's calls, with stub kernel bodies");
  skeleton->add_option("TRACE", o.model, "trace file (JSON Lines), or - for stdin")->required();
  skeleton->add_option("-o,--output", o.output,
                       "write the model to FILE (atomically) instead of stdout");
  auto* classify = app.add_subcommand(
      "classify", "infer each slot's role from behaviour and recommend reuse indices");
  add_report_flags(classify, o);
  classify->add_option("--backend", o.backend, "cpu (reference device) or xrt");
  auto* lint = app.add_subcommand("lint", "static checks of the plan, without running it");
  add_report_flags(lint, o);
  RecordOptions ro;
  auto* record = app.add_subcommand(
      "record", "run a Python program with the recorder injected and write its trace");
  record->add_option("-o,--output", ro.output, "trace file to write (default run.trace.jsonl)");
  record->add_flag("--shadow", ro.shadow,
                   "also run every call on fresh BOs with every slot written, and compare outputs");
  record->add_option("--target", ro.target,
                     "module:Class.method to wrap (default: every KernelCache.load_and_run)");
  record->add_option("--labels", ro.labels,
                     "auto (default: bo_doctor.label, else heuristics) or explicit (label() only)");
  record->add_option("COMMAND", ro.command, "the program and its arguments, after --")->required();
  std::string list_format = "text";
  auto* list = app.add_subcommand("list-checks", "list every check id");
  list->add_option("--format", list_format, "text or json");
  std::string id;
  auto* explain = app.add_subcommand("explain", "explain one check");
  explain->add_option("CHECK-ID", id, "a check id from list-checks")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return {Exit::ok, app.help(), ""};
  } catch (const CLI::CallForAllHelp& e) {
    return {Exit::ok, app.help("", CLI::AppFormatMode::All), ""};
  } catch (const CLI::CallForVersion& e) {
    return {Exit::ok, std::string("bo-doctor ") + BOD_VERSION + "\n", ""};
  } catch (const CLI::ParseError& e) {
    return {Exit::bad_input, "", std::string(e.what()) + ". Try: bo-doctor --help"};
  }
  spdlog::set_level(quiet ? spdlog::level::err
                    : verbose >= 2 ? spdlog::level::debug
                    : verbose == 1 ? spdlog::level::info
                                   : spdlog::level::warn);
  if (check->parsed()) return cmd_check(o);
  if (record->parsed()) return cmd_record(ro);
  if (analyze->parsed()) return cmd_analyze(o);
  if (skeleton->parsed()) return cmd_skeleton(o);
  if (lint->parsed()) return cmd_lint(o);
  if (classify->parsed()) return cmd_classify(o);
  if (list->parsed()) return cmd_list_checks(list_format);
  return cmd_explain(id);
}

}  // namespace bod
