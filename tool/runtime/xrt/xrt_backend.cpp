// XRT backend: every BO is a real xrt::bo on xrt::device(opt.device); map() is the BO's
// mapping and only sync() moves bytes between it and the device.
//
// Kernels without an NPU binary run host-emulated: sync every BO from the device, run the
// reference body on the mappings, sync every BO back. Kernels with an xclbin are launched as
// kernel(opcode 3, instr_bo, instr_count, bos...) (docs/xrt.md); on the noop device the launch
// completes without computing anything, so the reference body runs afterwards as well.
// ELF kernels (xrt::ext::bo, run.set_arg(i, bo)) need XRT >= 2.17 (BOD_HAVE_XRT_ELF).
//
// Every failure is a FatalError with Exit::backend and one line saying what is missing and how
// to fix it; XRT exceptions are caught and rethrown with context. Environment problems are
// detected before XRT is touched (XRT throws or misbehaves on them, and caches what it saw).
#include "runtime/xrt/xrt_backend.h"

#include <unistd.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#ifdef BOD_HAVE_XRT_ELF
#include <xrt/experimental/xrt_elf.h>
#include <xrt/experimental/xrt_ext.h>
#include <xrt/xrt_hw_context.h>
#endif

#include "core/result.h"

namespace bod {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kOpcode = 3;  // xclbin ABI: kernel(opcode 3, instr_bo, instr_count, bos...)
constexpr int kFirstSlotArg = 3;
constexpr int kInstrArg = 1;
constexpr const char* kNoopHint =
    "without an NPU use XRT's noop device: tool/xrt-noop-env.sh BUILD_DIR -- <command> "
    "(sets XILINX_XRT=BUILD_DIR/xrt-noop and XCL_EMULATION_MODE=noop)";

std::string getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// XRT messages may span lines; errors are one line.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r') ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

[[noreturn]] void fail(std::string where, std::string what, Exit code = Exit::backend) {
  throw FatalError{Error{std::move(where), std::move(what), code}};
}

// Runs an XRT call; its exceptions become a FatalError "where: doing: <XRT's message>".
template <typename F>
auto xrt_call(const std::string& where, const std::string& doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const FatalError&) {
    throw;
  } catch (const std::exception& e) {
    fail(where, doing + ": " + one_line(e.what()));
  } catch (...) {
    fail(where, doing + ": unknown XRT error");
  }
}

std::string kernel_where(const std::string& kernel) {
  return "kernel '" + kernel + "'";
}

// Empty when `path` is a readable regular file, else why it is not.
std::string unreadable(const std::string& path) {
  if (path.empty()) return "no file given";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return "no such file";
  if (fs::is_directory(st)) return "is a directory, not a file";
  if (::access(path.c_str(), R_OK) != 0)
    return std::string("not readable (") + std::strerror(errno) + ")";
  return "";
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool looks_like_hex_text(const std::vector<char>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) || c == 'x' || c == 'X' || c == ' ' ||
           c == '\t' || c == '\r' || c == '\n';
  });
}

// An instruction stream: raw little-endian uint32 words (insts.bin), or one hex word per line
// (insts.txt, optional 0x prefix) as mlir-aie writes them.
std::vector<uint32_t> read_instructions(const std::string& kernel, const std::string& path) {
  const std::string where = kernel_where(kernel);
  const std::string why = unreadable(path);
  if (!why.empty())
    fail(where, "instruction file '" + path + "': " + why +
                    "; an xclbin kernel needs the instruction stream (uint32 words, .bin or hex "
                    ".txt) built with its xclbin: set the kernel's binary instructions path");
  const std::vector<char> bytes = read_bytes(path);
  std::vector<uint32_t> words;
  if (!bytes.empty() && looks_like_hex_text(bytes)) {
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    std::string tok;
    while (in >> tok) {
      try {
        size_t used = 0;
        const unsigned long v = std::stoul(tok, &used, 16);
        if (used != tok.size() || v > 0xffffffffUL) throw std::out_of_range(tok);
        words.push_back(static_cast<uint32_t>(v));
      } catch (const std::exception&) {
        fail(where, "instruction file '" + path + "': '" + tok +
                        "' is not a 32-bit hex word; expected one hex word per line or raw "
                        "uint32 words");
      }
    }
  } else {
    if (bytes.size() % 4 != 0)
      fail(where, "instruction file '" + path + "' holds " + std::to_string(bytes.size()) +
                      " bytes, not a whole number of uint32 words; regenerate it with the xclbin");
    words.resize(bytes.size() / 4);
    if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  }
  if (words.empty())
    fail(where, "instruction file '" + path + "' is empty; regenerate it with the xclbin");
  return words;
}

std::string state_name(int state) {
  switch (state) {
    case ERT_CMD_STATE_NEW:
      return "NEW";
    case ERT_CMD_STATE_QUEUED:
      return "QUEUED";
    case ERT_CMD_STATE_RUNNING:
      return "RUNNING";
    case ERT_CMD_STATE_COMPLETED:
      return "COMPLETED";
    case ERT_CMD_STATE_ERROR:
      return "ERROR";
    case ERT_CMD_STATE_ABORT:
      return "ABORT";
    case ERT_CMD_STATE_SUBMITTED:
      return "SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT:
      return "TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE:
      return "NORESPONSE";
    default:
      return "state " + std::to_string(state);
  }
}

class XrtBackend final : public Backend {
 public:
  XrtBackend(const BackendOptions& opt, bool noop)
      : device_index_(opt.device), timeout_ms_(std::max(1, opt.timeout_ms)), noop_(noop) {
    const std::string where = "xrt device " + std::to_string(device_index_);
    try {
      device_ = xrt::device(static_cast<unsigned int>(device_index_));
    } catch (const std::exception& e) {
      fail(where, "cannot open it (" + one_line(e.what()) +
                      ", XILINX_XRT=" + getenv_str("XILINX_XRT") +
                      "); check the NPU driver is loaded and `xrt-smi examine` lists the device, "
                      "pick another --device, or " +
                      kNoopHint);
    } catch (...) {
      fail(where, std::string("cannot open it (unknown XRT error); ") + kNoopHint);
    }
  }

  std::string name() const override { return "xrt"; }

  BoHandle alloc(const BoDesc& desc) override {
    const std::string where = kernel_where(desc.kernel) + " slot " + std::to_string(desc.slot) +
                              (desc.label.empty() ? "" : " (" + desc.label + ")");
    const size_t bytes = std::max<size_t>(desc.bytes, 1);  // XRT wants a non-empty BO
    Bo b;
    b.bytes = desc.bytes;
    b.label = where;
    const auto k = kernels_.find(desc.kernel);
    const NpuKernel* npu = k == kernels_.end() ? nullptr : k->second.get();
    if (npu && npu->mode == NpuBinary::Mode::elf) {
#ifdef BOD_HAVE_XRT_ELF
      b.bo = xrt_call(where, "allocating a " + std::to_string(bytes) + "-byte xrt::ext::bo",
                      [&] { return xrt::bo(xrt::ext::bo(device_, bytes)); });
#endif
    } else {
      int group = 0;
      if (npu) {
        if (desc.slot < 0 || (npu->num_args >= 0 && kFirstSlotArg + desc.slot >= npu->num_args))
          fail(where, "slot " + std::to_string(desc.slot) + " is not a buffer argument of " +
                          npu->describe() + ", which takes " + npu->buffer_args() +
                          "; make the kernel's slots match its xclbin");
        group = xrt_call(where,
                         "looking up the memory group of argument " +
                             std::to_string(kFirstSlotArg + desc.slot) + " of " + npu->describe(),
                         [&] { return npu->kernel.group_id(kFirstSlotArg + desc.slot); });
      }
      b.bo = xrt_call(where,
                      "allocating a " + std::to_string(bytes) + "-byte BO in memory group " +
                          std::to_string(group),
                      [&] { return xrt::bo(device_, bytes, xrt::bo::flags::host_only, group); });
      b.group = group;
    }
    b.map = xrt_call(where, "mapping the BO", [&] { return b.bo.map<uint8_t*>(); });
    if (!b.map) fail(where, "XRT returned no host mapping for the BO");
    if (!desc.overwritten) {  // XRT does not promise zeroed memory
      std::memset(b.map, 0, bytes);
      xrt_call(where, "syncing the zero-filled BO to the device",
               [&] { b.bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0); });
    }
    b.live = true;
    if (!free_.empty()) {  // handles of released BOs are reused, as on cpu
      const BoHandle h = free_.back();
      free_.pop_back();
      bos_[h] = std::move(b);
      return h;
    }
    bos_.push_back(std::move(b));
    return static_cast<BoHandle>(bos_.size() - 1);
  }

  size_t size(BoHandle h) const override {
    return h < bos_.size() && bos_[h].live ? bos_[h].bytes : 0;  // 0 after release, as on cpu
  }

  uint8_t* map(BoHandle h) override {
    return at(h).map;
  }

  void sync_to_device(BoHandle h, size_t bytes) override {
    Bo& b = at(h);
    const size_t n = std::min(bytes, b.bytes);
    if (n == 0) return;
    xrt_call(b.label, "syncing " + std::to_string(n) + " bytes to the device",
             [&] { b.bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, n, 0); });
  }

  void sync_from_device(BoHandle h) override {
    Bo& b = at(h);
    if (b.bytes == 0) return;
    xrt_call(b.label, "syncing the BO from the device",
             [&] { b.bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, b.bytes, 0); });
  }

  const uint8_t* device_bytes(BoHandle h) override {
    sync_from_device(h);
    return at(h).map;
  }

  DispatchInfo dispatch(const Dispatch& d) override {
    check_dispatch(d);
    if (!d.binary || d.binary->mode == NpuBinary::Mode::none) {
      run_host(d);
      return DispatchInfo{true, false};
    }
    NpuKernel& k = prepare(d.kernel, *d.binary);
    launch(d, k);
    if (noop_) {  // the noop device computed nothing: the reference body supplies the result
      run_host(d);
      return DispatchInfo{true, true};
    }
    return DispatchInfo{false, true};
  }

  void release(BoHandle h) override {
    if (h >= bos_.size() || !bos_[h].live) return;  // releasing twice is harmless
    bos_[h] = Bo{};                                 // drops the xrt::bo
    free_.push_back(h);
  }

  int group_of(BoHandle h) const {
    return at(h).group;
  }
  bool noop() const {
    return noop_;
  }

  // What a launch of one NPU binary needs, loaded once and shared by kernel names using it.
  struct NpuKernel {
    NpuBinary::Mode mode = NpuBinary::Mode::xclbin;
    std::string key, path, kernel_name;
    xrt::kernel kernel;
    int num_args = -1;  // from the xclbin metadata; -1 when unknown (ELF)
    xrt::bo instr;
    uint32_t instr_words = 0;
#ifdef BOD_HAVE_XRT_ELF
    xrt::hw_context context;
#endif
    std::string describe() const {
      return "'" + kernel_name + "' in " + path;
    }
    std::string buffer_args() const {
      return num_args < 0 ? std::string("an unknown number of buffers")
                          : std::to_string(std::max(0, num_args - kFirstSlotArg)) +
                                " buffer argument(s) after opcode, instructions and count";
    }
  };

  // Loads (once) what an NPU kernel needs and remembers it under the bo-doctor kernel name.
  NpuKernel& prepare(const std::string& kernel, const NpuBinary& bin) {
    const std::string key = binary_key(bin);
    auto& slot = kernels_[kernel];
    if (slot && slot->key == key) return *slot;
    if (slot)
      fail(kernel_where(kernel), "was prepared with " + slot->describe() + " and now with " +
                                     bin.path + "; one kernel name needs one NPU binary");
    auto found = binaries_.find(key);
    if (found == binaries_.end()) {
      std::shared_ptr<NpuKernel> loaded =
          bin.mode == NpuBinary::Mode::elf ? load_elf(kernel, bin) : load_xclbin(kernel, bin);
      loaded->key = key;
      found = binaries_.emplace(key, std::move(loaded)).first;
    }
    slot = found->second;
    return *slot;
  }

 private:
  struct Bo {
    xrt::bo bo;
    size_t bytes = 0;
    uint8_t* map = nullptr;
    int group = -1;
    std::string label;
    bool live = false;
  };
  struct LoadedXclbin {
    xrt::xclbin xclbin;
    xrt::uuid uuid;
    bool on_device = false;
  };

  static std::string binary_key(const NpuBinary& bin) {
    std::error_code ec;
    std::string path = bin.path;
    if (!path.empty()) {
      const fs::path canon = fs::weakly_canonical(path, ec);
      if (!ec) path = canon.string();
    }
    return std::to_string(static_cast<int>(bin.mode)) + "|" + path + "|" + bin.kernel_name + "|" +
           bin.instructions;
  }

  Bo& at(BoHandle h) {
    return const_cast<Bo&>(static_cast<const XrtBackend*>(this)->at(h));
  }
  const Bo& at(BoHandle h) const {
    if (h >= bos_.size())
      throw std::out_of_range("xrt backend: no BO with handle " + std::to_string(h));
    const Bo& b = bos_[h];
    if (!b.live)
      throw std::logic_error("xrt backend: BO " + std::to_string(h) + " used after release");
    return b;
  }

  void check_dispatch(const Dispatch& d) {
    if (d.slot_dtypes.size() != d.bos.size() || d.slot_shapes.size() != d.bos.size())
      throw std::logic_error("xrt backend: dispatch of '" + d.kernel + "' has " +
                             std::to_string(d.bos.size()) + " BOs but " +
                             std::to_string(d.slot_dtypes.size()) + " dtypes and " +
                             std::to_string(d.slot_shapes.size()) + " shapes");
    for (size_t i = 0; i < d.bos.size(); ++i) {
      const Bo& b = at(d.bos[i]);
      const size_t need =
          static_cast<size_t>(numel(d.slot_shapes[i])) * dtype_size(d.slot_dtypes[i]);
      if (need > b.bytes)
        fail(kernel_where(d.kernel), "slot " + std::to_string(i) + " is viewed as " +
                                         std::to_string(need) + " bytes but its BO (" + b.label +
                                         ") holds " + std::to_string(b.bytes));
    }
  }

  // The reference body on the BO mappings, bracketed by syncs so it sees and leaves device bytes.
  void run_host(const Dispatch& d) {
    std::vector<TensorRef> slots(d.bos.size());
    for (size_t i = 0; i < d.bos.size(); ++i) {
      sync_from_device(d.bos[i]);
      slots[i] = TensorRef{at(d.bos[i]).map, d.slot_dtypes[i], d.slot_shapes[i]};
    }
    if (d.body) d.body(slots);
    for (BoHandle h : d.bos) sync_to_device(h, at(h).bytes);
  }

  // Parses an xclbin once per file (checked readable first: XRT's own errors are less clear).
  LoadedXclbin& read_xclbin(const std::string& kernel, const std::string& path) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(path, ec);
    const std::string key = ec || path.empty() ? path : canon.string();
    auto it = xclbins_.find(key);
    if (it != xclbins_.end()) return it->second;
    const std::string where = kernel_where(kernel);
    const std::string why = unreadable(path);
    if (!why.empty())
      fail(where, "xclbin '" + path + "': " + why +
                      "; set the kernel's binary path to the xclbin it was built into, or drop "
                      "the binary to run the kernel's reference body on the host");
    LoadedXclbin x;
    try {
      x.xclbin = xrt::xclbin(path);
    } catch (const std::exception& e) {
      fail(where, "xclbin '" + path + "' is not a valid xclbin (" + one_line(e.what()) +
                      "); rebuild it or point the kernel's binary path at the right file");
    }
    return xclbins_.emplace(key, std::move(x)).first->second;
  }

  std::shared_ptr<NpuKernel> load_xclbin(const std::string& kernel, const NpuBinary& bin) {
    const std::string where = kernel_where(kernel);
    if (bin.kernel_name.empty())
      fail(where, "its xclbin binary names no kernel; set the binary's kernel name");
    // Check the kernel name and the instructions before loading anything onto the device.
    LoadedXclbin& x = read_xclbin(kernel, bin.path);
    const std::vector<xrt::xclbin::kernel> listed = xrt_call(
        where, "listing the kernels of '" + bin.path + "'", [&] { return x.xclbin.get_kernels(); });
    std::string names;
    int num_args = -1;
    for (const auto& k : listed) {
      const std::string n = xrt_call(where, "reading a kernel name", [&] { return k.get_name(); });
      names += (names.empty() ? "" : ", ") + n;
      if (n == bin.kernel_name)
        num_args = static_cast<int>(xrt_call(where, "reading the arguments of '" + n + "'",
                                             [&] { return k.get_num_args(); }));
    }
    if (num_args < 0)
      fail(where, "xclbin '" + bin.path + "' has no kernel '" + bin.kernel_name +
                      "'; it has: " + (names.empty() ? std::string("no kernels") : names) +
                      " (set the binary's kernel name to one of them)");
    if (num_args < kFirstSlotArg)
      fail(where, "kernel '" + bin.kernel_name + "' in '" + bin.path + "' takes " +
                      std::to_string(num_args) +
                      " arguments; the xclbin ABI needs opcode, instructions, instruction count "
                      "and one buffer per slot");
    const std::vector<uint32_t> words = read_instructions(kernel, bin.instructions);

    auto k = std::make_shared<NpuKernel>();
    k->mode = NpuBinary::Mode::xclbin;
    k->path = bin.path;
    k->kernel_name = bin.kernel_name;
    k->num_args = num_args;
    if (!x.on_device) {
      // One load per file. On XRT 2.13 real devices a load replaces the previous xclbin, so a
      // model should put all its NPU kernels in one xclbin there (the noop device keeps both).
      x.uuid = xrt_call(where, "loading xclbin '" + bin.path + "' on the device",
                        [&] { return device_.load_xclbin(x.xclbin); });
      x.on_device = true;
    }
    k->kernel = xrt_call(where, "opening kernel " + k->describe(),
                         [&] { return xrt::kernel(device_, x.uuid, bin.kernel_name); });
    const size_t instr_bytes = words.size() * sizeof(uint32_t);
    const int instr_group = xrt_call(where, "looking up the instruction buffer's memory group",
                                     [&] { return k->kernel.group_id(kInstrArg); });
    k->instr = xrt_call(where, "allocating the instruction BO", [&] {
      return xrt::bo(device_, instr_bytes, xrt::bo::flags::cacheable, instr_group);
    });
    xrt_call(where, "writing the instruction BO", [&] {
      k->instr.write(words.data(), instr_bytes, 0);
      k->instr.sync(XCL_BO_SYNC_BO_TO_DEVICE, instr_bytes, 0);
    });
    k->instr_words = static_cast<uint32_t>(words.size());
    return k;
  }

  std::shared_ptr<NpuKernel> load_elf(const std::string& kernel, const NpuBinary& bin) {
    const std::string where = kernel_where(kernel);
#ifdef BOD_HAVE_XRT_ELF
    if (bin.kernel_name.empty())
      fail(where, "its ELF binary names no kernel; set the binary's kernel name");
    const std::string why = unreadable(bin.path);
    if (!why.empty())
      fail(where, "ELF '" + bin.path + "': " + why +
                      "; set the kernel's binary path to its ELF, or drop the binary to run the "
                      "kernel's reference body on the host");
    auto k = std::make_shared<NpuKernel>();
    k->mode = NpuBinary::Mode::elf;
    k->path = bin.path;
    k->kernel_name = bin.kernel_name;
    const xrt::elf elf =
        xrt_call(where, "reading ELF '" + bin.path + "'", [&] { return xrt::elf(bin.path); });
    k->context = xrt_call(where, "creating a hardware context for '" + bin.path + "'",
                          [&] { return xrt::hw_context(device_, elf); });
    k->kernel = xrt_call(where, "opening kernel " + k->describe(),
                         [&] { return xrt::kernel(k->context, bin.kernel_name); });
    return k;
#else
    (void)bin;
    fail(where,
         "this XRT has no ELF support (xrt::ext::bo); upgrade XRT >= 2.17 or give an "
         "xclbin");
#endif
  }

  void launch(const Dispatch& d, NpuKernel& k) {
    const std::string where = kernel_where(d.kernel);
    const bool xclbin = k.mode == NpuBinary::Mode::xclbin;
    const int first = xclbin ? kFirstSlotArg : 0;
    if (xclbin && first + static_cast<int>(d.bos.size()) != k.num_args)
      fail(where, "binds " + std::to_string(d.bos.size()) + " slots but " + k.describe() +
                      " takes " + k.buffer_args() + "; make the kernel's slots match its xclbin");
    if (xclbin) {
      for (size_t i = 0; i < d.bos.size(); ++i) {
        const Bo& b = at(d.bos[i]);
        const int arg = first + static_cast<int>(i);
        const int want =
            xrt_call(where, "looking up the memory group of argument " + std::to_string(arg),
                     [&] { return k.kernel.group_id(arg); });
        if (b.group != want)
          fail(where, "slot " + std::to_string(i) + " BO (" + b.label + ") is in memory group " +
                          std::to_string(b.group) + " but argument " + std::to_string(arg) +
                          " of " + k.describe() + " is connected to group " + std::to_string(want) +
                          ", so XRT would run the kernel on a temporary copy; allocate the "
                          "kernel's BOs after xrt_prepare_kernel() and share BOs only between "
                          "slots in the same memory group");
      }
    }
    xrt::run run =
        xrt_call(where, "creating a run of " + k.describe(), [&] { return xrt::run(k.kernel); });
    xrt_call(where, "setting the arguments of " + k.describe() + " and starting it", [&] {
      if (xclbin) {
        run.set_arg(0, kOpcode);
        run.set_arg(kInstrArg, k.instr);
        run.set_arg(2, k.instr_words);
      }
      for (size_t i = 0; i < d.bos.size(); ++i)
        run.set_arg(first + static_cast<int>(i), at(d.bos[i]).bo);
      run.start();
    });
    const ert_cmd_state state = xrt_call(where, "waiting for the run of " + k.describe(), [&] {
      return run.wait(std::chrono::milliseconds(timeout_ms_));
    });
    const std::string failure = xrt_run_failure(state, timeout_ms_);
    if (!failure.empty()) fail(where, failure);
  }

  // Declaration order is destruction order reversed: BOs and kernels go before the device.
  int device_index_;
  int timeout_ms_;
  bool noop_;
  xrt::device device_;
  std::map<std::string, LoadedXclbin> xclbins_;                 // by canonical path
  std::map<std::string, std::shared_ptr<NpuKernel>> binaries_;  // by binary_key()
  std::map<std::string, std::shared_ptr<NpuKernel>> kernels_;   // by bo-doctor kernel name
  std::vector<Bo> bos_;
  std::vector<BoHandle> free_;  // released handles, reused by alloc()
};

bool has_entry_with_prefix(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) return true;
  return false;
}

XrtBackend* as_xrt(Backend& b) {
  return dynamic_cast<XrtBackend*>(&b);
}

}  // namespace

std::string xrt_run_failure(int state, int timeout_ms) {
  const std::string s = "ERT state " + state_name(state) + " = " + std::to_string(state);
  switch (state) {
    case ERT_CMD_STATE_COMPLETED:
      return "";
    case ERT_CMD_STATE_NEW:
    case ERT_CMD_STATE_QUEUED:
    case ERT_CMD_STATE_SUBMITTED:
    case ERT_CMD_STATE_RUNNING:
    case ERT_CMD_STATE_TIMEOUT:
      return "NPU run did not complete within the " + std::to_string(timeout_ms) + " ms timeout (" +
             s +
             "); check the instruction file belongs to this xclbin and the NPU is not hung "
             "(dmesg), or raise the timeout if the kernel is just slow";
    default:
      return "NPU run ended in " + s +
             " instead of completing; check the instruction file belongs to this xclbin and "
             "look at dmesg for driver errors";
  }
}

std::unique_ptr<Backend> make_xrt_backend(const BackendOptions& opt) {
  // Check the environment before touching XRT: it throws or misbehaves on these and caches
  // what it saw for the rest of the process.
  const std::string where = "--backend xrt";
  const std::string root = getenv_str("XILINX_XRT");
  if (root.empty())
    fail(where, std::string("XILINX_XRT is not set; set it to the XRT install prefix (e.g. "
                            "source /opt/xilinx/xrt/setup.sh), or ") +
                    kNoopHint);
  std::error_code ec;
  if (!fs::is_directory(fs::path(root) / "lib", ec))
    fail(where, "XILINX_XRT=" + root +
                    " has no lib/ directory, so XRT cannot load its device shim; set XILINX_XRT "
                    "to the XRT install prefix, or " +
                    kNoopHint);
  const std::string emulation = getenv_str("XCL_EMULATION_MODE");
  const bool noop = emulation == "noop";
  if (!emulation.empty() && !noop)
    fail(where, "XCL_EMULATION_MODE=" + emulation +
                    " is not supported (sw_emu/hw_emu need Vitis and cannot run NPU kernels); "
                    "unset it to use a real NPU, or set it to noop for XRT's noop device");
  if (noop && !has_entry_with_prefix(root + "/lib", "libxrt_noop.so"))
    fail(where, "XCL_EMULATION_MODE=noop but " + root +
                    "/lib has no libxrt_noop.so*; point XILINX_XRT at a folder whose lib/ links "
                    "the libxrt*/libxdp* libraries, e.g. the one tool/xrt-noop-env.sh BUILD_DIR "
                    "makes (BUILD_DIR/xrt-noop)");
  if (opt.device < 0)
    fail("--device",
         "device index " + std::to_string(opt.device) + " is negative; expected 0 or more",
         Exit::bad_input);
  return std::make_unique<XrtBackend>(opt, noop);
}

void xrt_prepare_kernel(Backend& b, const std::string& kernel, const NpuBinary& bin) {
  if (bin.mode == NpuBinary::Mode::none) return;
  if (XrtBackend* x = as_xrt(b)) x->prepare(kernel, bin);
}

int xrt_bo_group(Backend& b, BoHandle bo) {
  XrtBackend* x = as_xrt(b);
  return x ? x->group_of(bo) : -1;
}

bool xrt_is_noop(const Backend& b) {
  const auto* x = dynamic_cast<const XrtBackend*>(&b);
  return x && x->noop();
}

}  // namespace bod
