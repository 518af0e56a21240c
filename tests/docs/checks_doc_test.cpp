// docs/checks.md and the check registry must list the same ids, so docs cannot drift.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
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
  for (auto& id : reg)
    EXPECT_TRUE(doc.count(id)) << "docs/checks.md lacks a '## " << id << "' section";
  for (auto& id : doc)
    EXPECT_TRUE(reg.count(id)) << "docs/checks.md documents unknown check " << id;
}

// Each section states what the check needs from a trace, and it is what the registry declares.
TEST(ChecksDoc, NeedsLineMatchesRegistry) {
  std::ifstream f(std::string(BOD_FIXTURES_DIR) + "/../docs/checks.md");
  ASSERT_TRUE(f);
  std::map<std::string, std::string> needs;  // id -> its "Needs from the trace" line
  std::string line, section;
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) section = line.substr(3);
    if (line.rfind("**Needs from the trace:**", 0) == 0) needs[section] = line;
  }
  for (auto& e : bod::check_registry()) {
    auto it = needs.find(e.info->id);
    ASSERT_NE(it, needs.end()) << e.info->id << ": no '**Needs from the trace:**' line";
    std::string want = e.info->needs ? bod::need_names(e.info->needs) : "—";
    EXPECT_EQ(it->second.rfind("**Needs from the trace:** " + want, 0), 0u)
        << e.info->id << ": registry needs '" << want << "', doc says: " << it->second;
    if (e.info->optional) {
      EXPECT_NE(it->second.find("optional: " + bod::need_names(e.info->optional)),
                std::string::npos)
          << e.info->id << ": " << it->second;
    }
    EXPECT_EQ(e.info->identity_part, it->second.find("call identities alone") != std::string::npos)
        << e.info->id << ": " << it->second;
  }
}
