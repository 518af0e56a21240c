// XRT backend on XRT's noop device (no NPU needed): BO alloc/map/sync, host-emulated and xclbin
// dispatch, and the one-line FatalErrors for a broken setup.
//
// XRT reads XILINX_XRT / XCL_EMULATION_MODE once and caches what it saw, so every test that
// touches XRT in this process uses the same setting (the noop device, BOD_XRT_NOOP_DIR); each
// sets it in SetUp and restores the caller's environment in TearDown. Cases that need another
// setting either fail before the backend touches XRT (the environment checks) or run in a
// fresh child process (death-test style "threadsafe" re-executes the test binary).
#include "runtime/xrt/xrt_backend.h"

#include <ert.h>  // ERT_CMD_STATE_*
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/result.h"
#include "runtime/backend.h"
#include "xclbin_writer.h"

#ifndef BOD_XRT_NOOP_DIR
#error "BOD_XRT_NOOP_DIR must name the noop XRT folder (its lib/ links libxrt*/libxdp*)"
#endif

namespace bod {
namespace {

namespace fs = std::filesystem;
using testutil::kNoopSlotGroup;

// Sets or unsets one environment variable and puts the old value back on destruction.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// The FatalError a statement throws (fails the test when it throws nothing).
template <typename F>
Error fatal_of(F&& f) {
  try {
    f();
  } catch (const FatalError& e) {
    return e.error;
  }
  ADD_FAILURE() << "expected a FatalError";
  return Error{};
}

bool one_line(const std::string& s) {
  return s.find('\n') == std::string::npos;
}

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

uint64_t hash_of(const void* p, size_t n) {
  return hash_bytes(p, n);
}

// A body that writes 2 * slot 0 into slot 1 (f32).
void double_body(const std::vector<TensorRef>& s) {
  for (int64_t i = 0; i < s[0].numel(); ++i) s[1].set(i, 2.0f * s[0].get(i));
}

class XrtNoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path lib = fs::path(BOD_XRT_NOOP_DIR) / "lib";
    ASSERT_TRUE(fs::exists(lib / "libxrt_noop.so.2") || fs::exists(lib / "libxrt_noop.so"))
        << BOD_XRT_NOOP_DIR << "/lib does not link libxrt_noop.so; reconfigure with cmake "
        << "or run tool/xrt-noop-env.sh BUILD_DIR";
    xrt_env_.emplace("XILINX_XRT", BOD_XRT_NOOP_DIR);
    mode_env_.emplace("XCL_EMULATION_MODE", "noop");
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("bod_xrt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    backend_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
    mode_env_.reset();
    xrt_env_.reset();
  }

  Backend& backend() {
    if (!backend_) backend_ = make_xrt_backend(BackendOptions{"xrt", 0, 2000});
    return *backend_;
  }

  BoHandle alloc(const std::string& kernel, int slot, size_t bytes) {
    return backend().alloc(BoDesc{bytes, slot, kernel, kernel + "/slot " + std::to_string(slot)});
  }

  void write_host(BoHandle bo, const void* data, size_t n) {
    std::memcpy(backend().map(bo), data, n);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_instructions_bin(const std::string& name, const std::vector<uint32_t>& w) {
    std::ofstream f(path(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.data()),
            static_cast<std::streamsize>(w.size() * sizeof(uint32_t)));
    return path(name);
  }

  std::string write_text(const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  // An xclbin with kernel `name` (n buffer slots) and its instructions, as a model declares it.
  NpuBinary xclbin_binary(const std::string& name, int n_slots) {
    NpuBinary bin;
    bin.mode = NpuBinary::Mode::xclbin;
    bin.path = path(name + ".xclbin");
    bin.kernel_name = name;
    bin.instructions = write_instructions_bin(name + ".insts.bin", {0x06030100u, 0, 0, 1});
    EXPECT_TRUE(testutil::write_noop_xclbin(bin.path, name, n_slots));
    return bin;
  }

  Dispatch doubling(const std::string& kernel, const NpuBinary* bin, BoHandle in, BoHandle out,
                    int64_t n) {
    Dispatch d;
    d.kernel = kernel;
    d.binary = bin;
    d.bos = {in, out};
    d.slot_dtypes = {DType::f32, DType::f32};
    d.slot_shapes = {{n}, {n}};
    d.body = double_body;
    return d;
  }

  std::unique_ptr<Backend> backend_;
  std::optional<ScopedEnv> xrt_env_, mode_env_;
  fs::path dir_;
};

// ---- BOs ---------------------------------------------------------------------------------

TEST_F(XrtNoopTest, AllocatesZeroFilledBosOnTheNoopDevice) {
  EXPECT_EQ(backend().name(), "xrt");
  EXPECT_TRUE(xrt_is_noop(backend()));
  const BoHandle bo = alloc("k", 0, 4096);
  EXPECT_EQ(backend().size(bo), 4096u);
  const std::vector<uint8_t> zeros(4096, 0);
  EXPECT_EQ(hash_of(backend().device_bytes(bo), 4096), hash_of(zeros.data(), 4096));
  EXPECT_EQ(xrt_bo_group(backend(), bo), 0);  // no binary prepared for "k": default group
}

TEST_F(XrtNoopTest, WriteSyncAndReadBackRoundTrip) {
  const auto data = iota_floats(1024, 1.5f);
  const size_t n = data.size() * sizeof(float);
  const BoHandle bo = alloc("k", 0, n);
  uint8_t* map = backend().map(bo);
  write_host(bo, data.data(), n);
  backend().sync_to_device(bo, n);
  EXPECT_EQ(hash_of(backend().device_bytes(bo), n), hash_of(data.data(), n));
  backend().sync_from_device(bo);
  EXPECT_EQ(backend().map(bo), map) << "the mapping must stay put (zero-copy views use it)";
  EXPECT_EQ(hash_of(map, n), hash_of(data.data(), n));
  EXPECT_EQ(backend().device_bytes(bo), map);  // XRT: device bytes are read through the map
}

TEST_F(XrtNoopTest, PrefixAndOversizedSyncsAreClamped) {
  const BoHandle bo = alloc("k", 0, 64);
  std::vector<uint8_t> bytes(64, 0xab);
  write_host(bo, bytes.data(), bytes.size());
  EXPECT_NO_THROW(backend().sync_to_device(bo, 16));
  EXPECT_NO_THROW(backend().sync_to_device(bo, 1 << 20));
  EXPECT_NO_THROW(backend().sync_to_device(bo, 0));
  const BoHandle empty = alloc("k", 1, 0);
  EXPECT_EQ(backend().size(empty), 0u);
  EXPECT_NO_THROW(backend().sync_to_device(empty, 8));
  EXPECT_NO_THROW(backend().device_bytes(empty));
}

// What holds on every device: a call that skips the host write leaves the previous call's
// bytes on the device (the reuse engine's B1/B2 skips), whatever the host array holds now.
TEST_F(XrtNoopTest, SkippedWriteLeavesDeviceBytesStale) {
  const auto first = iota_floats(256, 0.0f);
  const auto second = iota_floats(256, 1000.0f);
  const size_t n = first.size() * sizeof(float);
  const BoHandle bo = alloc("k", 0, n);
  write_host(bo, first.data(), n);
  backend().sync_to_device(bo, n);
  // Second call: the slot is "static", so neither written nor synced.
  EXPECT_EQ(hash_of(backend().device_bytes(bo), n), hash_of(first.data(), n));
  EXPECT_NE(hash_of(backend().device_bytes(bo), n), hash_of(second.data(), n));
}

// What does NOT hold on the noop device: its BO mapping is the device memory and sync() is a
// no-op, so a host write whose sync was skipped still reaches the "device". (On an NPU the
// mapping and the device copy are apart and device_bytes would show the old bytes.) bo-doctor
// therefore catches skipped writes on noop, but not a write whose sync alone was skipped.
TEST_F(XrtNoopTest, NoopSharesMapAndDeviceMemory) {
  ASSERT_TRUE(xrt_is_noop(backend()));
  const auto synced = iota_floats(64, 1.0f);
  const auto unsynced = iota_floats(64, 500.0f);
  const size_t n = synced.size() * sizeof(float);
  const BoHandle bo = alloc("k", 0, n);
  write_host(bo, synced.data(), n);
  backend().sync_to_device(bo, n);
  write_host(bo, unsynced.data(), n);  // no sync_to_device
  EXPECT_EQ(hash_of(backend().device_bytes(bo), n), hash_of(unsynced.data(), n));
}

TEST_F(XrtNoopTest, ReleasedBoCannotBeUsedAndItsHandleIsReused) {
  const BoHandle bo = alloc("k", 0, 32);
  backend().release(bo);
  EXPECT_EQ(backend().size(bo), 0u);
  EXPECT_THROW(backend().map(bo), std::logic_error);
  EXPECT_NO_THROW(backend().release(bo));
  const BoHandle again = alloc("k", 0, 48);
  EXPECT_EQ(again, bo);
  EXPECT_EQ(backend().size(again), 48u);
  const std::vector<uint8_t> zeros(48, 0);
  EXPECT_EQ(hash_of(backend().device_bytes(again), 48), hash_of(zeros.data(), 48));
}

// Shadow-engine BOs are written in full before use, so they skip the zero-fill.
TEST_F(XrtNoopTest, OverwrittenBosSkipTheZeroFill) {
  BoDesc desc{256, 0, "k", "shadow", true};
  const BoHandle bo = backend().alloc(desc);
  EXPECT_EQ(backend().size(bo), 256u);
  const auto data = iota_floats(64, 9.0f);
  write_host(bo, data.data(), 256);
  backend().sync_to_device(bo, 256);
  EXPECT_EQ(hash_of(backend().device_bytes(bo), 256), hash_of(data.data(), 256));
}

// ---- dispatch ------------------------------------------------------------------------------

TEST_F(XrtNoopTest, HostEmulatedDispatchRunsTheBodyOnDeviceBytes) {
  const auto in = iota_floats(128, -3.0f);
  const size_t n = in.size() * sizeof(float);
  const BoHandle a = alloc("dbl", 0, n), b = alloc("dbl", 1, n);
  write_host(a, in.data(), n);
  backend().sync_to_device(a, n);
  const DispatchInfo info = backend().dispatch(doubling("dbl", nullptr, a, b, 128));
  EXPECT_TRUE(info.host_emulated);
  EXPECT_FALSE(info.npu_launched);
  const auto* out = reinterpret_cast<const float*>(backend().device_bytes(b));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;

  NpuBinary none;  // mode none behaves like no binary
  const DispatchInfo info2 = backend().dispatch(doubling("dbl", &none, a, b, 128));
  EXPECT_TRUE(info2.host_emulated);
  EXPECT_FALSE(info2.npu_launched);
}

TEST_F(XrtNoopTest, XclbinKernelIsLoadedAndLaunchedWithOpcode3) {
  const NpuBinary bin = xclbin_binary("scale", 2);
  xrt_prepare_kernel(backend(), "scale_L0", bin);
  const auto in = iota_floats(64, 0.25f);
  const size_t n = in.size() * sizeof(float);
  const BoHandle a = alloc("scale_L0", 0, n), b = alloc("scale_L0", 1, n);
  EXPECT_EQ(xrt_bo_group(backend(), a), kNoopSlotGroup);  // kernel.group_id(slot + 3)
  EXPECT_EQ(xrt_bo_group(backend(), b), kNoopSlotGroup);
  EXPECT_EQ(xrt_bo_group(backend(), alloc("other", 0, 16)), 0);
  write_host(a, in.data(), n);
  backend().sync_to_device(a, n);

  const DispatchInfo info = backend().dispatch(doubling("scale_L0", &bin, a, b, 64));
  EXPECT_TRUE(info.npu_launched);  // run started and waited for: ERT_CMD_STATE_COMPLETED
  EXPECT_TRUE(info.host_emulated) << "the noop device computes nothing; the body supplies it";
  const auto* out = reinterpret_cast<const float*>(backend().device_bytes(b));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], 2.0f * in[i]) << i;

  // Preparing again, and a second kernel name on the same binary, reuse what was loaded.
  EXPECT_NO_THROW(xrt_prepare_kernel(backend(), "scale_L0", bin));
  EXPECT_NO_THROW(xrt_prepare_kernel(backend(), "scale_L1", bin));
  const BoHandle c = alloc("scale_L1", 0, n), d = alloc("scale_L1", 1, n);
  EXPECT_TRUE(backend().dispatch(doubling("scale_L1", &bin, c, d, 64)).npu_launched);
}

TEST_F(XrtNoopTest, HexTextInstructionsAreAccepted) {
  NpuBinary bin = xclbin_binary("hexk", 2);
  bin.instructions = write_text("insts.txt", "06030100\n0x00000000\n00000001\n");
  xrt_prepare_kernel(backend(), "hexk", bin);
  const BoHandle a = alloc("hexk", 0, 16), b = alloc("hexk", 1, 16);
  EXPECT_TRUE(backend().dispatch(doubling("hexk", &bin, a, b, 4)).npu_launched);
}

TEST_F(XrtNoopTest, DispatchLoadsAnUnpreparedKernelButRejectsBosInAnotherGroup) {
  const NpuBinary bin = xclbin_binary("late", 2);
  const BoHandle a = alloc("late", 0, 16), b = alloc("late", 1, 16);  // before any prepare
  const Error e = fatal_of([&] { backend().dispatch(doubling("late", &bin, a, b, 4)); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("memory group 0"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("xrt_prepare_kernel"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
  // The kernel is loaded now, so BOs allocated from here on land in its group.
  const BoHandle c = alloc("late", 0, 16), d = alloc("late", 1, 16);
  EXPECT_TRUE(backend().dispatch(doubling("late", &bin, c, d, 4)).npu_launched);
}

TEST_F(XrtNoopTest, SlotsMustMatchTheXclbinKernelArguments) {
  const NpuBinary bin = xclbin_binary("two", 2);
  xrt_prepare_kernel(backend(), "two", bin);
  const Error too_far = fatal_of([&] { alloc("two", 2, 16); });
  EXPECT_NE(too_far.what.find("slot 2"), std::string::npos) << too_far.line();
  EXPECT_NE(too_far.what.find("2 buffer argument"), std::string::npos) << too_far.line();

  const BoHandle a = alloc("two", 0, 16);
  Dispatch d = doubling("two", &bin, a, a, 4);
  d.bos.pop_back();
  d.slot_dtypes.pop_back();
  d.slot_shapes.pop_back();
  d.body = nullptr;
  const Error few = fatal_of([&] { backend().dispatch(d); });
  EXPECT_NE(few.what.find("binds 1 slots"), std::string::npos) << few.line();
}

TEST_F(XrtNoopTest, SlotViewLargerThanItsBoIsRejected) {
  const BoHandle a = alloc("k", 0, 16), b = alloc("k", 1, 16);
  const Error e = fatal_of([&] { backend().dispatch(doubling("k", nullptr, a, b, 8)); });
  EXPECT_NE(e.what.find("32 bytes"), std::string::npos) << e.line();
}

TEST_F(XrtNoopTest, PrepareIsANoOpOnOtherBackendsAndForModeNone) {
  auto cpu = make_cpu_backend();
  const NpuBinary bin = xclbin_binary("cpuk", 1);
  EXPECT_NO_THROW(xrt_prepare_kernel(*cpu, "cpuk", bin));
  EXPECT_EQ(xrt_bo_group(*cpu, cpu->alloc(BoDesc{16, 0, "cpuk", ""})), -1);
  EXPECT_FALSE(xrt_is_noop(*cpu));
  EXPECT_NO_THROW(xrt_prepare_kernel(backend(), "cpuk", NpuBinary{}));
}

// ---- failures: one line, Exit::backend, what is missing and how to fix it ------------------

TEST_F(XrtNoopTest, MissingXclbinFile) {
  NpuBinary bin = xclbin_binary("gone", 1);
  bin.path = path("nowhere/gone.xclbin");
  const Error e = fatal_of([&] { xrt_prepare_kernel(backend(), "gone", bin); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find(bin.path), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("no such file"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
}

TEST_F(XrtNoopTest, UnparsableXclbin) {
  NpuBinary bin = xclbin_binary("junk", 1);
  bin.path = write_text("junk.xclbin", "this is not an xclbin");
  const Error e = fatal_of([&] { xrt_prepare_kernel(backend(), "junk", bin); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("is not a valid xclbin"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
}

TEST_F(XrtNoopTest, KernelNotInXclbinListsTheKernelsItHas) {
  NpuBinary bin = xclbin_binary("unused", 1);
  ASSERT_TRUE(testutil::write_noop_xclbin(bin.path, {{"alpha", 2}, {"beta", 3}}));
  bin.kernel_name = "gamma";
  const Error e = fatal_of([&] { xrt_prepare_kernel(backend(), "g", bin); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("no kernel 'gamma'"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("alpha, beta"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
}

TEST_F(XrtNoopTest, MissingOrBrokenInstructionFile) {
  NpuBinary bin = xclbin_binary("noinstr", 1);
  bin.instructions = path("insts_missing.bin");
  Error e = fatal_of([&] { xrt_prepare_kernel(backend(), "noinstr", bin); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("instruction file"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find(bin.instructions), std::string::npos) << e.line();

  bin.instructions = write_text("odd.bin", std::string("\x01\x02\x03\x04\x05", 5));
  e = fatal_of([&] { xrt_prepare_kernel(backend(), "noinstr", bin); });
  EXPECT_NE(e.what.find("whole number of uint32 words"), std::string::npos) << e.line();

  bin.instructions = write_text("empty.txt", "");
  e = fatal_of([&] { xrt_prepare_kernel(backend(), "noinstr", bin); });
  EXPECT_NE(e.what.find("empty"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
}

TEST_F(XrtNoopTest, ElfKernelNeedsElfSupport) {
  NpuBinary bin;
  bin.mode = NpuBinary::Mode::elf;
  bin.path = write_text("k.elf", "not really an elf");
  bin.kernel_name = "k";
  const Error e = fatal_of([&] { xrt_prepare_kernel(backend(), "k", bin); });
  EXPECT_EQ(e.code, Exit::backend);
#ifndef BOD_HAVE_XRT_ELF
  EXPECT_NE(e.what.find("no ELF support"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("2.17"), std::string::npos) << e.line();
#endif
}

TEST_F(XrtNoopTest, RunFailureMessagesNameTheTimeout) {
  EXPECT_EQ(xrt_run_failure(ERT_CMD_STATE_COMPLETED, 100), "");
  const std::string t = xrt_run_failure(ERT_CMD_STATE_TIMEOUT, 250);
  EXPECT_NE(t.find("250 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("TIMEOUT"), std::string::npos) << t;
  EXPECT_NE(xrt_run_failure(ERT_CMD_STATE_RUNNING, 7).find("7 ms"), std::string::npos);
  EXPECT_NE(xrt_run_failure(ERT_CMD_STATE_ERROR, 7).find("ERROR"), std::string::npos);
  EXPECT_TRUE(one_line(t));
}

TEST_F(XrtNoopTest, XilinxXrtUnsetIsCaughtBeforeXrtIsTouched) {
  ScopedEnv unset("XILINX_XRT", nullptr);
  const Error e = fatal_of([] { make_xrt_backend(BackendOptions{"xrt", 0, 1000}); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("XILINX_XRT"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("XCL_EMULATION_MODE=noop"), std::string::npos) << e.line();
  EXPECT_TRUE(one_line(e.line()));
  // make_backend routes --backend xrt here too.
  const Error e2 = fatal_of([] { make_backend(BackendOptions{"xrt", 0, 1000}); });
  EXPECT_NE(e2.what.find("XILINX_XRT"), std::string::npos) << e2.line();
}

TEST_F(XrtNoopTest, XilinxXrtWithoutLibOrNoopShim) {
  {
    ScopedEnv bad("XILINX_XRT", dir_.c_str());  // exists, but has no lib/
    const Error e = fatal_of([] { make_xrt_backend(BackendOptions{}); });
    EXPECT_EQ(e.code, Exit::backend);
    EXPECT_NE(e.what.find("no lib/"), std::string::npos) << e.line();
  }
  fs::create_directories(dir_ / "lib");
  ScopedEnv empty_lib("XILINX_XRT", dir_.c_str());
  const Error e = fatal_of([] { make_xrt_backend(BackendOptions{}); });
  EXPECT_NE(e.what.find("libxrt_noop.so"), std::string::npos) << e.line();
  EXPECT_NE(e.what.find("xrt-noop-env.sh"), std::string::npos) << e.line();
}

TEST_F(XrtNoopTest, OtherEmulationModesAreRefused) {
  ScopedEnv sw("XCL_EMULATION_MODE", "sw_emu");
  const Error e = fatal_of([] { make_xrt_backend(BackendOptions{}); });
  EXPECT_EQ(e.code, Exit::backend);
  EXPECT_NE(e.what.find("XCL_EMULATION_MODE=sw_emu"), std::string::npos) << e.line();
}

TEST_F(XrtNoopTest, NegativeDeviceIndexIsBadInput) {
  const Error e = fatal_of([] { make_xrt_backend(BackendOptions{"xrt", -1, 1000}); });
  EXPECT_EQ(e.code, Exit::bad_input);
}

// The noop device opens any index, so a missing device is shown without emulation, in a fresh
// child process: XRT then looks for real devices and finds none at index 7.
TEST(XrtDeviceTest, NoDeviceAtIndexIsAFatalError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("XILINX_XRT", BOD_XRT_NOOP_DIR, 1);
        ::unsetenv("XCL_EMULATION_MODE");
        try {
          make_xrt_backend(BackendOptions{"xrt", 7, 1000});
        } catch (const FatalError& e) {
          std::fprintf(stderr, "%s|%d\n", e.error.line().c_str(), static_cast<int>(e.error.code));
          std::_Exit(3);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(3), "xrt device 7: cannot open it .*--device.*\\|3");
}

}  // namespace
}  // namespace bod
