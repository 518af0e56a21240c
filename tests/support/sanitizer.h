// BOD_UNDER_SANITIZER is defined when the tests are built with AddressSanitizer or
// MemorySanitizer (tool/setup.sh asan): tests that run big inputs or child processes under a
// memory or time limit relax it there (the sanitizers' shadow memory is not the tool's, and the
// sanitized build is 10-20 times slower).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define BOD_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define BOD_UNDER_SANITIZER 1
#endif
#endif
