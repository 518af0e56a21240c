// GoogleTest entry point. Exits without static destructors, as bo-doctor's main does:
// Debian's XRT 2.13 can hang in its exit handler after kernel launches on the noop device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(rc);
}
