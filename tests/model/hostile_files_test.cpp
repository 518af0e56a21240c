// Hostile files and sizes (defects 10-12 of the hostile-input audit): a small model that
// unrolls to millions of steps, a tensor declared far larger than its file, and inputs that
// are not regular files. Each must be refused with exit 2 before it can exhaust memory or
// block, with a message naming what to change. The model inputs are committed under
// tests/data/hostile/ (README.md there); devices, FIFOs and the 64 MiB file are made here.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "model/model.h"
#include "model/tensor_io.h"
#include "plan/plan.h"
#include "runner/host_data.h"
#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using ojson = nlohmann::ordered_json;

// The committed inputs of the audit's defects.
const std::string kHostileDir = std::string(BOD_FIXTURES_DIR) + "/../tests/data/hostile";

ojson model() {
  return ojson::parse(R"({
    "format": "bo-doctor-model", "version": 1,
    "dims": {"S": 2, "E": 4},
    "vars": {"x": {"dtype": "f32", "shape": ["S", "E"]}},
    "kernels": {"k": {"slots": [{"name": "a", "dtype": "f32", "shape": ["S", "E"]},
                                {"name": "out", "dtype": "f32", "shape": ["S", "E"]}],
                      "body": [{"op": "copy", "src": "a", "out": "out"}]}},
    "program": {"phases": [{"name": "p", "steps": []}]}
  })");
}

class HostileFiles : public testing::ScratchDirTest {
 protected:
  HostileFiles() : ScratchDirTest("bod_hostile_files") {}
  std::string write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  // Runs the binary; stderr returned, exit code in `code` (-1: killed, e.g. by the timeout).
  std::string run(const std::string& args, int& code) {
    fs::path err = dir_ / "stderr";
    std::string line = "timeout 60 '" + std::string(BOD_BINARY) + "' " + args + " >/dev/null 2>'" +
                       err.string() + "' </dev/null";
    int st = std::system(line.c_str());
    code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::ifstream f(err, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
};

// 10. A 23 KB model expanding to millions of calls took > 5 GB: the plan's own metadata was
// not counted against --max-memory. Now it is, as the expansion goes.
TEST_F(HostileFiles, Defect10_PlanMetadataCountsAgainstMaxMemory) {
  ojson j = ojson::parse(slurp(kHostileDir + "/huge_unroll.json"));
  ASSERT_EQ(j["program"]["phases"][0]["steps"],
            ojson::parse(R"([{"loop": "i", "range": 1000000, "steps": [
                              {"call": "k", "args": {"a": "x"}}]}])"));
  auto m = parse_model(j.dump(), "mem/model.json");
  ASSERT_TRUE(m) << m.error().line();
  ExpandOptions o;
  o.max_bytes = size_t(4) << 20;  // 4 MiB: the buffers (a few hundred bytes) fit easily
  auto t0 = std::chrono::steady_clock::now();
  auto p = expand(m.value(), o);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, Exit::bad_input);
  EXPECT_EQ(p.error().where, "/program") << p.error().line();
  EXPECT_NE(p.error().what.find("(/program/phases/0/steps/0/steps/0; "), std::string::npos)
      << p.error().line();
  EXPECT_NE(p.error().what.find("--max-memory"), std::string::npos) << p.error().line();
  EXPECT_NE(p.error().what.find("metadata"), std::string::npos) << p.error().line();
  // Refused early, not after unrolling the whole loop.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));

  // The same model with a few calls, and with the default cap, expands; its estimate counts
  // the metadata too.
  j["program"]["phases"][0]["steps"][0]["range"] = 100;
  auto small = parse_model(j.dump(), "mem/model.json");
  ASSERT_TRUE(small);
  auto ok = expand(small.value(), ExpandOptions{});
  ASSERT_TRUE(ok) << ok.error().line();
  EXPECT_GT(ok->estimated_bytes, 100 * sizeof(PlanCall));
  auto capped = expand(small.value(), o);
  EXPECT_TRUE(capped) << capped.error().line();
}

// 10, end to end: the CLI's --max-memory refuses with exit 2.
TEST_F(HostileFiles, Defect10_LintRefusesHugeUnrollUnderMaxMemory) {
  std::string mp = kHostileDir + "/huge_unroll.json";
  int code = 0;
  std::string err = run("lint --max-memory 0.004 '" + mp + "'", code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--max-memory"), std::string::npos) << err;
}

// 11. A tensor declared as 1e9 floats backed by a two-float .npy allocated 3.8 GB before the
// file's header was read. The file's size is checked first, before any allocation.
TEST_F(HostileFiles, Defect11_DeclaredTensorLargerThanItsFile) {
  // The committed model declares w as [1000000000] f32 in a .npy of two floats (136 bytes).
  std::string f =
      fs::path(kHostileDir + "/tensor_larger_than_file.npy").lexically_normal().string();
  ASSERT_EQ(fs::file_size(f), 136u);
  auto m = load_model(kHostileDir + "/tensor_larger_than_file.json");
  ASSERT_TRUE(m) << m.error().line();
  ASSERT_EQ(m->tensors.size(), 1u);
  ASSERT_EQ(m->tensors[0].file, f);
  {  // the same file written by the library's own writer, byte for byte
    float v[2] = {1, 2};
    std::string own = (dir_ / "w.npy").string();
    ASSERT_TRUE(save_npy(own, DType::f32, {2}, reinterpret_cast<const uint8_t*>(v)));
    EXPECT_EQ(slurp(own), slurp(f));
  }
  for (int pass = 0; pass < 2; ++pass) {
    Error e{"<no error>", ""};
    if (pass == 0) {
      auto st = HostData::validate_files(m.value());
      ASSERT_FALSE(st);
      e = st.error();
    } else {
      auto h = HostData::load(m.value());
      ASSERT_FALSE(h);
      e = h.error();
    }
    EXPECT_EQ(e.code, Exit::bad_input);
    EXPECT_EQ(e.where, f);
    EXPECT_NE(e.what.find("/tensors/w"), std::string::npos) << e.line();
    EXPECT_NE(e.what.find("4000000000 bytes"), std::string::npos) << e.line();
    EXPECT_NE(e.what.find("holds only " + std::to_string(fs::file_size(f)) + " bytes"),
              std::string::npos)
        << e.line();
  }
  // The check alone, per format: nothing allocated, the declared size against the file's.
  for (const char* fmt : {"bin", "npy", "safetensors"}) {
    auto st = check_tensor_file(f, fmt, "w", DType::f32, {1000000000});
    ASSERT_FALSE(st) << fmt;
    EXPECT_NE(st.error().what.find("declared as shape [1000000000] f32 = 4000000000 bytes"),
              std::string::npos)
        << st.error().line();
  }
  // A header that disagrees is found by the check too (before the caller allocates).
  auto st = check_tensor_file(f, "npy", "", DType::f32, {1});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what.find("does not match"), std::string::npos) << st.error().line();
  EXPECT_TRUE(check_tensor_file(f, "npy", "", DType::f32, {2}));
}

// 12. /dev/zero as the model was read without end, a FIFO blocked forever. Inputs must be
// regular files; model.json is capped at 64 MiB before it is read.
TEST_F(HostileFiles, Defect12_ModelMustBeARegularFile) {
  for (const char* dev : {"/dev/zero", "/dev/full"}) {
    struct stat sb;
    if (::stat(dev, &sb) != 0 || !S_ISCHR(sb.st_mode)) continue;  // not a device here
    auto m = load_model(dev);
    ASSERT_FALSE(m) << dev;
    EXPECT_EQ(m.error().code, Exit::bad_input);
    EXPECT_EQ(m.error().where, dev);
    EXPECT_NE(m.error().what.find("not a regular file"), std::string::npos) << m.error().line();
  }
  std::string fifo = (dir_ / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto m = load_model(fifo);  // no writer: blocked forever before
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().what.find("not a regular file"), std::string::npos) << m.error().line();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  auto d = load_model(dir_.string());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().what.find("is a directory"), std::string::npos);

  int code = 0;
  std::string err = run("lint /dev/zero", code);
  EXPECT_EQ(code, 2) << err;
  err = run("lint '" + fifo + "'", code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

TEST_F(HostileFiles, Defect12_ModelFileSizeCapped) {
  std::string big = (dir_ / "big.json").string();
  {
    std::ofstream f(big, std::ios::binary);
    f << "{";
  }
  fs::resize_file(big, (uint64_t(64) << 20) + 1);  // sparse: costs no disk
  auto m = load_model(big);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Exit::bad_input);
  EXPECT_NE(m.error().what.find("expected at most 67108864"), std::string::npos)
      << m.error().line();
  // A normal model still loads from a file.
  std::string ok = write("model.json", model().dump());
  auto good = load_model(ok);
  EXPECT_TRUE(good) << good.error().line();
}

TEST_F(HostileFiles, Defect12_TensorFileMustBeARegularFile) {
  std::string fifo = (dir_ / "w.bin").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {fifo, std::string("/dev/zero")}) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<uint8_t> buf(8);
    auto st = load_tensor_file(p, "bin", "", DType::f32, {2}, buf.data());
    ASSERT_FALSE(st) << p;
    EXPECT_NE(st.error().what.find("not a regular file"), std::string::npos) << st.error().line();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    auto chk = check_tensor_file(p, "bin", "", DType::f32, {2});
    EXPECT_FALSE(chk) << p;
  }
}

}  // namespace
}  // namespace bod
