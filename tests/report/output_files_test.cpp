// Output files (defect 13): write_atomic writes a temp file in the target's folder, fsyncs,
// renames and fsyncs the folder; refuses to replace anything but a regular file; keeps the
// permission bits of the file it replaces; removes its temp file when SIGINT/SIGTERM kill the
// run; and the CLI refuses an output that is its own input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/write_atomic.h"
#include "support/scratch.h"

namespace bod {
namespace {

namespace fs = std::filesystem;
using testing::slurp;

class OutputFiles : public testing::ScratchDirTest {
 protected:
  OutputFiles() : ScratchDirTest("bod_output_files") {}
  void TearDown() override {
    g_write_atomic_test_hook = nullptr;
    ScratchDirTest::TearDown();
  }
  // Files in dir_ other than `keep`.
  std::vector<std::string> others(const std::string& keep) {
    std::vector<std::string> r;
    for (auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != keep) r.push_back(e.path().filename().string());
    return r;
  }
};

TEST_F(OutputFiles, Defect13_WritesAtomicallyAndLeavesNoTemp) {
  fs::path out = dir_ / "report.txt";
  ASSERT_TRUE(write_atomic(out.string(), "one\n"));
  EXPECT_EQ(slurp(out), "one\n");
  ASSERT_TRUE(write_atomic(out.string(), "two\n"));
  EXPECT_EQ(slurp(out), "two\n");
  EXPECT_TRUE(others("report.txt").empty());
  // The temp file lives in the target's folder.
  g_write_atomic_test_hook = [](const std::string& tmp) {
    std::ofstream(fs::path(tmp).parent_path() / "seen") << tmp;
  };
  ASSERT_TRUE(write_atomic(out.string(), "three\n"));
  EXPECT_EQ(fs::path(slurp(dir_ / "seen")).parent_path(), dir_);
  // A folder that is not there: exit 2, nothing written.
  auto st = write_atomic((dir_ / "nope" / "r.txt").string(), "x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Exit::bad_input);
}

TEST_F(OutputFiles, Defect13_RefusesNonRegularTargets) {
  fs::path real = dir_ / "real.txt";
  std::ofstream(real) << "keep me";
  fs::path link = dir_ / "link.txt";
  fs::create_symlink(real, link);
  fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::path sub = dir_ / "sub";
  fs::create_directories(sub);
  // A device node to aim at (never written: refused before any open of the target).
  struct stat sb;
  const char* kDevice = "/dev/full";
  ASSERT_EQ(::stat(kDevice, &sb), 0);
  ASSERT_TRUE(S_ISCHR(sb.st_mode)) << "this test needs " << kDevice << " to be a device";
  for (auto& [p, kind] :
       std::vector<std::pair<std::string, std::string>>{{link.string(), "symbolic link"},
                                                        {fifo.string(), "FIFO"},
                                                        {sub.string(), "directory"},
                                                        {kDevice, "device"}}) {
    auto st = write_atomic(p, "report");
    ASSERT_FALSE(st) << p;
    EXPECT_EQ(st.error().code, Exit::bad_input);
    EXPECT_EQ(st.error().where, p);
    EXPECT_NE(st.error().what.find(kind), std::string::npos) << st.error().line();
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "keep me");
  EXPECT_TRUE(fs::is_fifo(fifo));
  ASSERT_EQ(::stat(kDevice, &sb), 0);
  EXPECT_TRUE(S_ISCHR(sb.st_mode));
}

TEST_F(OutputFiles, Defect13_KeepsPermissionBits) {
  fs::path out = dir_ / "secret.json";
  std::ofstream(out) << "old";
  ASSERT_EQ(::chmod(out.c_str(), 0600), 0);
  ASSERT_TRUE(write_atomic(out.string(), "new"));
  struct stat sb;
  ASSERT_EQ(::stat(out.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_EQ(slurp(out), "new");
  ASSERT_EQ(::chmod(out.c_str(), 0640), 0);
  ASSERT_TRUE(write_atomic(out.string(), "newer"));
  ASSERT_EQ(::stat(out.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0640u);
}

// A run killed by SIGTERM or SIGINT while the report is written leaves no temp file behind.
TEST_F(OutputFiles, Defect13_SignalRemovesTempFile) {
  for (int sig : {SIGTERM, SIGINT}) {
    fs::path out = dir_ / "report.txt";
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      static int s;
      s = sig;
      g_write_atomic_test_hook = [](const std::string&) { ::raise(s); };
      (void)write_atomic(out.string(), "never");
      ::_exit(0);  // not reached: the signal ends the child
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_TRUE(others("").empty()) << others("")[0];
  }
  // Outside a write, the default action of the signals is back.
  struct sigaction sa {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &sa), 0);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);
}

// "-o MODEL" would have replaced the model with its own report.
TEST_F(OutputFiles, Defect13_OutputOntoTheInputModelRefused) {
  fs::path model = dir_ / "model.json";
  std::string text = R"({"format": "bo-doctor-model", "version": 1,
    "vars": {"x": {"dtype": "f32", "shape": [2]}},
    "kernels": {"k": {"slots": [{"name": "a", "dtype": "f32", "shape": [2]},
                                {"name": "out", "dtype": "f32", "shape": [2]}],
                      "body": [{"op": "copy", "src": "a", "out": "out"}]}},
    "program": {"phases": [{"name": "p", "steps": [{"call": "k", "args": {"a": "x"}}]}]}})";
  std::ofstream(model) << text;
  fs::path err = dir_ / "stderr";
  auto run = [&](const std::string& args) {
    std::string line = "cd '" + dir_.string() + "' && '" + std::string(BOD_BINARY) + "' " + args +
                       " >/dev/null 2>'" + err.string() + "' </dev/null";
    int st = std::system(line.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  for (std::string args :
       std::vector<std::string>{"lint model.json -o model.json", "check model.json -o ./model.json",
                                "lint model.json -o '" + model.string() + "'",
                                "check model.json --save-trace model.json"}) {
    EXPECT_EQ(run(args), 2) << args << ": " << slurp(err);
    EXPECT_NE(slurp(err).find("would overwrite the input"), std::string::npos) << slurp(err);
    EXPECT_EQ(slurp(model), text) << args;
  }
  EXPECT_EQ(run("lint model.json -o report.txt"), 0) << slurp(err);
  EXPECT_FALSE(slurp(dir_ / "report.txt").empty());
}

}  // namespace
}  // namespace bod
