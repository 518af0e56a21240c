// libbod_xrt_preload.so: `bo-doctor record --xrt` puts it in LD_PRELOAD so a host program's
// calls into libxrt_coreutil's xrt::bo, xrt::kernel and xrt::run land here first. Each hook
// forwards to the real function (dlsym(RTLD_NEXT, its mangled name)) with the same arguments and
// returns what it returned (exceptions pass through untouched), and appends one event line
// (JSON) to the file named by BOD_XRT_LOG. The program, the library and the device see exactly
// the calls the program made: the hooks never sync, write or flush a BO. Host memory a program
// writes through map() is found by comparing the mapped bytes with a private copy taken at the
// previous look (at each write, read, sync of that BO and at each run start that binds it); the
// copy is this library's own memory. The event format is docs/recording.md, "Hand-managed BOs".
#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_kernel.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "core/uffd_wp.h"
#include "preload_diff.h"

namespace {

// The real function behind a mangled name; aborts with one line when the library lacks it
// (an XRT without this symbol cannot have called into this hook either).
void* real(const char* mangled) {
  void* p = dlsym(RTLD_NEXT, mangled);
  if (!p) {
    std::fprintf(stderr, "bo-doctor xrt preload: libxrt_coreutil has no %s\n", mangled);
    std::abort();
  }
  return p;
}
#define BOD_REAL(type, mangled)                                 \
  static const auto fn = reinterpret_cast<type>(real(mangled)); \
  (void)0

// The trace hash of n bytes (docs/trace-format.md §8): core's own code (core/hash.h, compiled
// into this library as into libbod_hash.so), so the preload, the Python recorders and bo-doctor
// give one value.
uint64_t trace_hash(const void* data, size_t n) {
  return bod::hash_bytes(data, n);
}

// Write tracking of the mapped pages, as tool/recorder/native/write_track.cpp does it for the
// Python recorder: Linux's userfaultfd write-protection in asynchronous mode (the kernel resolves
// every write fault itself: no handler thread, and the program's writes, its threads' and the
// kernel's on its behalf proceed as without the recorder; it only takes a minor fault per page
// after each look) and the PAGEMAP_SCAN ioctl (Linux 6.7+), which lists the pages written since
// the last look and protects them again in one call. Proven on a probe buffer first; where
// anything is missing (or the mapping cannot be registered: device memory, another tracker),
// the BO is compared whole at every look as before.
namespace write_track {

using namespace bod::uffd_wp;
// Below this a whole comparison costs about what the scan's system call does.
constexpr uint64_t kMinBytes = uint64_t(128) << 10;

int g_uffd = -1, g_pagemap = -1;
uint64_t g_page = 4096;

// The written pages of [start, end) (page-aligned), protected again, as calls of f(lo, hi) in
// increasing order; false when the scan failed.
template <typename F>
bool scan_written(uintptr_t start, uintptr_t end, F f) {
  return bod::uffd_wp::scan(g_pagemap, start, end, kPageIsWritten, 0, true, f) == 0;
}

// Opens the tracker once and proves it on a probe buffer (a write to one page of four shows as
// exactly that page written).
bool ready() {
  static const bool ok = [] {
    g_page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (bod::uffd_wp::open_tracker(&g_uffd, &g_pagemap) != 0) return false;
    const uint64_t len = 4 * g_page;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bool good = p != MAP_FAILED;
    const auto base = reinterpret_cast<uintptr_t>(p);
    if (good) good = bod::uffd_wp::track(g_uffd, base, len) == 0;
    if (good) {
      static_cast<volatile uint8_t*>(p)[2 * g_page + 5] = 1;
      int hits = 0;
      good = scan_written(base, base + len, [&](uint64_t lo, uint64_t hi) {
        hits += lo == base + 2 * g_page && hi == base + 3 * g_page ? 1 : 2;
      });
      good = good && hits == 1;
    }
    if (p != MAP_FAILED) munmap(p, len);
    if (!good) {
      ::close(g_uffd), ::close(g_pagemap);
      g_uffd = g_pagemap = -1;
    }
    return good;
  }();
  return ok;
}

// Tracks the whole pages of [p, p + n) when there are enough of them; their offsets from p, or
// {0, 0} (not tracked).
std::pair<uint64_t, uint64_t> track(const uint8_t* p, uint64_t n) {
  if (n < kMinBytes || !ready()) return {0, 0};
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t lo = (a + g_page - 1) / g_page * g_page, hi = (a + n) / g_page * g_page;
  if (hi <= lo || bod::uffd_wp::track(g_uffd, lo, hi - lo) != 0) return {0, 0};
  return {lo - a, hi - a};
}

// Stops tracking [p + ta, p + tz) (its memory may be gone already: errors are ignored).
void untrack(const uint8_t* p, uint64_t ta, uint64_t tz) {
  bod::uffd_wp::untrack(g_uffd, reinterpret_cast<uintptr_t>(p) + ta, tz - ta);
}

// The pages of [p + ta, p + tz) written since the last call, as offsets from p in increasing
// order; false when the scan failed (then compare everything).
bool written(const uint8_t* p, uint64_t ta, uint64_t tz,
             std::vector<std::pair<uint64_t, uint64_t>>& out) {
  out.clear();
  const auto a = reinterpret_cast<uintptr_t>(p);
  return scan_written(a + ta, a + tz, [&](uint64_t lo, uint64_t hi) {
    lo = std::max<uint64_t>(lo, a + ta), hi = std::min<uint64_t>(hi, a + tz);
    if (lo < hi) out.push_back({lo - a, hi - a});
  });
}

}  // namespace write_track

struct BoState {
  long long id = 0;
  uint64_t size = 0;
  const uint8_t* map = nullptr;  // what map() returned to the program (null: never mapped)
  std::vector<uint8_t> seen;     // the mapped bytes at the last look
  // [ta, tz): the whole pages of the mapping under write tracking (none when equal); over the
  // current window of looks, how many and the bytes they found written.
  uint64_t ta = 0, tz = 0;
  uint64_t looks = 0, written = 0;
  // The shadow (BOD_XRT_SHADOW=1): how the BO was made, for a fresh one like it (own: by a
  // hooked constructor, not a sub-buffer), and what a fully-synced device would hold (img,
  // once a run binds it: the host's bytes where the host changed them, elsewhere the shadow
  // run's own device bytes).
  xclDeviceHandle dhdl = nullptr;
  unsigned flags = 0, group = 0;
  bool own = false, imaged = false;
  std::vector<uint8_t> img;
};

// What a shadow run needs of a run, held from its construction or set_arg to its start only
// (so the recorder keeps no kernel or BO of the program alive beyond that).
struct ShadowArgs {
  xrt::kernel kernel;
  std::map<int, xrt::bo> bos;
  std::map<int, std::vector<uint8_t>> values;
};

struct RunState {
  long long kernel = 0;
  struct Arg {
    bool bo;  // a BO (v: its id) or a scalar (v: its first 8 bytes, little-endian)
    uint64_t v;
  };
  std::map<int, Arg> args;         // by arg index
  long long run = 0;               // the number of its last start
  std::shared_ptr<ShadowArgs> sh;  // BOD_XRT_SHADOW=1
};

bool shadowing() {
  static const bool on = [] {
    const char* v = std::getenv("BOD_XRT_SHADOW");
    return v && std::string(v) == "1";
  }();
  return on;
}

struct Log {
  std::mutex mu;
  int fd = -1;
  bool opened = false;
  long long next_bo = 1, next_run = 1, next_kernel = 1;
  std::map<const void*, BoState> bos;        // bo_impl* -> state
  std::map<long long, BoState*> by_id;       // id -> state (the live ones)
  std::map<const void*, long long> kernels;  // kernel_impl* -> id
  std::map<const void*, RunState> runs;      // run_impl* -> args

  // The event lines not yet written: they go to the file in one write(2) before a run starts
  // (the start line included, so a run that never comes back is on file), when 64 KiB are
  // waiting, before the process forks, and at exit; after the exit handler, every line at once.
  std::string buf;
  bool exiting = false;

  // Opens this process's file in the folder BOD_XRT_LOG names, "<start time ns>-<pid>.jsonl"
  // (no variable: nothing is logged), and buffers its first line.
  void open_file();
  void flush() {
    if (fd >= 0 && !buf.empty()) (void)!::write(fd, buf.data(), buf.size());
    buf.clear();
  }

  // One line, appended piece by piece: begin(...).num(...).str(...).end(...).
  Log& begin(const char* s) {
    if (!opened) open_file();
    return str(s);
  }
  Log& str(const char* s) {
    if (fd >= 0) buf += s;
    return *this;
  }
  Log& str(const std::string& s) {
    if (fd >= 0) buf += s;
    return *this;
  }
  template <typename T>
  Log& num(T v) {
    if (fd < 0) return *this;
    char t[24];
    auto res = std::to_chars(t, t + sizeof t, v);
    buf.append(t, res.ptr);
    return *this;
  }
  Log& ranges(const bod_preload::Span* r, size_t n) {
    str("[");
    for (size_t i = 0; i < n; ++i) str(i ? ",[" : "[").num(r[i][0]).str(",").num(r[i][1]).str("]");
    return str("]");
  }
  void end(const char* s) {
    if (fd < 0) return;
    buf += s;
    buf += '\n';
    if (exiting || buf.size() >= (size_t(64) << 10)) flush();
  }
  void line(const std::string& s) { begin("").str(s).end(""); }
};

Log& log();

void Log::open_file() {
  opened = true;
  const char* p = std::getenv("BOD_XRT_LOG");
  if (p && *p) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    char name[64];
    std::snprintf(name, sizeof name, "/%020lld-%d.jsonl",
                  static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec,
                  static_cast<int>(getpid()));
    fd = ::open((std::string(p) + name).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (fd < 0) return;
  buf.reserve(size_t(80) << 10);
  const char* mode = std::getenv("XCL_EMULATION_MODE");
  buf = "{\"e\":\"open\",\"producer\":\"xrt-preload\",\"pid\":" + std::to_string(getpid()) +
        ",\"device\":\"" + (mode && std::string(mode) == "noop" ? "noop" : "") + "\"" +
        (shadowing() ? ",\"shadow_plumbing\":true" : "") + "}\n";
  // Nothing buffered is lost at exit or duplicated in a forked child. (mu is held here: the
  // handlers take it themselves.)
  std::atexit([] {
    Log& L = log();
    std::lock_guard<std::mutex> g(L.mu);
    L.flush();
    L.exiting = true;
  });
  pthread_atfork([] { log().mu.lock(), log().flush(); }, [] { log().mu.unlock(); },
                 [] { log().mu.unlock(); });
}

Log& log() {
  static Log* l = new Log;  // never destroyed: hooks may run during static destruction
  return *l;
}

thread_local int depth = 0;  // > 0 inside a hook: a nested XRT call is the library's own
struct Guard {
  bool outer;
  Guard() : outer(depth++ == 0) {}
  ~Guard() { --depth; }
};

constexpr size_t kMaxRanges = 1024;

// The diff of preload_diff.h without vector instructions: 4 KiB compared at a time (equal blocks
// cost one memcmp), then 8 bytes at a time.
void diff_plain(bod_preload::DiffOut& d, const uint8_t* now, uint8_t* seen, uint8_t* img,
                uint64_t off, uint64_t len) {
  constexpr uint64_t kBlock = 4096;
  for (uint64_t b = off; b < off + len; b += kBlock) {
    uint64_t n = std::min(kBlock, off + len - b);
    if (std::memcmp(now + b, seen + b, n) == 0) continue;
    uint64_t i = b;
    for (; i + 8 <= b + n; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, now + i, 8);
      std::memcpy(&y, seen + i, 8);
      uint64_t dx = x ^ y;
      if (!dx) continue;
      std::memcpy(seen + i, &x, 8);
      if (img)
        for (unsigned k = 0; k < 8; ++k)
          if ((dx >> (8 * k)) & 0xffu) img[i + k] = now[i + k];
      // Little-endian: the lowest differing byte from the trailing zeros, the highest from the
      // leading ones.
      bod_preload::diff_change(d, i + static_cast<uint64_t>(__builtin_ctzll(dx) / 8),
                               i + 8 - static_cast<uint64_t>(__builtin_clzll(dx) / 8));
    }
    bod_preload::diff_bytes(d, now, seen, img, i, b + n);
  }
}

// The byte ranges where the mapped bytes `now` differ from the recorder's copy `seen` (segments
// of [off, off + len) added in increasing order, then done(); preload_diff.h: changes less than
// 16 bytes apart make one range, at most 1024 ranges); the changed bytes are copied into `seen`
// (and `img` when not null) on the way. One pass over the memory, with AVX-512 or AVX2 where the
// CPU has it.
struct Diff {
  const bod_preload::Span* r = nullptr;
  size_t n = 0;
};
class Differ {
 public:
  Differ(const uint8_t* now, uint8_t* seen, uint8_t* img)
      : now_(now), seen_(seen), img_(img), d_{out_, 0, kMaxRanges, 0, 0} {}
  void add(uint64_t off, uint64_t len) {
    if (!len) return;
#if defined(BOD_PRELOAD_AVX512)
    static const bool avx512 = __builtin_cpu_supports("avx512bw");
    if (avx512) return bod_preload::diff_avx512(d_, now_, seen_, img_, off, len);
#endif
#if defined(BOD_PRELOAD_AVX2)
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return bod_preload::diff_avx2(d_, now_, seen_, img_, off, len);
#endif
    diff_plain(d_, now_, seen_, img_, off, len);
  }
  Diff done() {
    bod_preload::diff_finish(d_);
    return {out_, d_.n};
  }

 private:
  // One for the library, not per thread (static TLS would come out of every thread's stack):
  // every diff runs with the log's mutex held.
  static bod_preload::Span out_[kMaxRanges];
  const uint8_t* now_;
  uint8_t* seen_;
  uint8_t* img_;
  bod_preload::DiffOut d_;
};
bod_preload::Span Differ::out_[kMaxRanges];

Diff diff(const uint8_t* now, uint8_t* seen, uint8_t* img, uint64_t off, uint64_t len) {
  Differ d(now, seen, img);
  d.add(off, len);
  return d.done();
}

// Compares the mapped bytes of a BO with the last look and logs the changes (mu held). Only the
// bytes that changed go into the shadow's image: a range may span bytes only the device wrote.
// A write-tracked BO compares its pages written since the last look and its partial pages at
// either end; a failed scan compares it whole.
void look(Log& L, BoState& b) {
  if (!b.map || b.size == 0) return;
  Differ d(b.map, b.seen.data(), b.imaged ? b.img.data() : nullptr);
  // mu held; never destroyed: hooks may run during static destruction
  static auto& pages = *new std::vector<std::pair<uint64_t, uint64_t>>;
  if (b.ta < b.tz && write_track::written(b.map, b.ta, b.tz, pages)) {
    d.add(0, b.ta);
    for (auto& [a, z] : pages) {
      d.add(a, z - a);
      b.written += z - a;
    }
    d.add(b.tz, b.size - b.tz);
    // Every written page costs a write fault (about 0.5 us) where comparing it costs about
    // 0.1 us per look: a BO whose looks find more than an eighth of it written, over 16 looks,
    // is untracked and compared whole from then on (a buffer rewritten every run); one written
    // once and then only read stays tracked.
    if (++b.looks == 16) {
      if (b.written > 16 * (b.tz - b.ta) / 8) {
        write_track::untrack(b.map, b.ta, b.tz);
        b.ta = b.tz = 0;
      }
      b.looks = b.written = 0;
    }
  } else {
    d.add(0, b.size);
  }
  Diff r = d.done();
  if (!r.n) return;
  L.begin("{\"e\":\"host\",\"bo\":")
      .num(b.id)
      .str(",\"how\":\"map\",\"r\":")
      .ranges(r.r, r.n)
      .end("}");
}

// The state of a BO by its implementation; one made elsewhere (not through a hooked
// constructor) gets its id here.
BoState& bo_of(Log& L, const xrt::bo& bo) {
  const void* impl = bo.get_handle().get();
  auto it = L.bos.find(impl);
  if (it != L.bos.end()) return it->second;
  BoState& b = L.bos[impl];
  b.id = L.next_bo++;
  b.size = impl ? bo.size() : 0;
  L.by_id[b.id] = &b;
  L.line("{\"e\":\"bo\",\"bo\":" + std::to_string(b.id) + ",\"size\":" + std::to_string(b.size) +
         ",\"group\":-1,\"flags\":0,\"parent\":0,\"offset\":0}");
  return b;
}

// A constructor finished: a new BO (a reused implementation address is a new BO).
void new_bo(const xrt::bo* self, unsigned group, unsigned flags, long long parent, uint64_t off,
            xclDeviceHandle dhdl = nullptr) {
  Log& L = log();
  std::lock_guard<std::mutex> g(L.mu);
  const void* impl = self->get_handle().get();
  BoState b;
  b.id = L.next_bo++;
  b.size = impl ? self->size() : 0;
  BoState& at = L.bos[impl];
  if (at.id) L.by_id.erase(at.id);
  b.dhdl = dhdl;
  b.flags = flags;
  b.group = group;
  b.own = dhdl && !parent;
  at = std::move(b);
  L.by_id[at.id] = &at;
  L.line("{\"e\":\"bo\",\"bo\":" + std::to_string(at.id) + ",\"size\":" + std::to_string(at.size) +
         ",\"group\":" + std::to_string(group) + ",\"flags\":" + std::to_string(flags) +
         ",\"parent\":" + std::to_string(parent) + ",\"offset\":" + std::to_string(off) + "}");
}

// record --xrt --shadow: the run's kernel once more, just before the run starts, on fresh BOs
// of this library's own holding what a fully-synced program would have given the device (the
// host's bytes where it changed them; elsewhere what the previous shadow run left), with the
// run's scalar arguments; logged as a "shadow" event (the fresh BOs' hashes before and after)
// or why it was not made. Every XRT call here is nested (Guard): forwarded, never logged, and
// none touches the program's BOs but a bo.read of a BO's host bytes the first time a run binds
// one that was never mapped. No output is compared here: on XRT's noop device nothing is
// computed, so this is plumbing only (docs/xrt.md). mu held.
void shadow_run(Log& L, RunState& r) {
  std::string ev = "{\"e\":\"shadow\",\"run\":" + std::to_string(r.run);
  try {
    if (!r.sh) throw std::runtime_error("the run was started before without new arguments");
    xrt::run run(r.sh->kernel);
    // set_arg_at_index is private; its raw-bytes form is what run.set_arg(i, scalar) reaches.
    static const auto set_bytes = reinterpret_cast<void (*)(xrt::run*, int, const void*, size_t)>(
        real("_ZN3xrt3run16set_arg_at_indexEiPKvm"));
    for (auto& [i, v] : r.sh->values) set_bytes(&run, i, v.data(), v.size());
    std::map<long long, std::pair<BoState*, xrt::bo>> fresh;  // by the program's BO id
    std::map<long long, uint64_t> pre;
    uint64_t h2d = 0;
    for (auto& [i, bo] : r.sh->bos) {
      BoState& b = bo_of(L, bo);
      auto it = fresh.find(b.id);
      if (it == fresh.end()) {
        if (!b.own)
          throw std::runtime_error("BO " + std::to_string(b.id) +
                                   " is a sub-buffer or was made before the recorder started");
        if (!b.imaged) {  // the first run that binds it: the device holds what the host has
          b.img.resize(b.size);
          if (b.map)
            std::memcpy(b.img.data(), b.map, b.size);
          else
            bo.read(b.img.data(), b.size, 0);
          b.imaged = true;
        }
        xrt::bo nb(b.dhdl, b.size, static_cast<xrt::bo::flags>(b.flags), b.group);
        nb.write(b.img.data(), b.size, 0);
        nb.sync(XCL_BO_SYNC_BO_TO_DEVICE, b.size, 0);
        h2d += b.size;
        pre[b.id] = trace_hash(b.img.data(), b.img.size());
        it = fresh.emplace(b.id, std::make_pair(&b, std::move(nb))).first;
      }
      run.set_arg(i, it->second.second);
    }
    run.start();
    ert_cmd_state st = run.wait(std::chrono::milliseconds(60000));
    if (st != ERT_CMD_STATE_COMPLETED)
      throw std::runtime_error("the shadow run ended in state " +
                               std::to_string(static_cast<int>(st)));
    std::string bos = "[";
    for (auto& [id, x] : fresh) {
      BoState& b = *x.first;
      x.second.sync(XCL_BO_SYNC_BO_FROM_DEVICE, b.size, 0);
      x.second.read(b.img.data(), b.size, 0);
      bos += (bos.size() > 1 ? ",[" : "[") + std::to_string(id) + "," + std::to_string(pre[id]) +
             "," + std::to_string(trace_hash(b.img.data(), b.img.size())) + "]";
    }
    L.line(ev + ",\"bos\":" + bos + "],\"h2d\":" + std::to_string(h2d) +
           ",\"writes\":" + std::to_string(fresh.size()) + "}");
  } catch (const std::exception& e) {
    std::string what;
    for (char c : std::string(e.what()))
      if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) what += c;
    L.line(ev + ",\"error\":\"" + what + "\"}");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// xrt::bo

xrt::bo::bo(xclDeviceHandle dhdl, size_t size, bo::flags flags, memory_group grp) {
  Guard g;
  BOD_REAL(void (*)(bo*, xclDeviceHandle, size_t, bo::flags, memory_group),
           "_ZN3xrt2boC1EPvmNS0_5flagsEj");
  fn(this, dhdl, size, flags, grp);
  if (g.outer) new_bo(this, grp, static_cast<unsigned>(flags), 0, 0, dhdl);
}

xrt::bo::bo(xclDeviceHandle dhdl, void* userptr, size_t size, bo::flags flags, memory_group grp) {
  Guard g;
  BOD_REAL(void (*)(bo*, xclDeviceHandle, void*, size_t, bo::flags, memory_group),
           "_ZN3xrt2boC1EPvS1_mNS0_5flagsEj");
  fn(this, dhdl, userptr, size, flags, grp);
  if (g.outer) new_bo(this, grp, static_cast<unsigned>(flags), 0, 0, dhdl);
}

xrt::bo::bo(const bo& parent, size_t size, size_t offset) {
  Guard g;
  BOD_REAL(void (*)(bo*, const bo&, size_t, size_t), "_ZN3xrt2boC1ERKS0_mm");
  fn(this, parent, size, offset);
  if (!g.outer) return;
  long long pid = 0;
  {
    Log& L = log();
    std::lock_guard<std::mutex> l(L.mu);
    pid = bo_of(L, parent).id;
  }
  new_bo(this, 0, 0, pid, offset);
}

void* xrt::bo::map() {
  Guard g;
  BOD_REAL(void* (*)(bo*), "_ZN3xrt2bo3mapEv");
  void* p = fn(this);
  if (!g.outer || !p) return p;
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  BoState& b = bo_of(L, *this);
  if (!b.map) {
    b.map = static_cast<const uint8_t*>(p);
    // Protected before the copy is taken: a write in between only makes its page compared.
    std::tie(b.ta, b.tz) = write_track::track(b.map, b.size);
    b.seen.assign(b.map, b.map + b.size);
  }
  L.begin("{\"e\":\"map\",\"bo\":").num(b.id).end("}");
  return p;
}

void xrt::bo::write(const void* src, size_t size, size_t seek) {
  Guard g;
  BOD_REAL(void (*)(bo*, const void*, size_t, size_t), "_ZN3xrt2bo5writeEPKvmm");
  if (!g.outer) return fn(this, src, size, seek);
  Log& L = log();
  {
    std::lock_guard<std::mutex> l(L.mu);
    look(L, bo_of(L, *this));
  }
  fn(this, src, size, seek);
  std::lock_guard<std::mutex> l(L.mu);
  BoState& b = bo_of(L, *this);
  if (b.map && seek < b.size)
    std::memcpy(b.seen.data() + seek, b.map + seek, std::min<uint64_t>(size, b.size - seek));
  if (b.imaged && seek < b.size)
    std::memcpy(b.img.data() + seek, src, std::min<uint64_t>(size, b.size - seek));
  L.begin("{\"e\":\"host\",\"bo\":")
      .num(b.id)
      .str(",\"how\":\"write\",\"r\":[[")
      .num(seek)
      .str(",")
      .num(size)
      .str("]],\"h\":")
      .num(trace_hash(src, size))
      .end("}");
}

void xrt::bo::read(void* dst, size_t size, size_t skip) {
  Guard g;
  BOD_REAL(void (*)(bo*, void*, size_t, size_t), "_ZN3xrt2bo4readEPvmm");
  if (!g.outer) return fn(this, dst, size, skip);
  Log& L = log();
  long long id = 0;
  {
    std::lock_guard<std::mutex> l(L.mu);
    BoState& b = bo_of(L, *this);
    look(L, b);
    id = b.id;
  }
  fn(this, dst, size, skip);
  // Logged once the bytes are in: their hash is what the program got.
  std::lock_guard<std::mutex> l(L.mu);
  L.begin("{\"e\":\"read\",\"bo\":")
      .num(id)
      .str(",\"off\":")
      .num(skip)
      .str(",\"len\":")
      .num(size)
      .str(",\"h\":")
      .num(trace_hash(dst, size))
      .end("}");
}

void xrt::bo::sync(xclBOSyncDirection dir, size_t size, size_t offset) {
  Guard g;
  BOD_REAL(void (*)(bo*, xclBOSyncDirection, size_t, size_t),
           "_ZN3xrt2bo4syncE18xclBOSyncDirectionmm");
  if (!g.outer) return fn(this, dir, size, offset);
  Log& L = log();
  const bool to = dir == XCL_BO_SYNC_BO_TO_DEVICE;
  long long id = 0;
  {
    std::lock_guard<std::mutex> l(L.mu);
    BoState& b = bo_of(L, *this);
    look(L, b);
    id = b.id;
  }
  fn(this, dir, size, offset);
  std::lock_guard<std::mutex> l(L.mu);
  BoState& b = bo_of(L, *this);
  L.begin("{\"e\":\"sync\",\"bo\":")
      .num(id)
      .str(to ? ",\"dir\":\"to\",\"off\":" : ",\"dir\":\"from\",\"off\":")
      .num(offset)
      .str(",\"len\":")
      .num(size);
  if (!to && b.map) {
    // What the device sent: bytes that differ from the host's are the device's changes.
    Diff r{nullptr, 0};
    if (offset < b.size)
      r = diff(b.map, b.seen.data(), nullptr, offset, std::min<uint64_t>(size, b.size - offset));
    L.str(",\"changed\":").ranges(r.r, r.n);
  }
  L.end("}");
}

// ---------------------------------------------------------------------------------------------
// xrt::kernel, xrt::run (the kernel call operator is inline: run(kernel), set_arg..., start)

xrt::kernel::kernel(const xrt::device& device, const xrt::uuid& xclbin_id, const std::string& name,
                    cu_access_mode mode) {
  Guard g;
  BOD_REAL(
      void (*)(kernel*, const xrt::device&, const xrt::uuid&, const std::string&, cu_access_mode),
      "_ZN3xrt6kernelC1ERKNS_6deviceERKNS_4uuidERKNSt7__cxx1112basic_stringIcSt11char_"
      "traitsIcESaIcEEENS0_14cu_access_modeE");
  fn(this, device, xclbin_id, name, mode);
  if (!g.outer) return;
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  long long id = L.next_kernel++;
  L.kernels[get_handle().get()] = id;
  std::string n;
  for (char c : name)
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) n += c;
  L.line("{\"e\":\"kernel\",\"k\":" + std::to_string(id) + ",\"name\":\"" + n + "\"}");
}

xrt::run::run(const kernel& krnl) {
  Guard g;
  BOD_REAL(void (*)(run*, const kernel&), "_ZN3xrt3runC1ERKNS_6kernelE");
  fn(this, krnl);
  if (!g.outer) return;
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  auto k = L.kernels.find(krnl.get_handle().get());
  RunState& r = L.runs[get_handle().get()];
  r = RunState{};
  r.kernel = k == L.kernels.end() ? 0 : k->second;
  if (shadowing()) {
    r.sh = std::make_shared<ShadowArgs>();
    r.sh->kernel = krnl;
  }
}

void xrt::run::set_arg_at_index(int index, const void* value, size_t bytes) {
  Guard g;
  BOD_REAL(void (*)(run*, int, const void*, size_t), "_ZN3xrt3run16set_arg_at_indexEiPKvm");
  fn(this, index, value, bytes);
  if (!g.outer) return;
  uint64_t v = 0;
  std::memcpy(&v, value, std::min<size_t>(bytes, sizeof v));
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  RunState& r = L.runs[get_handle().get()];
  r.args[index] = {false, v};
  if (r.sh) {
    r.sh->bos.erase(index);
    r.sh->values[index].assign(static_cast<const uint8_t*>(value),
                               static_cast<const uint8_t*>(value) + bytes);
  }
}

void xrt::run::set_arg_at_index(int index, const xrt::bo& bo) {
  Guard g;
  BOD_REAL(void (*)(run*, int, const xrt::bo&), "_ZN3xrt3run16set_arg_at_indexEiRKNS_2boE");
  fn(this, index, bo);
  if (!g.outer) return;
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  RunState& r = L.runs[get_handle().get()];
  r.args[index] = {true, static_cast<uint64_t>(bo_of(L, bo).id)};
  if (r.sh) {
    r.sh->values.erase(index);
    r.sh->bos.insert_or_assign(index, bo);
  }
}

void xrt::run::start() {
  Guard g;
  BOD_REAL(void (*)(run*), "_ZN3xrt3run5startEv");
  if (g.outer) {
    Log& L = log();
    std::lock_guard<std::mutex> l(L.mu);
    RunState& r = L.runs[get_handle().get()];
    r.run = L.next_run++;
    for (auto& [i, a] : r.args) {
      if (!a.bo) continue;
      auto b = L.by_id.find(static_cast<long long>(a.v));
      if (b != L.by_id.end()) look(L, *b->second);
    }
    L.begin("{\"e\":\"start\",\"run\":").num(r.run).str(",\"k\":").num(r.kernel).str(",\"args\":[");
    bool first = true;
    for (auto& [i, a] : r.args) {
      L.str(first ? "{\"" : ",{\"")
          .str(a.bo ? "bo\":" : "v\":")
          .num(a.v)
          .str(",\"i\":")
          .num(i)
          .str("}");
      first = false;
    }
    L.end("]}");
    if (shadowing()) {
      shadow_run(L, r);
      r.sh.reset();  // the program's kernel and BOs are not kept past the start
    }
    L.flush();  // the run may never come back
  }
  fn(this);
}

ert_cmd_state xrt::run::wait(const std::chrono::milliseconds& timeout) const {
  Guard g;
  BOD_REAL(ert_cmd_state(*)(const run*, const std::chrono::milliseconds&),
           "_ZNK3xrt3run4waitERKNSt6chrono8durationIlSt5ratioILl1ELl1000EEEE");
  ert_cmd_state s = fn(this, timeout);
  if (!g.outer) return s;
  Log& L = log();
  std::lock_guard<std::mutex> l(L.mu);
  auto it = L.runs.find(get_handle().get());
  L.begin("{\"e\":\"wait\",\"run\":")
      .num(it == L.runs.end() ? 0 : it->second.run)
      .str(",\"state\":")
      .num(static_cast<int>(s))
      .end("}");
  return s;
}

// ---- endings that skip the exit handlers -------------------------------------------------
// _exit, _Exit and the exec family end the process image without the atexit handler that writes
// the buffered lines (a sync from the device and a read after the last run start, the evidence
// of unsynced-read): each writes them, then forwards to the real function with the same
// arguments. A kill cannot be caught: what it cuts off is lost, as a torn spool line of the
// Python recorder is.
namespace {

void write_before_the_end() {
  Log& L = log();
  std::unique_lock<std::mutex> g(L.mu, std::try_to_lock);  // never wait for another thread
  if (g.owns_lock()) L.flush();
}

template <class F>
F next_fn(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// A variadic exec's arguments after `arg0`, up to the null that ends them (and for execle the
// environment after it), gathered on this function's stack (alloca: no heap in a vfork child)
// and handed to `forward(argv, envp)`, which this function returns from.
template <class Forward>
int exec_list(const char* arg0, va_list ap, bool with_env, Forward forward) {
  va_list count;
  va_copy(count, ap);
  size_t n = 0;
  while (va_arg(count, char*)) ++n;
  va_end(count);
  auto** v = static_cast<char**>(alloca((n + 2) * sizeof(char*)));
  v[0] = const_cast<char*>(arg0);
  for (size_t i = 1; i <= n + 1; ++i) v[i] = va_arg(ap, char*);  // the null last
  char* const* envp = with_env ? va_arg(ap, char* const*) : nullptr;
  return forward(v, envp);
}

}  // namespace

extern "C" {

__attribute__((noreturn)) void _exit(int status) {
  write_before_the_end();
  next_fn<void (*)(int)>("_exit")(status);
  __builtin_unreachable();
}

__attribute__((noreturn)) void _Exit(int status) noexcept {
  write_before_the_end();
  next_fn<void (*)(int)>("_Exit")(status);
  __builtin_unreachable();
}

int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  write_before_the_end();
  return next_fn<int (*)(const char*, char* const*, char* const*)>("execve")(path, argv, envp);
}

int execv(const char* path, char* const argv[]) noexcept {
  write_before_the_end();
  return next_fn<int (*)(const char*, char* const*)>("execv")(path, argv);
}

int execvp(const char* file, char* const argv[]) noexcept {
  write_before_the_end();
  return next_fn<int (*)(const char*, char* const*)>("execvp")(file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  write_before_the_end();
  return next_fn<int (*)(const char*, char* const*, char* const*)>("execvpe")(file, argv, envp);
}

int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  write_before_the_end();
  return next_fn<int (*)(int, char* const*, char* const*)>("fexecve")(fd, argv, envp);
}

int execl(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  int r = exec_list(arg, ap, false, [&](char* const* v, char* const*) { return execv(path, v); });
  va_end(ap);
  return r;
}

int execlp(const char* file, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  int r = exec_list(arg, ap, false, [&](char* const* v, char* const*) { return execvp(file, v); });
  va_end(ap);
  return r;
}

int execle(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  int r = exec_list(arg, ap, true,
                    [&](char* const* v, char* const* envp) { return execve(path, v, envp); });
  va_end(ap);
  return r;
}

}  // extern "C"
