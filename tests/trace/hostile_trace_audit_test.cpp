// The hostile-trace audit (issue 25): traces made to break the reader, the checks, the report
// and the skeleton (malformed, huge, deep, odd-typed, overflowing, with control characters,
// and one input per defect the audit found). Each is run through `bo-doctor analyze` and
// `bo-doctor skeleton` under a memory limit (1.5 GB of address space; not under the
// sanitizers, whose shadow memory is not the tool's) and a time limit that is a hang guard,
// not a timing assertion. Every run must exit 0, 1 or 2; a refusal (exit 2) is one line; no
// output (text report, markdown report, skeleton, messages) carries a control character from
// the input. One test per trace (HostileTraceAudit/Traces.*), so ctest spreads them over cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/sanitizer.h"
#include "support/scratch.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using testing::quote;

// A valid trace of `calls` calls of one 2-slot kernel (slot 0 static, slot 1 the output),
// every call on bo_key `key(i)`, run on both engines without access facts.
std::string base_trace(int calls, const std::function<std::string(int)>& key = nullptr,
                       bool clobber = false) {
  Trace t;
  t.header.producer = "hostile audit";
  t.header.caps.run = t.header.caps.no_reuse = true;
  t.header.kernels = {KernelInfo{"k", {{"w", DType::f32}, {"y", DType::f32}}, ""}};
  std::map<std::string, int> first;
  for (int n = 1; n <= calls; ++n) {
    TraceCall c;
    c.number = n;
    c.kernel = "k";
    c.bo_key = key ? key(n) : "k";
    c.key_first_call = first.emplace(c.bo_key, n).first->second;
    c.statics = {0};
    c.outputs = {1};
    c.phase = "decode";
    c.token = n;
    c.path = "run.py:1";
    for (int s = 0; s < 2; ++s) {
      TraceSlot ts;
      ts.slot = s;
      ts.name = s ? "y" : "w";
      ts.role = s ? SlotRole::input : SlotRole::static_input;
      ts.output = s == 1;
      ts.host.shape = {4};
      ts.host.bytes = ts.bo_bytes = 16;
      ts.host.source = s ? ArraySource::zeros : ArraySource::tensor;
      ts.host.name = s ? "zeros" : "w";
      ts.place.name = c.bo_key;
      ts.place.index = s;
      ts.place.first_call = c.key_first_call;
      bool first_call = c.key_first_call == n;
      ts.written = s == 1 || first_call;
      ts.written_bytes = ts.written ? 16 : 0;
      ts.reuse_pre = ts.noreuse_pre = 1;
      ts.reuse_post = ts.noreuse_post = 1;
      if (clobber && s == 0) {
        ts.noreuse_post = 2;
        ts.reuse_pre = first_call ? 1 : 2;
      }
      c.slots.push_back(ts);
    }
    OutputMetrics om;
    om.slot = 1;
    om.elements = 4;
    c.outputs_cmp = {om};
    t.calls.push_back(c);
  }
  std::ostringstream o;
  write_trace(o, t);
  return o.str();
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}
std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (auto& l : v) s += l + "\n";
  return s;
}

// The base trace of 2 calls with line `i` edited as JSON.
std::string edit(int i, const std::function<void(ojson&)>& f, int calls = 2) {
  auto v = split_lines(base_trace(calls));
  ojson j = ojson::parse(v.at(static_cast<size_t>(i)));
  f(j);
  v[static_cast<size_t>(i)] = j.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return join_lines(v);
}

// Line `i` of the base trace with `text` inserted before its closing brace.
std::string insert_in(int i, const std::string& text, int calls = 2) {
  auto v = split_lines(base_trace(calls));
  auto& l = v.at(static_cast<size_t>(i));
  l.insert(l.size() - 1, text);
  return join_lines(v);
}

std::string repeat(const std::string& s, size_t n, const std::string& sep = ",") {
  std::string r;
  r.reserve((s.size() + sep.size()) * n);
  for (size_t i = 0; i < n; ++i) r += (i ? sep : "") + s;
  return r;
}

struct Hostile {
  std::string name;
  std::function<std::string()> make;
  std::vector<int> analyze_codes;  // exit codes analyze may give
};

#ifdef BOD_UNDER_SANITIZER
constexpr int kBig = 4000;  // the sanitized build is 10-20 times slower
#else
constexpr int kBig = 20000;
#endif

std::vector<Hostile> hostile_traces() {
  const std::vector<int> refused = {2}, judged = {0, 1}, no_calls = {1};
  const std::string esc = "\x1b]0;owned\x07\x1b[2J";
  std::vector<Hostile> v = {
      // ---- not a trace
      {"empty_file", [] { return std::string(); }, refused},
      {"only_blank_lines", [] { return std::string("\n  \n\t\n"); }, refused},
      {"not_json", [] { return std::string("hello world\n"); }, refused},
      {"truncated_header", [] { return base_trace(1).substr(0, 40); }, refused},
      {"array_line", [] { return std::string("[1,2,3]\n"); }, refused},
      {"wrong_magic", [] { return edit(0, [](ojson& j) { j["trace"] = "other"; }); }, refused},
      {"newer_version", [] { return edit(0, [](ojson& j) { j["version"] = 999; }); }, refused},
      {"version_as_string", [] { return edit(0, [](ojson& j) { j["version"] = "1"; }); }, refused},
      // nlohmann's reader skips a UTF-8 byte order mark: the trace reads.
      {"utf8_bom", [] { return "\xEF\xBB\xBF" + base_trace(2); }, judged},
      {"nul_byte", [] { return insert_in(1, std::string(",\"x\":{\"a\":\"\0\"}", 15)); }, refused},
      {"invalid_utf8_string", [] { return insert_in(1, ",\"x\":{\"a\":\"\xff\xfe\"}"); }, refused},
      // ---- 0 calls, unfinished, structure
      {"header_only_no_calls", [] { return split_lines(base_trace(1))[0] + "\n"; }, no_calls},
      {"no_calls_with_end",
       [] {
         auto v = split_lines(base_trace(1));
         v.erase(v.begin() + 1);
         return join_lines(v);
       },
       no_calls},
      {"missing_end_line",
       [] {
         auto v = split_lines(base_trace(3));
         v.pop_back();
         return join_lines(v);
       },
       judged},
      {"line_after_end", [] { return base_trace(2) + split_lines(base_trace(2))[1] + "\n"; },
       refused},
      {"second_header", [] { return base_trace(2) + split_lines(base_trace(2))[0] + "\n"; },
       refused},
      {"unknown_line_type", [] { return edit(1, [](ojson& j) { j["type"] = "boom"; }); }, refused},
      {"crlf_line_ends",
       [] {
         std::string s;
         for (auto& l : split_lines(base_trace(2))) s += l + "\r\n";
         return s;
       },
       judged},
      {"blank_lines_between",
       [] {
         std::string s;
         for (auto& l : split_lines(base_trace(2))) s += l + "\n\n   \n";
         return s;
       },
       judged},
      // ---- duplicate keys, the callback parser's quadratic case
      {"duplicate_key_header", [] { return insert_in(0, ",\"producer\":\"again\""); }, refused},
      {"duplicate_key_call", [] { return insert_in(1, ",\"kernel\":\"k\""); }, refused},
      {"500k_empty_objects",
       [] { return insert_in(0, ",\"x\":{\"a\":[" + repeat("{}", 500000) + "]}"); }, judged},
      {"200k_keys_one_object",
       [] {
         std::string o;
         for (int i = 0; i < 200000; ++i) o += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
         return insert_in(0, ",\"x\":{" + o + "}");
       },
       judged},
      // ---- sizes past the limits
      {"values_past_limit",
       [] { return insert_in(1, ",\"x\":{\"a\":[" + repeat("[]", (size_t(1) << 21) + 1) + "]}"); },
       refused},
      {"nesting_65",
       [] {
         return insert_in(1, ",\"x\":{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}");
       },
       refused},
      {"nesting_100000",
       [] {
         return insert_in(
             1, ",\"x\":{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
       },
       refused},
      {"string_past_1mib",
       [] { return edit(0, [](ojson& j) { j["producer"] = std::string((1 << 20) + 1, 'p'); }); },
       refused},
      {"line_past_64mib", [] { return insert_in(1, std::string((size_t(64) << 20) + 10, ' ')); },
       refused},
      {"static_list_4097", [] { return edit(1, [](ojson& j) { j["static"] = ojson(4097, 0); }); },
       refused},
      {"static_and_intermediate_4096",
       [] {
         return edit(1, [](ojson& j) {
           j["static"] = ojson(4096, 0);
           j["intermediate"] = ojson(4096, 0);
           j["output"] = ojson(4096, 1);
         });
       },
       judged},
      {"shape_rank_65",
       [] { return edit(1, [](ojson& j) { j["slots"][0]["host"]["shape"] = ojson(65, 1); }); },
       refused},
      {"shape_rank_64_huge_dims",
       [] {
         return edit(
             1, [](ojson& j) { j["slots"][0]["host"]["shape"] = ojson(64, int64_t(1) << 62); });
       },
       judged},
      {"slots_past_limit",
       [] {
         return edit(0, [](ojson& j) {
           for (int i = 0; i < 4096; ++i)
             j["kernels"][0]["slots"].push_back(
                 {{"name", "s" + std::to_string(i)}, {"dtype", "f32"}});
         });
       },
       refused},
      // ---- numbers: overflow, odd types
      {"nan_counts_int64_max",
       [] {
         auto v = split_lines(base_trace(3));
         for (size_t i = 1; i <= 3; ++i) {
           ojson j = ojson::parse(v[i]);
           j["outputs"][0]["nan"] = {INT64_MAX, 0};
           j["outputs"][0]["inf"] = {INT64_MAX, 0};
           j["outputs"][0]["bit_exact"] = false;
           v[i] = j.dump();
         }
         return join_lines(v);
       },
       judged},
      {"byte_counts_int64_max",
       [] {
         auto v = split_lines(base_trace(3));
         for (size_t i = 1; i <= 3; ++i) {
           ojson j = ojson::parse(v[i]);
           j["h2d"] = {INT64_MAX, INT64_MAX};
           for (auto& s : j["slots"]) {
             s["host"]["bytes"] = INT64_MAX;
             s["bo_bytes"] = INT64_MAX;
           }
           v[i] = j.dump();
         }
         return join_lines(v);
       },
       judged},
      {"shapes_stepping_past_int64",
       [] {
         auto v = split_lines(base_trace(3));
         int64_t dims[] = {INT64_MAX, 1, INT64_MAX};
         for (size_t i = 1; i <= 3; ++i) {
           ojson j = ojson::parse(v[i]);
           for (auto& s : j["slots"]) s["host"]["shape"] = {dims[i - 1], 4};
           v[i] = j.dump();
         }
         return join_lines(v);
       },
       judged},
      {"number_1e999", [] { return insert_in(1, ",\"x\":{\"a\":1e999}"); }, refused},
      {"int_2_pow_64", [] { return edit(1, [](ojson& j) { j["h2d"][0] = UINT64_MAX; }); }, refused},
      {"negative_bytes", [] { return edit(1, [](ojson& j) { j["h2d"][0] = -1; }); }, refused},
      {"bool_as_int", [] { return edit(1, [](ojson& j) { j["token"] = true; }); }, refused},
      {"string_as_int", [] { return edit(1, [](ojson& j) { j["n"] = "1"; }); }, refused},
      {"object_as_string", [] { return edit(1, [](ojson& j) { j["bo_key"] = ojson::object(); }); },
       refused},
      {"call_number_gap", [] { return edit(2, [](ojson& j) { j["n"] = 5; }); }, refused},
      {"key_first_call_forward", [] { return edit(1, [](ojson& j) { j["key_first_call"] = 2; }); },
       refused},
      {"hash_not_hex",
       [] { return edit(1, [](ojson& j) { j["slots"][0]["host"]["hash"] = "zzzz"; }); }, refused},
      {"unknown_kernel", [] { return edit(1, [](ojson& j) { j["kernel"] = "nope"; }); }, refused},
      {"slot_count_mismatch", [] { return edit(1, [](ojson& j) { j["slots"].erase(1); }); },
       refused},
      {"alias_key_not_decimal",
       [] { return edit(1, [](ojson& j) {
              j["alias"] = {{"abc", "pool"}};
            }); }, refused},
      {"alias_slot_out_of_range",
       [] { return edit(1, [](ojson& j) {
              j["alias"] = {{"999999", "pool"}};
            }); }, judged},
      {"index_out_of_range",
       [] { return edit(1, [](ojson& j) {
              j["static"] = {-5, 2147483647};
            }); }, judged},
      {"cosine_nan_string",
       [] { return edit(1, [](ojson& j) { j["outputs"][0]["cosine"] = "nan"; }); }, judged},
      // ---- control characters in what the report prints
      {"control_chars_in_bo_key",
       [esc] {
         return base_trace(
             3, [esc](int n) { return "key" + esc + std::to_string(n % 2); }, true);
       },
       judged},
      {"control_chars_in_names_and_paths",
       [esc] {
         auto v = split_lines(base_trace(3, nullptr, true));
         for (size_t i = 1; i <= 3; ++i) {
           ojson j = ojson::parse(v[i]);
           j["path"] = "run" + esc + ".py:1\nforged line";
           j["labels"]["phase"] = "decode" + esc;
           j["slots"][0]["host"]["name"] = "w" + esc;
           v[i] = j.dump();
         }
         ojson h = ojson::parse(v[0]);
         h["model"]["name"] = "m" + esc;
         v[0] = h.dump();
         return join_lines(v);
       },
       judged},
      {"control_chars_in_error_text",
       [esc] {
         return edit(1, [esc](ojson& j) {
           j["failed"] = true;
           j["error"] = "ValueError" + esc + "\nbo-doctor: error: forged";
         });
       },
       judged},
      // ---- model.path: never opened unless asked
      {"model_path_dev_zero",
       [] { return edit(0, [](ojson& j) { j["model"]["path"] = "/dev/zero"; }); }, judged},
      {"model_path_missing",
       [] { return edit(0, [](ojson& j) { j["model"]["path"] = "/nonexistent/m.json"; }); },
       judged},
      // ---- realistic sizes that were quadratic
      {"20k_distinct_findings",
       [] {
         return base_trace(
             kBig, [](int n) { return "key" + std::to_string(n); }, true);
       },
       judged},
      {"20k_calls_clobbered_static", [] { return base_trace(kBig, nullptr, true); }, judged},
  };
  return v;
}

// One test per trace, so ctest runs them side by side (one test of all 58 took 62 s).
class HostileTraceAudit : public testing::ScratchDirTest,
                          public ::testing::WithParamInterface<size_t> {
 protected:
  HostileTraceAudit() : ScratchDirTest("bod_hostile_traces") {}
};

// Control characters other than the line breaks (the output's own).
bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
  return false;
}

TEST(HostileTraceSet, AtLeastFiftyTracesWithUniqueNames) {
  auto traces = hostile_traces();
  EXPECT_GE(traces.size(), 50u);
  std::map<std::string, int> seen;
  for (auto& h : traces) EXPECT_EQ(seen[h.name]++, 0) << h.name;
}

TEST_P(HostileTraceAudit, ExitsWithinLimitsAndPrintsNoControlCharacter) {
#ifdef BOD_UNDER_SANITIZER
  const std::string limits = "timeout 120 ";
#else
  const std::string limits = "ulimit -v 1572864; timeout 15 ";  // 1.5 GiB, a hang guard
#endif
  const Hostile h = hostile_traces().at(GetParam());
  fs::path p = dir_ / (h.name + ".jsonl");
  {
    std::string text = h.make();
    std::ofstream(p, std::ios::binary) << text;
  }
  // The text report (the default), markdown (also read in terminals and CI logs) and the
  // skeleton, whose model.json goes to stdout.
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"analyze", ""}, {"analyze", " --format markdown"}, {"skeleton", ""}};
  for (auto& [cmd, extra] : runs) {
    SCOPED_TRACE(cmd + extra);
    auto r = testing::run_shell(dir_, "sh -c " + quote(limits + quote(BOD_BINARY) + " " + cmd +
                                                       " " + quote(p.string()) + extra));
    if (cmd == "analyze") {
      EXPECT_NE(std::find(h.analyze_codes.begin(), h.analyze_codes.end(), r.code),
                h.analyze_codes.end())
          << "exit " << r.code << ": " << r.err.substr(0, 300);
    } else {
      EXPECT_TRUE(r.code == 0 || r.code == 2) << "exit " << r.code << ": " << r.err.substr(0, 300);
    }
    if (r.code == 2) {
      EXPECT_EQ(r.err.rfind("bo-doctor: error: ", 0), 0u) << r.err.substr(0, 300);
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err.substr(0, 300);
      EXPECT_LT(r.err.size(), 1000u);
    }
    EXPECT_FALSE(has_control(r.out)) << r.out.substr(0, 300);
    EXPECT_FALSE(has_control(r.err)) << r.err.substr(0, 300);
    if (h.name == "header_only_no_calls" && cmd == "analyze" && extra.empty()) {
      EXPECT_NE(r.out.find("no calls recorded"), std::string::npos) << r.out;
    }
  }
  fs::remove(p);
}

INSTANTIATE_TEST_SUITE_P(Traces, HostileTraceAudit,
                         ::testing::Range<size_t>(0, hostile_traces().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string n = hostile_traces().at(info.param).name;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace bod
