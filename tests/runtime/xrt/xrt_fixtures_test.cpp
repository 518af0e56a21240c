// The whole fixture set on the XRT backend (XRT's noop device, real libxrt BOs) must give the
// same findings, per-key table and verification as the CPU reference device. Runs the
// bo-doctor binary so the XRT environment stays out of this test process.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/xrt/xclbin_writer.h"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

struct Proc {
  int code = -1;
  std::string out;
};

Proc run(const std::string& args, bool xrt) {
  std::string env =
      xrt ? std::string("XILINX_XRT='") + BOD_XRT_NOOP_DIR + "' XCL_EMULATION_MODE=noop " : "";
  // `timeout`: a hang (XRT's exit handler once did) fails the test instead of the CI run.
  std::string cmd = env + "timeout 120 '" + BOD_BINARY + "' " + args + " 2>/dev/null";
  Proc r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::vector<std::string> fixture_models() {
  std::vector<std::string> v;
  for (const char* dir : {"bugs", "models"})
    for (auto& e : fs::directory_iterator(fs::path(BOD_FIXTURES_DIR) / dir))
      // A LARGE marker: real-size plans, run by ctest -L large only.
      if (!fs::exists(e.path() / "LARGE") && fs::exists(e.path() / "model.json"))
        v.push_back((e.path() / "model.json").string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

class XrtFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(XrtFixture, SameFindingsAsCpu) {
  Proc cpu = run("check --format json '" + GetParam() + "'", false);
  Proc xrt = run("check --backend xrt --format json '" + GetParam() + "'", true);
  ASSERT_EQ(cpu.code, xrt.code) << xrt.out.substr(0, 400);
  if (cpu.code == 2) return;  // invalid on purpose: both refuse it the same way
  json a = json::parse(cpu.out), b = json::parse(xrt.out);
  EXPECT_EQ(a["summary"], b["summary"]);
  EXPECT_EQ(a["findings"], b["findings"]);
  if (!a.contains("backend")) return;  // config errors: the plan is not run on any backend
  EXPECT_EQ(b["backend"]["name"], "xrt");
  EXPECT_TRUE(b["backend"]["host_emulated"].get<bool>());
  EXPECT_EQ(a["findings"], b["findings"]);
  EXPECT_EQ(a["keys"], b["keys"]);
  EXPECT_EQ(a["verification"], b["verification"]);
  EXPECT_EQ(a["figures"], b["figures"]);
}

INSTANTIATE_TEST_SUITE_P(All, XrtFixture, ::testing::ValuesIn(fixture_models()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n =
                               fs::path(i.param).parent_path().parent_path().filename().string() +
                               "_" + fs::path(i.param).parent_path().filename().string();
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// A kernel that declares an xclbin: the run loads it, finds the kernel, allocates its BOs in
// the kernel's groups, launches with opcode 3 and waits (noop completes at once), and still
// gives the CPU device's findings because the reference body supplies the arithmetic.
TEST(XrtXclbinModel, LaunchesTheDeclaredBinary) {
  fs::path dir = fs::temp_directory_path() / ("bod_xclbin_model_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  json m =
      json::parse(std::ifstream(fs::path(BOD_FIXTURES_DIR) / "models/tutorial-mini/model.json"));
  std::string kernel = m["kernels"].begin().key();
  int slots = static_cast<int>(m["kernels"][kernel]["slots"].size());
  ASSERT_TRUE(bod::testutil::write_noop_xclbin((dir / "k.xclbin").string(), kernel, slots));
  {
    std::ofstream ins(dir / "k.insts", std::ios::binary);
    uint32_t words[4] = {0x06030100u, 0, 0, 1};
    ins.write(reinterpret_cast<const char*>(words), sizeof words);
  }
  m["kernels"][kernel]["npu"] = {{"xclbin", "k.xclbin"}, {"instructions", "k.insts"}};
  std::ofstream(dir / "model.json") << m.dump(1);
  std::string model = (dir / "model.json").string();
  Proc cpu = run("check --format json '" + model + "'", false);
  Proc xrt = run("check --backend xrt --format json '" + model + "'", true);
  ASSERT_EQ(xrt.code, 0) << xrt.out.substr(0, 400);
  json a = json::parse(cpu.out), b = json::parse(xrt.out);
  EXPECT_TRUE(b["backend"]["npu_launched"].get<bool>());
  EXPECT_EQ(a["findings"], b["findings"]);
  EXPECT_EQ(a["verification"], b["verification"]);
  // A kernel name that is not in the xclbin: exit 3 with the names it has.
  m["kernels"][kernel]["npu"]["kernel"] = "no_such_kernel";
  std::ofstream(dir / "model.json") << m.dump(1);
  Proc bad = run("check --backend xrt '" + model + "'", true);
  EXPECT_EQ(bad.code, 3);
  fs::remove_all(dir);
}

// Without XILINX_XRT the xrt backend is unavailable: exit 3, one line, no crash.
TEST(XrtUnavailable, MissingEnvironmentExits3) {
  std::string cmd = std::string("env -u XILINX_XRT -u XCL_EMULATION_MODE '") + BOD_BINARY +
                    "' check --backend xrt '" + BOD_FIXTURES_DIR +
                    "/models/llama-tiny/model.json' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  char buf[4096];
  std::string out;
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(st), 3);
  EXPECT_NE(out.find("XILINX_XRT"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}
