// docs/checks.md and the check registry must list the same ids, so docs cannot drift.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "checks/registry.h"

TEST(ChecksDoc, SectionsMatchRegistry) {
  std::ifstream f(std::string(BOD_FIXTURES_DIR) + "/../docs/checks.md");
  ASSERT_TRUE(f) << "docs/checks.md missing";
  std::set<std::string> doc;
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("## ", 0) == 0) doc.insert(line.substr(3));
  std::set<std::string> reg;
  for (auto& e : bod::check_registry()) reg.insert(e.info->id);
  for (auto& id : reg) EXPECT_TRUE(doc.count(id)) << "docs/checks.md lacks a '## " << id << "' section";
  for (auto& id : doc) EXPECT_TRUE(reg.count(id)) << "docs/checks.md documents unknown check " << id;
}
