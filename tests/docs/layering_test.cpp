// The layering rule of docs/ARCHITECTURE.md, enforced: data flows one way (model -> plan ->
// run -> Trace -> checks -> report), and no folder includes one above it. Every #include
// "folder/..." of every source under tool/ and checks/ must name a folder its own folder may
// use; a new folder must be added to the table (and to the doc) before it can be used.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

// folder -> the folders its files may include (besides itself). Mirrors docs/ARCHITECTURE.md.
const std::map<std::string, std::set<std::string>> kAllowed = {
    {"core", {}},
    {"kernels", {"core"}},
    {"model", {"core", "kernels"}},
    {"plan", {"core", "kernels", "model"}},
    {"runtime", {"core"}},
    {"engine", {"core", "kernels", "model", "plan", "runtime"}},
    {"trace", {"core"}},
    {"runner", {"core", "kernels", "model", "plan", "runtime", "engine", "trace"}},
    {"checks", {"core", "trace"}},
    {"analysis", {"core", "trace", "checks"}},
    {"report", {"core", "trace", "checks", "analysis"}},
    {"skeleton", {"core", "trace"}},
    {"recorder", {"core"}},
    {"cli",
     {"core", "kernels", "model", "plan", "runtime", "engine", "trace", "runner", "checks",
      "analysis", "report", "skeleton"}},
    {"bench",
     {"core", "kernels", "model", "plan", "runtime", "engine", "trace", "runner", "checks",
      "analysis", "report"}},
    {"main", {"cli", "core"}},
    // A library of its own, preloaded into the user's program: core's hashing (its sources
    // compiled in, as in libbod_hash.so) and header-only core/uffd_wp.h; nothing else of core is
    // linked, so anything else fails to link.
    {"xrt_preload", {"core"}},
};

// The layer a source file belongs to: tool/<folder>/..., checks/..., or tool/main.cpp.
std::string layer_of(const fs::path& rel) {
  auto it = rel.begin();
  std::string top = it->string();
  if (top == "checks") return "checks";
  ++it;
  if (std::next(it) == rel.end()) return it->string() == "main.cpp" ? "main" : "";
  return it->string();
}

TEST(Layering, NoFolderIncludesOneAboveIt) {
  const fs::path root = BOD_SOURCE_DIR;
  std::regex inc(R"re(^\s*#\s*include\s+"([a-z_]+)/)re");
  int files = 0;
  for (const char* top : {"tool", "checks"}) {
    for (auto& e : fs::recursive_directory_iterator(root / top)) {
      auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".h") continue;
      fs::path rel = fs::relative(e.path(), root);
      std::string layer = layer_of(rel);
      auto allowed = kAllowed.find(layer);
      ASSERT_NE(allowed, kAllowed.end())
          << rel << ": folder '" << layer << "' is not in the layering table";
      ++files;
      std::ifstream f(e.path());
      std::string line;
      int n = 0;
      while (std::getline(f, line)) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, inc)) continue;
        std::string to = m[1];
        EXPECT_TRUE(to == layer || allowed->second.count(to))
            << rel.string() << ":" << n << ": " << layer << " may not include " << to << "/";
      }
    }
  }
  EXPECT_GT(files, 50);
}

}  // namespace
