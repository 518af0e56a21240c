// The spool file written through a shared mapping of it (_spool.py): a block of spool lines is
// copied into a window of the file mapped into memory, so that a call's lines cost no system
// call. The window's blocks are reserved with fallocate(2) before it is mapped, so a full disk
// is an error here (OSError), never a SIGBUS in the program. The file then ends in zero bytes
// after its last line until `record` reads it; the spool reader stops at the first zero byte
// (tool/trace/spool.cpp), and a line cut off by a kill is dropped there as before. The mapping
// outlives the descriptor: only a window's reservation uses it, after checking that it still
// names the spool file (device and inode). Where the file system cannot reserve blocks
// (fallocate unsupported) or the file cannot be mapped, the blocks are written with write(2),
// the descriptor checked before each, as before.
//
// A window is at most kWindow bytes plus a block (the file's pages in the process's RSS).
// Callers hold the spool's lock; a forked child unmaps its copy of its parent's window
// (spool_unmap) before it writes a spool of its own.
#include "fast_spool.h"

#include "fast_common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it (EINVAL): no harm
#endif

namespace {

constexpr size_t kWindow = size_t{4} << 20;  // bytes mapped at once
constexpr size_t kPage = 4096;

struct Mapped {
  unsigned long long dev = 0, ino = 0;  // the file mapped (0, 0: none yet)
  char* base = nullptr;                 // the window: file bytes [start, start + len)
  size_t start = 0, len = 0;
  size_t used = 0;     // the file's bytes written (the next block goes there)
  bool plain = false;  // written with write(2) (no reservation or mapping here)
};

std::unordered_map<long, Mapped> g_spools;  // handle -> its state
long g_next = 1;

bool names(int fd, unsigned long long dev, unsigned long long ino, struct stat* st) {
  return fstat(fd, st) == 0 && static_cast<unsigned long long>(st->st_dev) == dev &&
         static_cast<unsigned long long>(st->st_ino) == ino;
}

void unmap(Mapped& m) {
  if (m.base) munmap(m.base, m.len);
  m.base = nullptr;
  m.start = m.len = 0;
}

// All of [p, p + n) with write(2); 0 or an errno.
int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return 0;
}

// A window holding [m.used, m.used + need): 0, or an errno (ENOTSUP: use write(2) instead, the
// file as it was).
int new_window(Mapped& m, int fd, size_t need) {
  const size_t start = m.used & ~(kPage - 1);
  const size_t len = (m.used - start + need + kWindow - 1) / kWindow * kWindow;
  struct stat st;
  if (fstat(fd, &st) != 0) return errno;
  const size_t size = static_cast<size_t>(st.st_size);
  if (fallocate(fd, 0, static_cast<off_t>(start), static_cast<off_t>(len)) != 0) {
    const int e = errno;
    return e == EOPNOTSUPP || e == ENOSYS ? ENOTSUP : e;
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  if (p == MAP_FAILED) {
    const int e = errno;
    // The zeros just reserved past the written bytes taken back: write(2) goes on there.
    if (size <= m.used && ftruncate(fd, static_cast<off_t>(m.used)) == 0) return ENOTSUP;
    return e;
  }
  unmap(m);
  m.base = static_cast<char*>(p);
  m.start = start;
  m.len = len;
  madvise(p, len, MADV_POPULATE_WRITE);  // its pages made now, not faulted in line by line
  return 0;
}

}  // namespace

PyObject* fast_spool_map(PyObject*, PyObject*) {
  const long h = g_next++;
  g_spools[h] = Mapped{};
  return PyLong_FromLong(h);
}

PyObject* fast_spool_unmap(PyObject*, PyObject* arg) {
  const long h = PyLong_AsLong(arg);
  if (h == -1 && PyErr_Occurred()) return nullptr;
  auto it = g_spools.find(h);
  if (it != g_spools.end()) {
    unmap(it->second);
    g_spools.erase(it);
  }
  Py_RETURN_NONE;
}

PyObject* fast_spool_put(PyObject*, PyObject* args) {
  long h = 0;
  int fd = 0;
  unsigned long long dev = 0, ino = 0;
  PyObject* text = nullptr;
  if (!PyArg_ParseTuple(args, "liKKU", &h, &fd, &dev, &ino, &text)) return nullptr;
  auto it = g_spools.find(h);
  if (it == g_spools.end()) {
    PyErr_SetString(PyExc_ValueError, "spool_put: no such spool");
    return nullptr;
  }
  Mapped& m = it->second;
  Py_ssize_t len = 0;
  const char* p = PyUnicode_AsUTF8AndSize(text, &len);
  if (!p) return nullptr;
  for (Py_ssize_t i = 0; i < len; ++i)
    if (static_cast<unsigned char>(p[i]) >= 0x80 || p[i] == 0) {
      PyErr_SetString(PyExc_ValueError, "spool_put: the text is not ASCII without NUL");
      return nullptr;
    }
  const size_t n = static_cast<size_t>(len);
  // The usual block: into the window, no system call.
  if (m.base && m.dev == dev && m.ino == ino && m.used + n <= m.start + m.len) {
    std::memcpy(m.base + (m.used - m.start), p, n);
    m.used += n;
    Py_RETURN_TRUE;
  }
  int err = 0;
  bool ours = false;
  Py_BEGIN_ALLOW_THREADS;
  struct stat st;
  ours = names(fd, dev, ino, &st);
  if (ours && (m.dev != dev || m.ino != ino)) {  // a file not mapped yet: from its end on
    unmap(m);
    m.dev = dev;
    m.ino = ino;
    m.used = static_cast<size_t>(st.st_size);
    m.plain = false;
  }
  if (ours && !m.plain) {
    err = new_window(m, fd, n);
    if (err == ENOTSUP) {
      m.plain = true;
      err = 0;
    } else if (!err) {
      std::memcpy(m.base + (m.used - m.start), p, n);
      m.used += n;
    }
  }
  if (ours && m.plain && !err) {
    err = write_all(fd, p, n);
    if (!err) m.used += n;
  }
  Py_END_ALLOW_THREADS;
  if (err) {
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyBool_FromLong(ours);
}
