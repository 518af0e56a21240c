// What the native recorder's files (fast_ext.cpp, fast_slots.cpp, fast_bos.cpp) share: an owned
// reference and the table of names each file interns once at module init.
#pragma once

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#include <Python.h>

#include <cstddef>

namespace bod_fast {

// An owned reference, released at scope end.
struct Ref {
  PyObject* p = nullptr;
  Ref() = default;
  explicit Ref(PyObject* o) : p(o) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Py_XDECREF(p); }
  PyObject* get() const { return p; }
  PyObject* release() {
    PyObject* o = p;
    p = nullptr;
    return o;
  }
  void reset(PyObject* o) {
    Py_XDECREF(p);
    p = o;
  }
  explicit operator bool() const { return p != nullptr; }
};

// v as 16 lower-case hex digits at out (no terminator): the trace's hash text.
inline void hex16(unsigned long long v, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i) {
    out[i] = digits[v & 15];
    v >>= 4;
  }
}

// A name a file interns once: where it keeps it, and its text.
struct Interned {
  PyObject** slot;
  const char* text;
};

// Interns every name of a table not interned yet; false with an error set.
template <size_t N>
bool intern_all(const Interned (&names)[N]) {
  for (const Interned& n : names)
    if (!*n.slot && !(*n.slot = PyUnicode_InternFromString(n.text))) return false;
  return true;
}

}  // namespace bod_fast
