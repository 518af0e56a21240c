// The trace contract has one source, the record tables: docs/trace.schema.json is what they
// print, docs/trace-format.md lists exactly their fields, and every trace bo-doctor and its
// writers produce (check --save-trace, record and record --shadow, the example writer)
// validates against the schema with Debian's python3-jsonschema.
#include "trace/trace_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using testing::quote;
using testing::run_shell;
using testing::slurp;

const fs::path kRoot = BOD_SOURCE_DIR;
const char* kPython = "/usr/bin/python3";

TEST(TraceSchema, CommittedSchemaIsTheOneTheTablesPrint) {
  fs::path file = kRoot / "docs/trace.schema.json";
  std::string printed = trace_schema_json();
  if (const char* u = std::getenv("BOD_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(file, std::ios::binary) << printed;
    GTEST_SKIP() << "rewrote " << file;
  }
  EXPECT_EQ(slurp(file), printed)
      << "docs/trace.schema.json differs from what the record tables print; if the tables are "
         "right: BOD_UPDATE_GOLDEN=1 build/tests/bod_tests --gtest_filter='TraceSchema.*'";
}

// Every field of the tables has a row in the format's tables, and every row names a field of
// the tables: "| `key` |", "| `model.name` |", "| `outputs[].slot` |", "| `cosine`, `max_abs` |".
TEST(TraceSchema, FormatDocListsExactlyTheTablesFields) {
  std::string doc = slurp(kRoot / "docs/trace-format.md");
  ASSERT_FALSE(doc.empty());
  std::set<std::string> documented;  // last segments of the first cells of table rows
  std::istringstream in(doc);
  std::regex cell("`([A-Za-z0-9_.\\[\\]]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::string first = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(first.begin(), first.end(), cell), end; it != end; ++it) {
      std::string k = (*it)[1];  // every segment: "kernels[].slots[].name" names three keys
      for (size_t b = 0, e; b <= k.size(); b = e + 1) {
        e = std::min(k.find('.', b), k.size());
        std::string seg = k.substr(b, e - b);
        if (seg.size() > 2 && seg.compare(seg.size() - 2, 2, "[]") == 0) seg.resize(seg.size() - 2);
        documented.insert(seg);
      }
    }
  }
  std::set<std::string> fields{"type"};
  for (auto& name : trace_field_names()) {
    std::string key = name.substr(name.find('.') + 1);
    fields.insert(key);
    EXPECT_TRUE(documented.count(key)) << name << " has no row in docs/trace-format.md";
  }
  for (auto& k : documented)
    EXPECT_TRUE(fields.count(k)) << "docs/trace-format.md documents `" << k
                                 << "`, which no record table has";
}

// Validates every line of the given traces (or, with `valid` false, requires every line to be
// refused); skips without python3-jsonschema.
void validate(const fs::path& dir, const std::vector<fs::path>& traces, bool valid = true) {
  if (std::system((std::string(kPython) + " -c 'import jsonschema' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << kPython << " lacks jsonschema (Debian: python3-jsonschema)";
  fs::path script = dir / "validate.py";
  std::ofstream(script) << R"(import json, sys, jsonschema
want_valid = sys.argv[1] == "valid"
schema = json.load(open(sys.argv[2]))
v = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[3:]:
    lines = 0
    for n, line in enumerate(open(path), 1):
        lines += 1
        errs = sorted(v.iter_errors(json.loads(line)), key=lambda e: e.path)
        if want_valid != (not errs):
            bad += 1
            print("%s:%d: %s" % (path, n, errs[0].message[:300] if errs else "accepted"))
    if lines == 0:
        bad += 1
        print("%s: empty" % path)
sys.exit(1 if bad else 0)
)";
  std::string cmd = std::string(kPython) + " " + quote(script.string()) +
                    (valid ? " valid " : " invalid ") +
                    quote((kRoot / "docs/trace.schema.json").string());
  for (auto& t : traces) cmd += " " + quote(t.string());
  auto r = run_shell(dir, cmd);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

class TraceSchemaValidates : public testing::ScratchDirTest {
 protected:
  TraceSchemaValidates() : ScratchDirTest("bod_trace_schema") {}
  fs::path check(const std::string& model, const std::string& flags) {
    fs::path out = dir_ / (std::to_string(n_++) + ".trace.jsonl");
    auto r = run_shell(dir_, std::string(BOD_BINARY) + " check " + flags + " --save-trace " +
                                 quote(out.string()) + " " +
                                 quote((kRoot / "fixtures" / model / "model.json").string()));
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.err;
    return out;
  }
  int n_ = 0;
};

// Every capability and event: probes, timings, view reads, verification, tokens.
TEST_F(TraceSchemaValidates, CheckSaveTrace) {
  std::vector<fs::path> t = {
      check("models/llama-tiny", "--probe"), check("models/qwen-tiny", "--timings"),
      check("bugs/capture_views_shared_pool", ""), check("bugs/key_missing_layer", "--probe=all")};
  for (auto& e : fs::directory_iterator(kRoot / "tests/data/trace"))
    if (e.path().extension() == ".jsonl" && e.path().string().find("bad") == std::string::npos)
      t.push_back(e.path());
  validate(dir_, t);
}

// The schema is not a rubber stamp: what the reader refuses line by line, it refuses too.
TEST_F(TraceSchemaValidates, RefusesBadLines) {
  fs::path bad = dir_ / "bad.jsonl";
  std::ofstream(bad)
      << R"({"trace":"bo-doctor","version":1,"producer":"p","model":{"name":"m","path":""},)"
         R"("backend":{"name":"cpu","host_emulated":true,"npu_launched":false},"kernels":[],)"
         R"("capabilities":{"run":true,"no_reuse":false,"byte_diffs":false,"access":false,)"
         R"("probe":false,"verify":false,"probes":true},"verify":{"top_k":5,"outputs":[]}})"
      << "\n"
      << R"({"type":"end","no_reuse_extra_calls":-1})"
      << "\n"
      << R"({"type":"token","engine":"noreuse","token":1,"topk":[]})"
      << "\n"
      << R"({"type":"view_read","var":"v","reader":"r","read_call":0,"captured_call":1,"slot":0,)"
         R"("overwritten_by":1})"
      << "\n"
      << R"({"type":"figures","engine":"reuse","calls":1,"h2d_bytes":1,"bo_writes":1,"seconds":)"
         R"({"write":1,"dispatch":1,"read":"1"}})"
      << "\n";
  validate(dir_, {bad}, false);
}

TEST_F(TraceSchemaValidates, ExampleWriter) {
  fs::path out = dir_ / "example.trace.jsonl";
  auto r = run_shell(dir_, std::string(kPython) + " " +
                               quote((kRoot / "tool/trace/examples/write_trace.py").string()));
  if (r.code == 77) GTEST_SKIP() << "the example needs the python3 xxhash module";
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(out, std::ios::binary) << r.out;
  validate(dir_, {out});
}

TEST_F(TraceSchemaValidates, RecordPlainAndShadow) {
  if (std::system((std::string(kPython) + " -c 'import numpy, xxhash' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << kPython << " lacks numpy or xxhash";
  std::vector<fs::path> t;
  for (const char* mode : {"", "--shadow "}) {
    for (const char* bug : {"none", "stale-static", "view-overwritten"}) {
      fs::path out = dir_ / (std::string(bug) + (*mode ? "-shadow" : "") + ".trace.jsonl");
      auto r = run_shell(dir_, std::string(BOD_BINARY) + " record " + mode + "-o " +
                                   quote(out.string()) + " -- " + kPython + " " +
                                   quote((kRoot / "tests/recorder/standin/run_llama.py").string()) +
                                   " --bug " + bug);
      EXPECT_EQ(r.code, 0) << r.err;
      t.push_back(out);
    }
  }
  validate(dir_, t);
}

}  // namespace
}  // namespace bod
