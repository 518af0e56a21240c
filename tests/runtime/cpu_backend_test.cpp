// The CPU device's copy on write (BackendOptions::share): what a kernel and the host see is
// exactly what a device that copies on every write and sync shows — stale device bytes after
// a skipped sync, a kernel's writes invisible in the mapping until synced back — while a BO
// written whole from a stable host array holds no memory of its own until something writes it.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "core/pages.h"
#include "runtime/backend.h"

namespace bod {
namespace {

std::vector<uint8_t> bytes_of(const uint8_t* p, size_t n) {
  return std::vector<uint8_t>(p, p + n);
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

BoDesc desc(size_t n) {
  return BoDesc{n, 0, "k", "test"};
}

// A dispatch of one i8 slot of n bytes whose body adds 1 to every byte (reads, then writes).
Dispatch bump(BoHandle bo, size_t n, SlotUse use) {
  Dispatch d;
  d.kernel = "k";
  d.bos = {bo};
  d.slot_dtypes = {DType::i8};
  d.slot_shapes = {{static_cast<int64_t>(n)}};
  d.slot_use = {use};
  d.body = [n, use](const std::vector<TensorRef>& t) {
    for (size_t i = 0; i < n; ++i)
      t[0].data[i] = use == SlotUse::overwrite ? uint8_t(7) : uint8_t(t[0].data[i] + 1);
  };
  return d;
}

class CpuDevice : public ::testing::TestWithParam<bool> {  // param: share
 protected:
  std::unique_ptr<Backend> b = make_cpu_backend(GetParam());
};

TEST_P(CpuDevice, AFreshBoIsZeroOnBothSides) {
  BoHandle h = b->alloc(desc(3 << 20));
  EXPECT_EQ(bytes_of(b->device_bytes(h), 3 << 20), std::vector<uint8_t>(3 << 20, 0));
  EXPECT_EQ(bytes_of(b->host_bytes(h), 3 << 20), std::vector<uint8_t>(3 << 20, 0));
}

TEST_P(CpuDevice, AStableWholeWriteIsNotSeenByTheDeviceUntilSynced) {
  auto src = pattern(4096, 1);
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), src.size(), true);
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), src);
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), std::vector<uint8_t>(4096, 0));  // stale
  b->sync_to_device(h, 4096);
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), src);
  // Shared where allowed, copied otherwise.
  EXPECT_EQ(b->host_bytes(h) == src.data(), GetParam());
  EXPECT_EQ(b->device_bytes(h) == src.data(), GetParam());
}

TEST_P(CpuDevice, AKernelWriteNeverReachesTheSharedArrayNorTheMapping) {
  auto src = pattern(4096, 1), keep = src;
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), src.size(), true);
  b->sync_to_device(h, 4096);
  b->dispatch(bump(h, 4096, SlotUse::write));
  EXPECT_EQ(src, keep);                               // the model tensor is untouched
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), keep);  // the mapping too, until synced back
  auto plus1 = keep;
  for (auto& x : plus1) ++x;
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), plus1);
  b->sync_from_device(h);
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), plus1);
  EXPECT_EQ(src, keep);
}

TEST_P(CpuDevice, AReadOnlySlotStaysShared) {
  auto src = pattern(4096, 3);
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), src.size(), true);
  b->sync_to_device(h, 4096);
  Dispatch d = bump(h, 4096, SlotUse::read);
  std::vector<uint8_t> seen;
  d.body = [&](const std::vector<TensorRef>& t) { seen = bytes_of(t[0].data, 4096); };
  b->dispatch(d);
  EXPECT_EQ(seen, src);
  EXPECT_EQ(b->device_bytes(h) == src.data(), GetParam());
}

TEST_P(CpuDevice, APartialWriteKeepsTheRestAndSyncsOnlyThePrefix) {
  auto src = pattern(4096, 1), part = pattern(100, 200), keep = src;
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), 4096, true);
  b->sync_to_device(h, 4096);
  b->write(h, part.data(), 100, false);  // copy on write: the shared tensor is not touched
  EXPECT_EQ(src, keep);
  auto expect = keep;
  std::copy(part.begin(), part.end(), expect.begin());
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), expect);
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), keep);  // not synced yet
  b->sync_to_device(h, 50);                             // a prefix only
  auto dev = keep;
  std::copy(part.begin(), part.begin() + 50, dev.begin());
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), dev);
  EXPECT_EQ(src, keep);
}

TEST_P(CpuDevice, MapGivesAPrivateWritableCopy) {
  auto src = pattern(4096, 9), keep = src;
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), 4096, true);
  b->sync_to_device(h, 4096);
  std::memset(b->map(h), 0xAB, 4096);
  EXPECT_EQ(src, keep);
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), keep);
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), std::vector<uint8_t>(4096, 0xAB));
}

TEST_P(CpuDevice, AnOverwrittenSlotGetsTheBodysBytesAndTheMappingKeepsItsOwn) {
  auto src = pattern(4096, 5), keep = src;
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), 4096, true);
  b->sync_to_device(h, 4096);
  b->dispatch(bump(h, 4096, SlotUse::overwrite));
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), std::vector<uint8_t>(4096, 7));
  EXPECT_EQ(bytes_of(b->host_bytes(h), 4096), keep);
  EXPECT_EQ(src, keep);
}

TEST_P(CpuDevice, AViewSmallerThanTheBoKeepsTheBytesBeyondIt) {
  auto src = pattern(4096, 5);
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), 4096, true);
  b->sync_to_device(h, 4096);
  b->dispatch(bump(h, 1024, SlotUse::overwrite));  // the body's view is 1 KiB of 4 KiB
  auto expect = src;
  std::fill(expect.begin(), expect.begin() + 1024, 7);
  EXPECT_EQ(bytes_of(b->device_bytes(h), 4096), expect);
}

TEST_P(CpuDevice, OneBoInTwoSlotsKeepsItsBytes) {
  auto src = pattern(4096, 5);
  BoHandle h = b->alloc(desc(4096));
  b->write(h, src.data(), 4096, true);
  b->sync_to_device(h, 4096);
  Dispatch d = bump(h, 4096, SlotUse::overwrite);
  d.bos = {h, h};
  d.slot_dtypes = {DType::i8, DType::i8};
  d.slot_shapes = {{4096}, {4096}};
  d.slot_use = {SlotUse::read, SlotUse::overwrite};
  std::vector<uint8_t> seen;
  d.body = [&](const std::vector<TensorRef>& t) {
    seen = bytes_of(t[0].data, 4096);  // read through slot 0 before slot 1 is written
    std::memset(t[1].data, 7, 4096);
  };
  b->dispatch(d);
  EXPECT_EQ(seen, src);
}

TEST_P(CpuDevice, AReleasedBoLeavesNothingBehindForTheNextOne) {
  auto src = pattern(2 << 20, 1);
  BoHandle h = b->alloc(BoDesc{2 << 20, 0, "k", "no-reuse", true});
  b->write(h, src.data(), src.size(), false);
  b->sync_to_device(h, src.size());
  b->release(h);
  BoHandle z = b->alloc(desc(2 << 20));  // zero-filled, even if a spare of that size exists
  EXPECT_EQ(bytes_of(b->device_bytes(z), 2 << 20), std::vector<uint8_t>(2 << 20, 0));
  EXPECT_EQ(bytes_of(b->host_bytes(z), 2 << 20), std::vector<uint8_t>(2 << 20, 0));
}

// The point of it: a BO written whole from a 64 MiB model tensor and synced costs no memory
// (a copying device: two more copies).
TEST_P(CpuDevice, AWeightBoCostsNoMemoryWhenShared) {
  const size_t n = size_t(64) << 20;
  Pages w = alloc_pages(n, false);
  std::memset(w.get(), 1, n);  // the model tensor, resident
  size_t before = current_rss();
  ASSERT_GT(before, 0u);
  BoHandle h = b->alloc(desc(n));
  b->write(h, w.get(), n, true);
  b->sync_to_device(h, n);
  Dispatch d = bump(h, n, SlotUse::read);
  uint64_t sum = 0;
  d.body = [&](const std::vector<TensorRef>& t) {  // reads every byte, writes none
    for (size_t i = 0; i < n; i += 4096) sum += t[0].data[i];
  };
  b->dispatch(d);
  EXPECT_EQ(sum, n / 4096);
  size_t grew = current_rss() - std::min(current_rss(), before);
  if (GetParam())
    EXPECT_LT(grew, size_t(16) << 20);
  else
    EXPECT_GT(grew, n + n / 2);
  b->release(h);
}

INSTANTIATE_TEST_SUITE_P(Share, CpuDevice, ::testing::Bool(),
                         [](const auto& i) { return i.param ? "shared" : "copying"; });

TEST(Pages, LargeBuffersAreZeroAndHugePageAligned) {
  Pages p = alloc_pages(size_t(5) << 20, true);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % (size_t(2) << 20), 0u);
  EXPECT_EQ(bytes_of(p.get(), size_t(5) << 20), std::vector<uint8_t>(size_t(5) << 20, 0));
  Pages s = alloc_pages(100, true);
  EXPECT_EQ(bytes_of(s.get(), 100), std::vector<uint8_t>(100, 0));
  Pages e = alloc_pages(0, false);
  EXPECT_NE(e.get(), nullptr);
}

TEST(Pages, PeakRssFollowsTouchedMemoryAndResets) {
  if (!reset_peak_rss()) GTEST_SKIP() << "no /proc/self/clear_refs";
  size_t base = peak_rss();
  {
    Pages p = alloc_pages(size_t(64) << 20, false);
    EXPECT_LT(peak_rss(), base + (size_t(8) << 20));  // untouched: nothing resident
    std::memset(p.get(), 1, size_t(64) << 20);
    EXPECT_GT(peak_rss(), base + (size_t(60) << 20));
  }
  EXPECT_TRUE(reset_peak_rss());
  // Under AddressSanitizer its shadow of the 64 MiB (one byte per eight) may stay resident
  // after the pages are gone: the sanitizer's memory, not the program's.
  size_t shadow = 0;
#if defined(__SANITIZE_ADDRESS__)
  shadow = size_t(64) << 20 >> 3;
#endif
  EXPECT_LT(peak_rss(), base + (size_t(8) << 20) + shadow);
}

}  // namespace
}  // namespace bod
