// Helpers for tests that write files or run the bo-doctor binary: a scratch folder per test
// (removed afterwards) and reading a whole file. One copy, shared by every such test.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace bod::testing {

// The whole file as bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fixture base whose dir_ is a fresh folder named after the test and the process, so tests
// running in parallel never share files.
class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

// A shell word: 'text' with embedded quotes escaped.
inline std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// What a process did: exit code (-1: killed by a signal), stdout, stderr.
struct Proc {
  int code = -1;
  std::string out, err;
};

// Runs a shell command line with stdin from /dev/null, its stdout and stderr caught in files
// under `dir`.
inline Proc run_shell(const std::filesystem::path& dir, const std::string& cmdline) {
  std::filesystem::path out = dir / "stdout", err = dir / "stderr";
  std::string cmd =
      cmdline + " >" + quote(out.string()) + " 2>" + quote(err.string()) + " </dev/null";
  int st = std::system(cmd.c_str());
  Proc r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace bod::testing
