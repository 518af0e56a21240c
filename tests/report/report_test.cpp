// The report tree and the formats table: build_report assembles an ungated report, apply_gate
// (once) sets the groups, the counts and the first error every format shows; one table names
// the report formats, their renderers and the one that times its run; the library's own format
// checks name the formats from their tables.
#include "report/report.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "checks/trace_builder.h"
#include "cli/commands.h"
#include "report/formats.h"
#include "support/scratch.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

class ReportTree : public testing::ScratchDirTest {
 protected:
  ReportTree() : ScratchDirTest("bod_report_tree") {}
};

// key_missing_layer: the layer-1 FFN call reuses layer 0's weights (call 22 diverges first).
TEST_F(ReportTree, CountsAndFirstErrorAreSetByTheGateOnce) {
  spdlog::set_level(spdlog::level::err);
  CommandOptions o;
  o.model = std::string(BOD_FIXTURES_DIR) + "/bugs/key_missing_layer/model.json";
  o.format = "json";
  o.save_trace = (dir_ / "run.trace.jsonl").string();
  CommandResult c = cmd_check(o);
  ASSERT_EQ(c.code, Exit::findings) << c.err;
  auto summary = nlohmann::json::parse(c.out)["summary"];
  auto t = read_trace(o.save_trace);
  ASSERT_TRUE(t) << t.error().line();

  Report r = build_report("check", t.value(), false);
  // From the trace alone: the call count and the first diverging call.
  EXPECT_EQ(r.calls, t->calls.size());
  EXPECT_EQ(r.first_divergence.number, 22);
  EXPECT_EQ(r.first_divergence.where, "decode t=0 l=1");
  EXPECT_EQ(r.first_divergence.kernel, "o_ffn");
  EXPECT_EQ(r.run.backend, t->header.backend);
  EXPECT_EQ(r.run.reuse.h2d_bytes, t->reuse.h2d_bytes);
  // Ungated: no groups, counts or first error yet.
  EXPECT_TRUE(r.groups.empty());
  EXPECT_EQ(r.counts.errors, 0);
  EXPECT_EQ(r.first_error(), nullptr);

  ASSERT_TRUE(apply_gate(r, GateOptions{}));
  EXPECT_FALSE(r.groups.empty());
  EXPECT_EQ(r.counts.errors, summary["errors"].get<int>());
  EXPECT_EQ(r.counts.warnings, summary["warnings"].get<int>());
  EXPECT_EQ(r.counts.notes, summary["notes"].get<int>());
  EXPECT_GT(r.counts.errors, 0);
  ASSERT_NE(r.first_error(), nullptr);
  EXPECT_EQ(r.first_error()->call, 22);
  EXPECT_EQ(r.first_error_where, "decode t=0 l=1");
  EXPECT_NE(render_text(r).find("first error: call 22, decode t=0 l=1, o_ffn"), std::string::npos);

  // A gate selecting a check with no error finding: no error counted, no first error.
  GateOptions only;
  only.checks = {"missed-static"};
  ASSERT_TRUE(apply_gate(r, only));
  EXPECT_EQ(r.counts.errors, 0);
  EXPECT_EQ(r.first_error(), nullptr);
  EXPECT_EQ(r.first_error_where, "");
}

// The key table's header names the device as the trace states it: an NPU only when the trace
// says one ran the kernels (a recording on a stand-in says neither NPU nor host emulation).
TEST_F(ReportTree, KeyTableHeaderNamesTheDeviceAsRecorded) {
  spdlog::set_level(spdlog::level::err);
  CommandOptions o;
  o.model = std::string(BOD_FIXTURES_DIR) + "/models/tutorial-mini/model.json";
  o.save_trace = (dir_ / "run.trace.jsonl").string();
  ASSERT_EQ(cmd_check(o).code, Exit::ok);
  auto t = read_trace(o.save_trace);
  ASSERT_TRUE(t) << t.error().line();
  auto header = [&](bool emulated, bool npu) {
    Trace c = t.value();
    c.header.backend = "recorded";
    c.header.host_emulated = emulated;
    c.header.npu_launched = npu;
    Report r = build_report("analyze", c, false);
    EXPECT_TRUE(apply_gate(r, GateOptions{}));
    std::string text = render_text(r);
    size_t at = text.find("bo_key first call vs later calls");
    return at == std::string::npos ? text : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(header(false, false),
            "bo_key first call vs later calls (backend recorded, device not recorded):");
  EXPECT_EQ(header(false, true), "bo_key first call vs later calls (backend recorded, NPU):");
  EXPECT_EQ(header(true, false),
            "bo_key first call vs later calls (backend recorded, host-emulated kernels):");
}

// The divergence plot is on a log scale of 1 - cosine with the 0.99 line: a 1 - cos of 0.0018
// (tokens may already differ) stands well above the axis, near the line, not flat on zero.
// Keys name their cache in the HTML too.
TEST(ReportHtml, DivergenceOnALogScaleWithTheThresholdLine) {
  TraceBuilder b;
  b.kernel("proj", {"x", "w", "out"});
  b.call("proj", "K").ns("decode").statics({1}).slot(1).tensor("w");
  b.call("proj", "K").ns("decode").statics({1}).slot(1).tensor("w");
  b.at(2).diverged(2, 0.9982);
  Trace t = b.build();
  Report r = build_report("analyze", t, false);
  ASSERT_TRUE(apply_gate(r, GateOptions{}));
  std::string html = render_html(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex("<svg id=\"divplot\"[^>]*data-scale=\"log\"")));
  ASSERT_TRUE(std::regex_search(
      html, m, std::regex("class=\"threshold\" data-value=\"0.01\"[^>]* y1=\"([0-9.]+)\"")));
  double line = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(
      html, m,
      std::regex("<svg id=\"divplot\"[\\s\\S]*?points=\"[0-9.]+,([0-9.]+) [0-9.]+,([0-9.]+) \"")));
  double first = std::stod(m[1]), second = std::stod(m[2]);
  EXPECT_DOUBLE_EQ(first, 160);  // bit-exact: on the axis
  EXPECT_LT(second, 100);        // 1 - cos 0.0018: well above it (linear: 159.7)
  EXPECT_GT(second, line);       // and below the 0.99 line
  EXPECT_NE(html.find("<svg id=\"relplot\""), std::string::npos);
  EXPECT_NE(html.find("<td class=\"l\">decode/K</td>"), std::string::npos);
}

TEST(ReportFormats, OneTableNamesRendersAndTimes) {
  EXPECT_EQ(format_names(report_formats()),
            (std::vector<std::string>{"text", "json", "markdown", "sarif", "junit", "html"}));
  for (auto& f : report_formats()) EXPECT_EQ(f.timed, std::string(f.name) == "markdown") << f.name;
  EXPECT_TRUE(timed_format("MarkDown"));
  EXPECT_FALSE(timed_format("json"));
  EXPECT_FALSE(timed_format("yaml"));
  ASSERT_NE(find_format(report_formats(), "HTML"), nullptr);
  EXPECT_EQ(find_format(report_formats(), "HTML")->render, &render_html);
  EXPECT_EQ(find_format(report_formats(), "xml"), nullptr);
  EXPECT_EQ(classify_formats(), (std::vector<std::string>{"text", "json"}));
  EXPECT_EQ(list_checks_formats(), (std::vector<std::string>{"text", "json"}));
  EXPECT_EQ(or_list({"text"}), "text");
  EXPECT_EQ(or_list({"text", "json"}), "text or json");
  EXPECT_EQ(or_list(format_names(report_formats())), "text, json, markdown, sarif, junit or html");
}

// The commands called as library functions (no CLI11 in front) refuse a format by name.
TEST(ReportFormats, CommandsRefuseOtherFormatsNamingTheirOwn) {
  CommandOptions o;
  o.model = std::string(BOD_FIXTURES_DIR) + "/models/tutorial-mini/model.json";
  o.format = "jsn";
  CommandResult c = cmd_check(o);
  EXPECT_EQ(c.code, Exit::bad_input);
  EXPECT_EQ(c.err,
            "--format: unknown format 'jsn'; did you mean 'json'?; expected text, json, "
            "markdown, sarif, junit or html");
  o.format = "markdown";
  c = cmd_classify(o);
  EXPECT_EQ(c.code, Exit::bad_input);
  EXPECT_EQ(c.err, "--format: unknown format 'markdown'; classify writes text or json");
  c = cmd_list_checks("xml");
  EXPECT_EQ(c.code, Exit::bad_input);
  EXPECT_EQ(c.err, "--format: unknown format 'xml'; expected text or json");
  EXPECT_EQ(cmd_list_checks("JSON").code, Exit::ok);
}

}  // namespace
}  // namespace bod

namespace bod {
namespace {

// The per-kernel reuse view of an XRT recording (analysis/xrt_reuse) is in every report that
// shows the per-key table or the reuse summary: text, markdown (a table for the PR comment) and
// HTML, with one wording of its cells (xrt_first_run_text / xrt_later_runs_text).
TEST(XrtReuseView, TextMarkdownAndHtmlShowIt) {
  auto t = read_trace(std::string(BOD_FIXTURES_DIR) + "/../tests/data/xrt/clean.trace.jsonl");
  ASSERT_TRUE(t.ok()) << t.error().line();
  for (auto& c : t->calls) c.slots[3].xrt->changed.clear();  // input re-sent, never changed
  Report r = build_report("analyze", *t, false);
  ASSERT_TRUE(apply_gate(r, GateOptions{}));
  ASSERT_EQ(r.xrt_reuse.size(), 1u);
  const XrtArgReuse& in = r.xrt_reuse[0].args[3];
  EXPECT_EQ(xrt_later_runs_text(in), "re-sent 3 of 3, 768 B");
  std::string text = render_text(r), md = render_markdown(r), html = render_html(r);
  for (const std::string* s : {&text, &md, &html}) {
    EXPECT_NE(s->find("re-sent 3 of 3, 768 B"), std::string::npos) << *s;
    EXPECT_NE(s->find("resident on 3"), std::string::npos) << *s;
    EXPECT_NE(s->find("missed-static"), std::string::npos) << *s;
  }
  EXPECT_NE(md.find("| kernel | arg | bytes | first run | later runs | role | advice |"),
            std::string::npos)
      << md;
  EXPECT_NE(html.find("<table id=\"xrt-reuse\">"), std::string::npos);
  // Not an XRT recording: no such section anywhere.
  t->header.caps.xrt = false;
  Report plain = build_report("analyze", *t, false);
  ASSERT_TRUE(apply_gate(plain, GateOptions{}));
  EXPECT_EQ(render_markdown(plain).find("Per-kernel BO reuse"), std::string::npos);
  EXPECT_EQ(render_html(plain).find("xrt-reuse"), std::string::npos);
}

}  // namespace
}  // namespace bod
