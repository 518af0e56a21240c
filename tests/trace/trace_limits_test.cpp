// Every limit of the trace reader (the trace rows of the table in docs/model-format.md §13), at
// its boundary: the value at the limit reads, the value just past it is refused with exit 2
// and a "FILE:LINE: ..." message naming the limit and the TraceLimits field that raises it.
// The nesting, slot and string limits are tested at their defaults; the line length and call
// count through TraceLimits (their defaults, 64 MiB and 10,000,000, would take seconds).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/scratch.h"
#include "trace/trace_io.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// The lines of a valid trace: one kernel of `slots` slots, `calls` calls of it.
std::vector<ojson> trace_lines(int calls, int slots) {
  Trace t;
  t.header.producer = "test";
  t.header.caps.run = true;
  t.header.caps.access = true;
  KernelInfo k;
  k.name = "k";
  for (int s = 0; s < slots; ++s) k.slots.push_back({"s" + std::to_string(s), DType::f32});
  t.header.kernels = {k};
  for (int n = 1; n <= calls; ++n) {
    TraceCall c;
    c.number = n;
    c.kernel = "k";
    c.bo_key = "k";
    c.key_first_call = 1;
    for (int s = 0; s < slots; ++s) {
      TraceSlot ts;
      ts.slot = s;
      ts.place.name = "k";
      ts.place.index = s;
      ts.place.first_call = 1;
      c.slots.push_back(ts);
    }
    t.calls.push_back(c);
  }
  std::ostringstream o;
  write_trace(o, t);
  std::vector<ojson> lines;
  std::istringstream in(o.str());
  for (std::string l; std::getline(in, l);) lines.push_back(ojson::parse(l));
  return lines;
}

std::string join(const std::vector<ojson>& lines) {
  std::string s;
  for (auto& l : lines) s += l.dump() + "\n";
  return s;
}

Result<Trace> read_text(const std::string& text, const TraceLimits& lim = {}) {
  std::istringstream in(text);
  return read_trace(in, "t.jsonl", lim);
}

void expect_reads(const std::string& text, const TraceLimits& lim = {}) {
  auto r = read_text(text, lim);
  EXPECT_TRUE(r.ok()) << "refused: " << r.error().line().substr(0, 400);
}

// Refused with exit 2; the message starts with `where` and holds every fragment of `want`.
void expect_refused(const std::string& text, const std::string& where,
                    const std::vector<std::string>& want, const TraceLimits& lim = {}) {
  auto r = read_text(text, lim);
  ASSERT_FALSE(r.ok()) << "accepted, expected: " << want.at(0);
  EXPECT_EQ(r.error().code, Exit::bad_input);
  std::string msg = r.error().line();
  EXPECT_EQ(msg.rfind(where, 0), 0u) << msg.substr(0, 400);
  for (auto& w : want)
    EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg.substr(0, 400);
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_LT(msg.size(), 600u);
}

// Each test has a scratch folder (removed afterwards).
class TraceReaderLimits : public testing::ScratchDirTest {
 protected:
  TraceReaderLimits() : ScratchDirTest("bod_trace_limits") {}
};

TEST_F(TraceReaderLimits, DefaultsAreTheDocumentedValues) {
  TraceLimits d;
  EXPECT_EQ(d.max_line_bytes, size_t(64) << 20);
  EXPECT_EQ(d.max_depth, 64);
  EXPECT_EQ(d.max_calls, size_t(1) << 18);
  EXPECT_EQ(d.max_trace_slots, size_t(1) << 19);
  EXPECT_EQ(d.max_slots, 4096u);
  EXPECT_EQ(d.max_string_bytes, size_t(1) << 20);
  EXPECT_EQ(d.max_values, size_t(1) << 21);
  EXPECT_EQ(d.max_rank, 64u);
}

// ---- line length: 64 MiB (TraceLimits::max_line_bytes) --------------------------------------

TEST_F(TraceReaderLimits, LineLengthAtLimitAcceptedOneBytePastRefused) {
  TraceLimits lim;
  lim.max_line_bytes = 4096;
  auto lines = trace_lines(2, 2);
  std::string header = lines[0].dump();
  ASSERT_LT(header.size(), 4096u);
  std::string rest;
  for (size_t i = 1; i < lines.size(); ++i) rest += lines[i].dump() + "\n";
  // JSON allows trailing spaces: pad the header line to exactly the limit (the '\n' is not
  // counted).
  std::string at = header + std::string(4096 - header.size(), ' ');
  expect_reads(at + "\n" + rest, lim);
  expect_refused(at + " \n" + rest, "t.jsonl:1: ",
                 {"line longer than the limit of 4096 bytes; expected at most 4096 bytes per line",
                  "TraceLimits::max_line_bytes"},
                 lim);
  // The last line (the end line), without its '\n': the same limit.
  std::string body = header + "\n";
  for (size_t i = 1; i + 1 < lines.size(); ++i) body += lines[i].dump() + "\n";
  std::string end = lines.back().dump();
  ASSERT_EQ(lines.back()["type"], "end");
  end += std::string(4096 - end.size(), ' ');
  expect_reads(body + end, lim);
  expect_refused(body + end + " ", "t.jsonl:" + std::to_string(lines.size()) + ": ",
                 {"line longer than the limit of 4096 bytes"}, lim);
}

// ---- nesting depth: 64 (TraceLimits::max_depth) ---------------------------------------------

TEST_F(TraceReaderLimits, NestingAt64AcceptedAt65Refused) {
  // A call line is one object (level 1); "x" is level 2; 62 arrays inside it make 64.
  auto with_depth = [](int total) {
    auto lines = trace_lines(2, 2);
    ojson deep = 1;
    for (int i = 0; i < total - 2; ++i) deep = ojson::array({deep});
    lines[1]["x"] = {{"deep", deep}};
    return join(lines);
  };
  expect_reads(with_depth(64));
  expect_refused(with_depth(65), "t.jsonl:2: ",
                 {"JSON nested deeper than 64 levels at column",
                  "expected at most 64 levels of [ and { per line", "TraceLimits::max_depth"});
}

// ---- calls: 2^18 (TraceLimits::max_calls) --------------------------------------------------

TEST_F(TraceReaderLimits, CallsAtLimitAcceptedOnePastRefused) {
  TraceLimits lim;
  lim.max_calls = 3;
  auto r = read_text(join(trace_lines(3, 2)), lim);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 3u);
  // The 4th call is on line 5 (the header is line 1).
  expect_refused(join(trace_lines(4, 2)), "t.jsonl:5: ",
                 {"more than 3 calls; expected at most 3 call lines", "TraceLimits::max_calls"},
                 lim);
}

// ---- slots of all calls: 2^19 (TraceLimits::max_trace_slots) ------------------------------

TEST_F(TraceReaderLimits, TraceSlotsAtLimitAcceptedOnePastRefused) {
  TraceLimits lim;
  lim.max_trace_slots = 6;  // 3 calls of 2 slots
  auto r = read_text(join(trace_lines(3, 2)), lim);
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->calls.size(), 3u);
  lim.max_trace_slots = 5;  // the 3rd call (line 4) is one slot past it, refused before it is read
  expect_refused(join(trace_lines(3, 2)), "t.jsonl:4:/slots: ",
                 {"more than 5 slots in the trace's calls; expected at most 5 slots over all calls",
                  "TraceLimits::max_trace_slots"},
                 lim);
}

// ---- slots: 4,096 per kernel and per call (TraceLimits::max_slots) ---------------------------

TEST_F(TraceReaderLimits, SlotsAt4096AcceptedAt4097Refused) {
  auto lines = trace_lines(1, 4096);
  auto r = read_text(join(lines));
  ASSERT_TRUE(r.ok()) << r.error().line().substr(0, 400);
  EXPECT_EQ(r->calls.at(0).slots.size(), 4096u);
  // One more slot in the header's kernel.
  auto kernel = lines;
  kernel[0]["kernels"][0]["slots"].push_back({{"name", "s4096"}, {"dtype", "f32"}});
  expect_refused(join(kernel), "t.jsonl:1:/kernels/0/slots: ",
                 {"4097 slots; expected at most 4096 slots per kernel", "TraceLimits::max_slots"});
  // One more slot in the call (refused before the slots are compared with the kernel's).
  auto call = lines;
  call[1]["slots"].push_back(call[1]["slots"][4095]);
  expect_refused(join(call), "t.jsonl:2:/slots: ",
                 {"4097 slots; expected at most 4096 slots per call", "TraceLimits::max_slots"});
}

// ---- string length: 1 MiB as written (TraceLimits::max_string_bytes) -------------------------

TEST_F(TraceReaderLimits, StringAt1MiBAcceptedOneBytePastRefused) {
  const size_t mib = size_t(1) << 20;
  auto lines = trace_lines(1, 2);
  lines[0]["producer"] = std::string(mib, 'p');
  expect_reads(join(lines));
  lines[0]["producer"] = std::string(mib + 1, 'p');
  expect_refused(
      join(lines), "t.jsonl:1: ",
      {"a string of 1048577 bytes at column ", " (\"pppp",
       "expected at most 1048576 bytes per string as written", "TraceLimits::max_string_bytes"});
  // Escapes count as written: 2^19 "\n" are 1 MiB in the file (2^19 bytes once read).
  lines[0]["producer"] = std::string(mib / 2, '\n');
  std::string text = join(lines);
  ASSERT_NE(text.find(R"(\n\n)"), std::string::npos);
  expect_reads(text);
  lines[0]["producer"] = std::string(mib / 2, '\n') + "p";
  expect_refused(join(lines), "t.jsonl:1: ", {"a string of 1048577 bytes"});
}

// ---- values per line: 2^21 (TraceLimits::max_values) -----------------------------------------

// The line length capped bytes, not values: 21M `[]` in one line held 1.6 GB. The values are
// counted while the line is parsed, each before it is stored.
TEST_F(TraceReaderLimits, ValuesPerLineAtLimitAcceptedOnePastRefused) {
  auto lines = trace_lines(1, 2);
  // Count the call line's values and keys as the reader does, then pad with an array under "x".
  std::function<size_t(const ojson&)> count = [&](const ojson& v) {
    size_t n = 1;
    if (v.is_object())
      for (auto it = v.begin(); it != v.end(); ++it) n += 1 + count(it.value());
    if (v.is_array())
      for (auto& e : v) n += count(e);
    return n;
  };
  TraceLimits lim;
  lim.max_values = 1000;
  auto padded = [&](size_t total) {
    auto l = lines;
    l[1]["x"] = {{"pad", ojson::array()}};  // 4 values: "x", {}, "pad", []
    size_t base = count(l[1]);
    l[1]["x"]["pad"] = ojson(total - base, 0);
    EXPECT_EQ(count(l[1]), total);
    return join(l);
  };
  expect_reads(padded(1000), lim);
  expect_refused(padded(1001), "t.jsonl:2: ",
                 {"more than 1000 JSON values at /x/pad/",
                  "expected at most 1000 values and keys "
                  "per line",
                  "TraceLimits::max_values"},
                 lim);
  // At the default: 2^21 + 1 values of `[]` (6 MiB, under the line length limit).
  std::string text = join(lines);
  size_t hdr_end = text.find('\n') - 1;
  std::string many = ",\"x\":{\"many\":[[]";
  for (size_t i = 1; i < (size_t(1) << 21); ++i) many += ",[]";
  text.insert(hdr_end, many + "]}");
  expect_refused(text, "t.jsonl:1: ",
                 {"more than 2097152 JSON values at /x/many/", "TraceLimits::max_values"});
}

// ---- index lists: at most max_slots entries; shape rank: 64 (TraceLimits::max_rank) -------------

// Index lists had no length cap (300k + 300k indices: config-error ran > 16 s).
TEST_F(TraceReaderLimits, IndexListsAtMaxSlotsAcceptedOnePastRefused) {
  auto lines = trace_lines(1, 2);
  for (const char* list : {"static", "intermediate", "output"}) {
    auto l = lines;
    l[1][list] = ojson(4096, 1);
    expect_reads(join(l));
    l[1][list] = ojson(4097, 1);
    expect_refused(join(l), std::string("t.jsonl:2:/") + list + ": ",
                   {"4097 indices; expected at most 4096 per list", "TraceLimits::max_slots"});
  }
}

// A 16M-dimension shape made skeleton take 1.9 GB.
TEST_F(TraceReaderLimits, ShapeRankAt64AcceptedAt65Refused) {
  auto lines = trace_lines(1, 2);
  lines[1]["slots"][0]["host"]["shape"] = ojson(64, 1);
  expect_reads(join(lines));
  lines[1]["slots"][0]["host"]["shape"] = ojson(65, 1);
  expect_refused(
      join(lines), "t.jsonl:2:/slots/0/host/shape: ",
      {"65 dimensions; expected at most 64 dimensions per shape", "TraceLimits::max_rank"});
}

// ---- regular files only (or - for stdin) -----------------------------------------------------

TEST_F(TraceReaderLimits, RegularFileAcceptedFifoRefused) {
  std::string p = (dir_ / "t.jsonl").string();
  std::ofstream(p, std::ios::binary) << join(trace_lines(1, 2));
  auto r = read_trace(p);
  EXPECT_TRUE(r.ok()) << r.error().line();
  std::string link = (dir_ / "link.jsonl").string();
  fs::create_symlink(p, link);  // a link to a regular file is the file
  r = read_trace(link);
  EXPECT_TRUE(r.ok()) << r.error().line();
  std::string fifo = (dir_ / "fifo.jsonl").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = read_trace(fifo);  // would block if it were opened
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Exit::bad_input);
  EXPECT_EQ(r.error().line(), fifo +
                                  ": is a FIFO, not a regular file; expected a trace file "
                                  "(JSON Lines) or - for stdin");
}

}  // namespace
}  // namespace bod
