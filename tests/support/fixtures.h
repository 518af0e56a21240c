// The fixture list that data-driven tests run over: every fixture folder with a model.json and
// no LARGE marker (real-size plans run with `ctest -L large` only), as paths relative to the
// source folder, sorted; and a gtest parameter name for each. One copy for every such test.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

namespace bod::testing {

// "fixtures/bugs/x" for each fixture under the given folders of the source tree.
inline std::vector<std::string> fixture_dirs(std::initializer_list<const char*> dirs = {
                                                 "fixtures/bugs", "fixtures/models"}) {
  namespace fs = std::filesystem;
  const fs::path source = BOD_SOURCE_DIR;
  std::vector<std::string> r;
  for (const char* dir : dirs)
    for (auto& e : fs::directory_iterator(source / dir))
      if (fs::exists(e.path() / "model.json") && !fs::exists(e.path() / "LARGE"))
        r.push_back(std::string(dir) + "/" + e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

// The fixture's folder name with non-alphanumerics as '_' (a valid gtest parameter name).
inline std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = std::filesystem::path(info.param).filename().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace bod::testing
