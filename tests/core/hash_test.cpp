// hash_bytes on every code path this machine has gives the reference built from the xxHash
// library itself (libxxhash, not inline): XXH3-64 (seed 0) up to 64 KiB, the hash of the
// 64 KiB chunks' hashes above; on every size 0..4096 at several misalignments, on sizes around
// the block and chunk boundaries up to several MB, and through the BOD_HASH_PATH environment
// variable in a child process. (The AVX-512 path runs only on a CPU that has it.)
#include "core/hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>  // the library's exported XXH3_64bits: the reference

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "support/scratch.h"

namespace bod {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> b(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& c : b) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<uint8_t>(x >> 29);
  }
  return b;
}

// The definition (core/hash.h), from the library's XXH3_64bits alone.
uint64_t reference(const uint8_t* d, size_t n) {
  const size_t C = size_t(64) << 10;
  if (n <= C) return XXH3_64bits(d, n);
  std::vector<uint8_t> le;
  for (size_t off = 0; off < n; off += C) {
    uint64_t h = XXH3_64bits(d + off, std::min(C, n - off));
    for (int b = 0; b < 8; ++b) le.push_back(static_cast<uint8_t>(h >> (8 * b)));
  }
  return XXH3_64bits(le.data(), le.size());
}

// Restores the path hash_bytes takes when a test forced one.
struct KeepPath {
  HashPath p = hash_path();
  ~KeepPath() { set_hash_path(p); }
};

TEST(Hash, ScalarAndSse2AreAvailableOnX86) {
  EXPECT_TRUE(hash_path_available(HashPath::scalar));
#if defined(__x86_64__)
  EXPECT_TRUE(hash_path_available(HashPath::sse2));
#endif
  auto paths = available_hash_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), HashPath::scalar);
}

TEST(Hash, EveryPathMatchesTheReferenceOnSmallSizesAndOffsets) {
  std::vector<uint8_t> buf = pattern(4096 + 64);
  for (HashPath p : available_hash_paths()) {
    SCOPED_TRACE(hash_path_name(p));
    KeepPath keep;
    ASSERT_TRUE(set_hash_path(p));
    ASSERT_EQ(hash_path(), p);
    for (size_t off : {0, 1, 3, 7, 13, 32, 33}) {
      for (size_t n = 0; n <= 4096; ++n) {
        const uint8_t* d = buf.data() + off;
        uint64_t want = XXH3_64bits(d, n);
        ASSERT_EQ(hash_bytes_on(p, d, n), want) << "n=" << n << " offset=" << off;
        ASSERT_EQ(hash_bytes(d, n), want) << "n=" << n << " offset=" << off;
      }
    }
  }
}

TEST(Hash, EveryPathMatchesTheReferenceOnLargeBuffers) {
  // Sizes around the 1 KiB stripe block, 64-byte stripe edges, the 64 KiB chunk, the 4 MiB
  // where the chunk hashes leave the stack, and several MB.
  std::vector<uint8_t> buf = pattern((size_t(5) << 20) + 1000);
  std::vector<size_t> sizes = {1023,
                               1024,
                               1025,
                               16383,
                               16384,
                               16385,
                               65535,
                               65536,
                               65537,
                               65536 + 63,
                               131072,
                               131073,
                               (size_t(1) << 20) + 17,
                               (size_t(4) << 20) - 1,
                               size_t(4) << 20,
                               (size_t(4) << 20) + 1,
                               (size_t(3) << 20) + 5,
                               size_t(5) << 20};
  for (HashPath p : available_hash_paths()) {
    SCOPED_TRACE(hash_path_name(p));
    KeepPath keep;
    ASSERT_TRUE(set_hash_path(p));
    for (size_t off : {0, 1, 31, 999})
      for (size_t n : sizes) {
        const uint8_t* d = buf.data() + off;
        uint64_t want = reference(d, n);
        EXPECT_EQ(hash_bytes_on(p, d, n), want) << "n=" << n << " offset=" << off;
        EXPECT_EQ(hash_bytes(d, n), want) << "n=" << n << " offset=" << off;
      }
  }
}

TEST(Hash, UpToOneChunkIsPlainXxh3AndAboveIsTheHashOfTheChunkHashes) {
  std::vector<uint8_t> buf = pattern(3 * kHashChunk + 5);
  EXPECT_EQ(hash_bytes(buf.data(), kHashChunk), XXH3_64bits(buf.data(), kHashChunk));
  EXPECT_NE(hash_bytes(buf.data(), kHashChunk + 1), XXH3_64bits(buf.data(), kHashChunk + 1));
  // The pieces a chunk cache uses give the same value as hashing the whole.
  size_t n = buf.size(), k = hash_chunk_count(n);
  ASSERT_EQ(k, 4u);
  std::vector<uint64_t> h(k);
  for (size_t i = 0; i < k; ++i)
    h[i] = hash_chunk(buf.data() + i * kHashChunk, std::min(kHashChunk, n - i * kHashChunk));
  EXPECT_EQ(combine_chunk_hashes(h.data(), k), hash_bytes(buf.data(), n));
  // The list of chunk hashes is hashed as one plain XXH3-64 however long: 10,000 chunk hashes
  // (an array of 625 MiB) make an 80,000-byte list, longer than a chunk.
  std::vector<uint64_t> many(10000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 0x9e3779b97f4a7c15ull * (i + 1);
  std::vector<uint8_t> le;
  for (uint64_t v : many)
    for (int b = 0; b < 8; ++b) le.push_back(static_cast<uint8_t>(v >> (8 * b)));
  EXPECT_EQ(combine_chunk_hashes(many.data(), many.size()), XXH3_64bits(le.data(), le.size()));
  // The reference values docs/trace-format.md §8 gives writers.
  std::vector<uint8_t> zeros(size_t(1) << 20, 0);
  EXPECT_EQ(hash_hex(hash_bytes(zeros.data(), 65536)), "33b202d302b65caa");
  EXPECT_EQ(hash_hex(hash_bytes(zeros.data(), 65537)), "66268c5ee347da5e");
  EXPECT_EQ(hash_hex(hash_bytes(zeros.data(), zeros.size())), "6ed551098c686bf9");
  EXPECT_EQ(hash_chunk_count(0), 1u);
  EXPECT_EQ(hash_chunk_count(kHashChunk), 1u);
  EXPECT_EQ(hash_chunk_count(kHashChunk + 1), 2u);
}

TEST(Hash, BlockHashesArePlainXxh3OfEachBlock) {
  std::vector<uint8_t> buf = pattern(3 * 4096 + 100);
  for (size_t block : {size_t(1), size_t(4096), kHashChunk})
    for (size_t n : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(4097), buf.size()}) {
      std::vector<uint64_t> got(block_count(n, block));
      hash_blocks(buf.data(), n, block, got.data());
      std::vector<uint64_t> want;
      for (size_t off = 0; off < n; off += block)
        want.push_back(XXH3_64bits(buf.data() + off, std::min(block, n - off)));
      if (n == 0) want.push_back(XXH3_64bits(buf.data(), 0));
      EXPECT_EQ(got, want) << "n=" << n << " block=" << block;
    }
}

// hash_bytes_chunks gives hash_bytes's value and keeps the chunk hashes that value combines:
// each is plain XXH3-64 of its chunk alone (what a later spot check of one chunk compares), on
// sizes around one chunk and across the threaded split, on any number of threads.
TEST(Hash, ChunksKeptAreTheChunkHashesOfTheSameValue) {
  const size_t M = size_t(1) << 20;
  std::vector<uint8_t> buf = pattern(17 * M + 64);
  struct KeepCount {  // the thread count restored, whatever fails
    unsigned t = hash_threads();
    ~KeepCount() { set_hash_threads(t); }
  } keep;
  for (unsigned t : {1u, 3u}) {
    ASSERT_TRUE(set_hash_threads(t));
    for (size_t n : {size_t(0), size_t(1), kHashChunk - 1, kHashChunk, kHashChunk + 1,
                     5 * kHashChunk + 7, 17 * M + 5}) {
      std::vector<uint64_t> got(hash_chunk_count(n), 0);
      EXPECT_EQ(hash_bytes_chunks(buf.data() + 1, n, got.data()), reference(buf.data() + 1, n))
          << "n=" << n;
      for (size_t i = 0; i < got.size(); ++i) {
        size_t off = i * kHashChunk;
        EXPECT_EQ(got[i], XXH3_64bits(buf.data() + 1 + off, std::min(kHashChunk, n - off)))
            << "n=" << n << " chunk " << i;
      }
    }
  }
}

// Restores the thread count hash_bytes uses when a test set one.
struct KeepThreads {
  unsigned t = hash_threads();
  ~KeepThreads() { set_hash_threads(t); }
};

TEST(Hash, LargeArraysHashTheSameOnAnyNumberOfThreads) {
  // From 16 MiB on, hash_bytes splits the chunks among threads (4 MiB each at least): every
  // count gives the reference, around the threshold and on uneven splits.
  const size_t M = size_t(1) << 20;
  std::vector<uint8_t> buf = pattern(40 * M + 64);
  const size_t sizes[] = {16 * M - 1, 16 * M, 16 * M + 1, 16 * M + 3 * kHashChunk + 17, 40 * M + 5};
  std::vector<uint64_t> want;
  for (size_t n : sizes) want.push_back(reference(buf.data() + 3, n));
  KeepThreads keep;
  for (unsigned t : {1u, 2u, 3u, 4u, 7u, 8u, kMaxHashThreads}) {
    ASSERT_TRUE(set_hash_threads(t));
    EXPECT_EQ(hash_threads(), t);
    for (size_t i = 0; i < std::size(sizes); ++i)
      EXPECT_EQ(hash_bytes(buf.data() + 3, sizes[i]), want[i])
          << "threads=" << t << " n=" << sizes[i];
  }
  EXPECT_FALSE(set_hash_threads(0));
  EXPECT_FALSE(set_hash_threads(kMaxHashThreads + 1));
  EXPECT_EQ(hash_threads(), kMaxHashThreads);
}

TEST(Hash, KnownValues) {
  // XXH3-64 of the empty input and of "abc", as published by xxHash: a change of algorithm or
  // seed fails here even if the reference library changed with it.
  for (HashPath p : available_hash_paths()) {
    EXPECT_EQ(hash_bytes_on(p, "", 0), 0x2d06800538d394c2ull) << hash_path_name(p);
    EXPECT_EQ(hash_hex(hash_bytes_on(p, "abc", 3)), hash_hex(XXH3_64bits("abc", 3)));
  }
  EXPECT_EQ(hash_hex(0x2d06800538d394c2ull), "2d06800538d394c2");
}

TEST(Hash, SetHashPathRefusesWhatIsNotAvailable) {
  KeepPath keep;
  for (HashPath p : {HashPath::scalar, HashPath::sse2, HashPath::avx2, HashPath::avx512}) {
    HashPath before = hash_path();
    bool ok = set_hash_path(p);
    EXPECT_EQ(ok, hash_path_available(p)) << hash_path_name(p);
    EXPECT_EQ(hash_path(), ok ? p : before) << hash_path_name(p);
  }
}

// BOD_HASH_PATH picks the path at the first hash of a process: each available path in a
// child process (bo-doctor itself), whose hashes land in a saved trace; they must not change.
class HashPathEnv : public testing::ScratchDirTest {
 protected:
  HashPathEnv() : ScratchDirTest("bod_hash_path") {}
};

TEST_F(HashPathEnv, ForcesThePathOfAProcess) {
  std::string model = std::string(BOD_FIXTURES_DIR) + "/models/tutorial-mini/model.json";
  std::string first;
  for (HashPath p : available_hash_paths()) {
    std::string out = (dir_ / (std::string("hash-path-") + hash_path_name(p) + ".jsonl")).string();
    std::string cmd = std::string("BOD_HASH_PATH=") + hash_path_name(p) + " " +
                      testing::quote(BOD_BINARY) + " check --format json --save-trace " +
                      testing::quote(out) + " " + testing::quote(model);
    testing::Proc r = testing::run_shell(dir_, cmd);
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.find("BOD_HASH_PATH"), std::string::npos) << r.err;  // accepted silently
    std::string trace = testing::slurp(out);
    ASSERT_FALSE(trace.empty()) << out;
    if (first.empty())
      first = trace;
    else
      EXPECT_EQ(trace, first) << "trace differs on path " << hash_path_name(p);
  }
  // An unknown value is named on stderr, and the run still works (on the best path).
  testing::Proc r = testing::run_shell(dir_, "BOD_HASH_PATH=bogus " + testing::quote(BOD_BINARY) +
                                                 " check " + testing::quote(model));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("BOD_HASH_PATH=bogus is not one of scalar, sse2, avx2, avx512"),
            std::string::npos)
      << r.err;
}

// BOD_HASH_THREADS sets the thread count of a process: accepted silently, the same trace as
// one thread gives; a value out of range is named on stderr and the default used.
TEST_F(HashPathEnv, ThreadsOfAProcess) {
  std::string model = std::string(BOD_FIXTURES_DIR) + "/models/tutorial-mini/model.json";
  std::string first;
  for (const char* t : {"1", "2", "5"}) {
    std::string out = (dir_ / (std::string("hash-threads-") + t + ".jsonl")).string();
    std::string cmd = std::string("BOD_HASH_THREADS=") + t + " " + testing::quote(BOD_BINARY) +
                      " check --format json --save-trace " + testing::quote(out) + " " +
                      testing::quote(model);
    testing::Proc r = testing::run_shell(dir_, cmd);
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.find("BOD_HASH_THREADS"), std::string::npos) << r.err;
    std::string trace = testing::slurp(out);
    ASSERT_FALSE(trace.empty()) << out;
    if (first.empty())
      first = trace;
    else
      EXPECT_EQ(trace, first) << "trace differs with BOD_HASH_THREADS=" << t;
  }
  for (const char* bad : {"0", "65", "two", "3x"}) {
    testing::Proc r = testing::run_shell(dir_, std::string("BOD_HASH_THREADS=") + bad + " " +
                                                   testing::quote(BOD_BINARY) + " check " +
                                                   testing::quote(model));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(std::string("BOD_HASH_THREADS=") + bad + " is not a number from 1 to 64"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace bod
