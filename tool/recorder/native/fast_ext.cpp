// _bod_fast: the Python recorder's spool serializer in C++, a CPython extension module built
// against the stable ABI of Python 3.11 (abi3: one build loads into 3.11, 3.12, 3.13 ...). The
// recorder loads it from the folder of libbod_hash.so and falls back to its Python serializer
// where it does not load (Python 3.10, no headers at build time) or BOD_RECORD_NO_FAST=1
// (tool/recorder/python/bo_doctor/_fast.py).
//
// line(record) writes a spool record (a dataclass of _records.py, registered with its field
// names) as the one line of compact JSON `_records.reference_line` writes for it, byte for
// byte, for the values it knows exactly: str of ASCII text, int, bool, None, finite and
// non-finite float, list and tuple, dict with str keys, registered dataclasses (fields equal
// to OMIT left out). For anything else (a subclass, a numpy integer, non-ASCII text, nesting
// deeper than 64) it returns None and the caller writes the line the Python way.
//
// facts(x, limit) gives in one call what the recorder's `describe` reads of a numpy array (its
// dtype, size, shape, data address, flags) and, for a C-contiguous array of fewer than `limit`
// bytes, its trace hash (core/hash.h, the code libbod_hash.so and bo-doctor hash with).
//
// hash_buffer(obj, limit) hashes the first bytes of a BO's mapping where it lies;
// block_hashes(obj, block) an array's memory by blocks, as a returned view is compared.
//
// write(fd, dev, ino, data) appends a block of spool lines to the spool file, after checking
// that the descriptor still names it (tool/recorder/python/bo_doctor/_spool.py).
//
// Everything here only reads the objects and bytes it is given, but `write`, which writes the
// recorder's own spool file.
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/hash.h"
#include "fast_bos.h"
#include "fast_common.h"
#include "fast_slots.h"

namespace {

using bod_fast::Interned;

struct Field {
  PyObject* name;   // interned attribute name (a reference held)
  std::string key;  // "\"name\":"
};

struct Type {
  std::vector<Field> fields;
  bool frozen = false;  // instances never change: each one's text is kept (g_texts)
};

std::unordered_map<PyObject*, Type> g_types;  // registered dataclass types
// The text of instances of frozen types, by identity; each holds a reference to its instance,
// so no other object can take its address while it is here.
std::unordered_map<PyObject*, std::string> g_texts;
constexpr size_t kMaxTexts = 1 << 14;
PyObject* g_omit = nullptr;
PyObject* g_ndarray = nullptr;  // numpy.ndarray (set_ndarray)
// Interned attribute names and texts, made once at module init from kInterned
PyObject* g_dict_name = nullptr;
PyObject* g_flags_name = nullptr;
PyObject* g_dtype_name = nullptr;
PyObject* g_strides_name = nullptr;
PyObject* g_c_contiguous_name = nullptr;
PyObject* g_view_text = nullptr;
PyObject* g_placeholder_text = nullptr;
PyObject* g_tensor_text = nullptr;
PyObject* g_var_text = nullptr;
PyObject* g_i8_text = nullptr;
PyObject* g_call_name = nullptr;
PyObject* g_slot_name = nullptr;
PyObject* g_by_id_name = nullptr;
PyObject* g_keys_name = nullptr;
PyObject* g_spans_name = nullptr;
PyObject* g_longest_name = nullptr;
PyObject* g_ref_name = nullptr;
PyObject* g_base_name = nullptr;
PyObject* g_find_name = nullptr;

const Interned kInterned[] = {
    {&g_dict_name, "__dict__"},
    {&g_flags_name, "flags"},
    {&g_dtype_name, "dtype"},
    {&g_strides_name, "strides"},
    {&g_c_contiguous_name, "c_contiguous"},
    {&g_view_text, "view"},
    {&g_placeholder_text, "placeholder"},
    {&g_tensor_text, "tensor"},
    {&g_var_text, "var"},
    {&g_i8_text, "i8"},
    {&g_call_name, "call"},
    {&g_slot_name, "slot"},
    {&g_by_id_name, "by_id"},
    {&g_keys_name, "_keys"},
    {&g_spans_name, "_spans"},
    {&g_longest_name, "_longest"},
    {&g_ref_name, "ref"},
    {&g_base_name, "base"},
    {&g_find_name, "find"},
};

constexpr int kMaxDepth = 64;
const char kHex[] = "0123456789abcdef";

// str as JSON text the way json's encode_basestring_ascii writes it; false when it is not
// ASCII (the Python path handles that: lone surrogates become \xNN text there).
bool put_str(std::string& out, PyObject* s) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s, &n);
  if (!p) {
    PyErr_Clear();
    return false;
  }
  out.push_back('"');
  for (Py_ssize_t i = 0; i < n; ++i) {
    // A run of characters written as they are, appended at once
    Py_ssize_t j = i;
    while (j < n && p[j] >= ' ' && p[j] <= '~' && p[j] != '\\' && p[j] != '"') ++j;
    if (j > i) {
      out.append(p + i, static_cast<size_t>(j - i));
      i = j - 1;
      continue;
    }
    auto c = static_cast<unsigned char>(p[i]);
    if (c >= 0x80) return false;
    out.push_back('\\');
    static const char kFrom[] = "\\\"\n\r\t\b\f", kTo[] = "\\\"nrtbf";
    if (const char* e = c ? std::strchr(kFrom, c) : nullptr) {
      out.push_back(kTo[e - kFrom]);
    } else {
      out += "u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  out.push_back('"');
  return true;
}

// The repr of an object appended (int beyond 64 bits, finite float); false on error.
bool put_repr(std::string& out, PyObject* v) {
  PyObject* r = PyObject_Repr(v);
  if (!r) {
    PyErr_Clear();
    return false;
  }
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(r, &n);
  bool ok = p != nullptr;
  if (ok)
    out.append(p, static_cast<size_t>(n));
  else
    PyErr_Clear();
  Py_DECREF(r);
  return ok;
}

bool put(std::string& out, PyObject* v, int depth);

bool put_seq(std::string& out, PyObject* v, bool list, int depth) {
  Py_ssize_t n = list ? PyList_Size(v) : PyTuple_Size(v);
  out.push_back('[');
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (i) out.push_back(',');
    PyObject* e = list ? PyList_GetItem(v, i) : PyTuple_GetItem(v, i);  // borrowed
    if (!e) {
      PyErr_Clear();
      return false;
    }
    // A list may change under us only if encoding runs Python code, which it never does here
    // (no __repr__ of a user type is called: such values are refused first).
    Py_INCREF(e);
    bool ok = put(out, e, depth + 1);
    Py_DECREF(e);
    if (!ok) return false;
  }
  out.push_back(']');
  return true;
}

bool put_dict(std::string& out, PyObject* v, int depth) {
  Py_ssize_t pos = 0;
  PyObject *k = nullptr, *e = nullptr;
  bool first = true;
  out.push_back('{');
  while (PyDict_Next(v, &pos, &k, &e)) {
    if (!PyUnicode_CheckExact(k)) return false;
    if (!first) out.push_back(',');
    first = false;
    if (!put_str(out, k)) return false;
    out.push_back(':');
    Py_INCREF(e);
    bool ok = put(out, e, depth + 1);
    Py_DECREF(e);
    if (!ok) return false;
  }
  out.push_back('}');
  return true;
}

bool put_fields(std::string& out, PyObject* v, const std::vector<Field>& fields, int depth) {
  out.push_back('{');
  bool first = true;
  // A field is read from the instance's __dict__ where it is there (what getattr gives for a
  // registered dataclass, which has no descriptor of a field's name), else with getattr.
  PyObject* dict = PyObject_GetAttr(v, g_dict_name);
  if (dict && !PyDict_CheckExact(dict)) Py_CLEAR(dict);
  if (!dict) PyErr_Clear();
  for (const Field& f : fields) {
    PyObject* e = dict ? PyDict_GetItemWithError(dict, f.name) : nullptr;  // borrowed
    if (e)
      Py_INCREF(e);
    else if (PyErr_Occurred())
      PyErr_Clear();
    if (!e) e = PyObject_GetAttr(v, f.name);
    if (!e) {
      PyErr_Clear();
      Py_XDECREF(dict);
      return false;
    }
    bool ok = true;
    if (e != g_omit) {
      if (!first) out.push_back(',');
      first = false;
      out += f.key;
      ok = put(out, e, depth + 1);
    }
    Py_DECREF(e);
    if (!ok) {
      Py_XDECREF(dict);
      return false;
    }
  }
  Py_XDECREF(dict);
  out.push_back('}');
  return true;
}

bool put(std::string& out, PyObject* v, int depth) {
  if (depth > kMaxDepth) return false;
  if (PyUnicode_CheckExact(v)) return put_str(out, v);
  if (PyBool_Check(v)) {
    out += v == Py_True ? "true" : "false";
    return true;
  }
  if (PyLong_CheckExact(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return put_repr(out, v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out += std::to_string(x);
    return true;
  }
  if (v == Py_None) {
    out += "null";
    return true;
  }
  if (PyList_CheckExact(v)) return put_seq(out, v, true, depth);
  if (PyTuple_CheckExact(v)) return put_seq(out, v, false, depth);
  auto it = g_types.find(reinterpret_cast<PyObject*>(Py_TYPE(v)));
  if (it != g_types.end()) {
    if (!it->second.frozen) return put_fields(out, v, it->second.fields, depth);
    auto kept = g_texts.find(v);
    if (kept != g_texts.end()) {
      out += kept->second;
      return true;
    }
    const size_t from = out.size();
    if (!put_fields(out, v, it->second.fields, depth)) return false;
    if (g_texts.emplace(v, out.substr(from)).second) Py_INCREF(v);
    return true;
  }
  if (PyDict_CheckExact(v)) return put_dict(out, v, depth);
  if (PyFloat_CheckExact(v)) {
    double d = PyFloat_AsDouble(v);
    if (d != d)
      out += "\"nan\"";
    else if (d == __builtin_inf())
      out += "\"inf\"";
    else if (d == -__builtin_inf())
      out += "\"-inf\"";
    else
      return put_repr(out, v);
    return true;
  }
  return false;
}

// Drops the kept texts and the references to their instances.
void drop_texts() {
  std::vector<PyObject*> held;
  held.reserve(g_texts.size());
  for (auto& kv : g_texts) held.push_back(kv.first);
  g_texts.clear();
  for (PyObject* o : held) Py_DECREF(o);
}

PyObject* fast_line(PyObject*, PyObject* record) {
  // Before writing, so that nothing is freed while a line is being written
  if (g_texts.size() >= kMaxTexts) drop_texts();
  std::string out;  // (its own: a line() the collector runs meanwhile writes its own)
  out.reserve(8192);

  if (!put(out, record, 0)) Py_RETURN_NONE;
  return PyUnicode_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

// register(cls, names, omit, frozen=False): cls's instances are written as objects of the
// fields `names` (a tuple of str, in order); a field whose value is `omit` is left out. frozen:
// its instances never change (a frozen dataclass of immutable values): the text of each is
// made once and kept while it is in use.
PyObject* fast_register(PyObject*, PyObject* args) {
  PyObject *cls = nullptr, *names = nullptr, *omit = nullptr;
  int frozen = 0;
  if (!PyArg_ParseTuple(args, "OO!O|p", &cls, &PyTuple_Type, &names, &omit, &frozen))
    return nullptr;
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "register: cls must be a type");
    return nullptr;
  }
  std::vector<Field> fields;
  for (Py_ssize_t i = 0; i < PyTuple_Size(names); ++i) {
    PyObject* name = PyTuple_GetItem(names, i);
    std::string key;
    if (!name || !PyUnicode_CheckExact(name) || !put_str(key, name)) {
      PyErr_SetString(PyExc_TypeError, "register: field names must be ASCII str");
      return nullptr;
    }
    fields.push_back({name, key + ":"});
  }
  for (Field& f : fields) Py_INCREF(f.name);
  if (g_types.find(cls) == g_types.end()) Py_INCREF(cls);  // kept registered for good
  Py_XDECREF(g_omit);
  Py_INCREF(omit);
  g_omit = omit;
  auto& slot = g_types[cls];
  for (Field& f : slot.fields) Py_DECREF(f.name);
  slot.fields = std::move(fields);
  slot.frozen = frozen != 0;
  drop_texts();  // texts kept so far may have been made with other fields
  Py_RETURN_NONE;
}

// The named attribute as a C bool; -1 on error.
int attr_bool(PyObject* o, PyObject* name) {
  PyObject* v = PyObject_GetAttr(o, name);
  if (!v) return -1;
  int r = PyObject_IsTrue(v);
  Py_DECREF(v);
  return r;
}

// What describe reads of an exact numpy.ndarray: its dtype and shape (new references), its
// memory (the buffer is held until the object goes), flags and element count.
struct ArrayFacts {
  PyObject* dtype = nullptr;
  PyObject* shape = nullptr;  // list of int
  Py_buffer view{};
  bool held = false;  // view holds a buffer
  bool c_contig = false, zs = false;
  long long size = 1;
  ArrayFacts() = default;
  ArrayFacts(const ArrayFacts&) = delete;
  ArrayFacts& operator=(const ArrayFacts&) = delete;
  ~ArrayFacts() {
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    if (held) PyBuffer_Release(&view);
  }
  uintptr_t address() const { return reinterpret_cast<uintptr_t>(view.buf); }
};

// Reads x's facts; false (no error set) when x is not exactly a numpy.ndarray whose memory the
// buffer protocol exposes, or numpy says something unexpected (the caller reads it in Python).
bool read_facts(PyObject* x, ArrayFacts& f) {
  if (!g_ndarray || reinterpret_cast<PyObject*>(Py_TYPE(x)) != g_ndarray) return false;
  // No format asked for (numpy refuses one for datetimes and user dtypes such as bfloat16): the
  // address, length and shape are all that is read of the buffer; strides come from the array,
  // as describe reads them (numpy exports other strides for an array of 0 elements).
  if (PyObject_GetBuffer(x, &f.view, PyBUF_STRIDES) != 0) {
    PyErr_Clear();
    return false;
  }
  f.held = true;
  // Each step only once the ones before it worked (no call made with an error pending)
  PyObject* flags = PyObject_GetAttr(x, g_flags_name);
  PyObject* strides = flags ? PyObject_GetAttr(x, g_strides_name) : nullptr;
  f.dtype = strides ? PyObject_GetAttr(x, g_dtype_name) : nullptr;
  f.shape = f.dtype ? PyList_New(f.view.ndim) : nullptr;
  int c_contig = f.shape ? attr_bool(flags, g_c_contiguous_name) : -1;
  bool ok = c_contig >= 0 && PyTuple_Check(strides) && PyTuple_Size(strides) == f.view.ndim;
  for (int i = 0; ok && i < f.view.ndim; ++i) {
    PyObject* d = PyLong_FromSsize_t(f.view.shape[i]);
    ok = d != nullptr && PyList_SetItem(f.shape, i, d) == 0;  // steals d
    f.size *= f.view.shape[i];
    if (ok && f.view.shape[i] > 1) {
      Py_ssize_t st = PyLong_AsSsize_t(PyTuple_GetItem(strides, i));
      if (st == -1 && PyErr_Occurred()) ok = false;  // a stride that is no int (numpy gives ints)
      if (st == 0) f.zs = true;
    }
  }
  f.c_contig = c_contig > 0;
  Py_XDECREF(strides);
  Py_XDECREF(flags);
  PyErr_Clear();
  return ok;
}

// facts(x, limit) -> (dtype, nbytes, shape list, data address, c_contiguous, zero_strides,
// size, trace hash or None), or None when x is not exactly a numpy.ndarray whose memory the
// buffer protocol exposes (the caller then reads it the Python way).
PyObject* fast_facts(PyObject*, PyObject* args) {
  PyObject* x = nullptr;
  Py_ssize_t limit = 0;
  if (!PyArg_ParseTuple(args, "On", &x, &limit)) return nullptr;
  ArrayFacts f;
  if (!read_facts(x, f)) Py_RETURN_NONE;
  PyObject* h = nullptr;
  if (f.c_contig && f.view.len < limit)
    h = PyLong_FromUnsignedLongLong(bod::hash_bytes(f.view.buf, static_cast<size_t>(f.view.len)));
  else
    h = Py_NewRef(Py_None);
  PyObject* out =
      h ? Py_BuildValue("(OnOKOOLN)", f.dtype, f.view.len, f.shape,
                        static_cast<unsigned long long>(f.address()),
                        f.c_contig ? Py_True : Py_False, f.zs ? Py_True : Py_False, f.size, h)
        : nullptr;
  if (!out) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  return out;
}

// --- describe: the host side of a call's arguments (_capture.py `describe`) -------------------

// dtype -> (trace name or None, str(dtype), hasobject), as the recorder's dtype_info gave it;
// both held. Dropped all at once beyond kMaxDtypes.
std::unordered_map<PyObject*, PyObject*> g_dtype_infos;
constexpr size_t kMaxDtypes = 4096;

// The (trace name or None, str(dtype), hasobject) of a dtype (a new reference), through
// dtype_info once per dtype object; nullptr with an error set.
PyObject* dtype_info_of(PyObject* dtype, PyObject* dtype_info) {
  auto it = g_dtype_infos.find(dtype);
  if (it != g_dtype_infos.end()) return Py_NewRef(it->second);
  PyObject* info = PyObject_CallFunctionObjArgs(dtype_info, dtype, nullptr);
  if (!info) return nullptr;
  if (!PyTuple_Check(info) || PyTuple_Size(info) != 3) {
    Py_DECREF(info);
    PyErr_SetString(PyExc_TypeError, "describe: dtype_info must give a 3-tuple");
    return nullptr;
  }
  if (g_dtype_infos.size() >= kMaxDtypes) {
    std::vector<std::pair<PyObject*, PyObject*>> held(g_dtype_infos.begin(), g_dtype_infos.end());
    g_dtype_infos.clear();
    for (auto& kv : held) {
      Py_DECREF(kv.first);
      Py_DECREF(kv.second);
    }
  }
  Py_INCREF(dtype);
  g_dtype_infos.emplace(dtype, Py_NewRef(info));
  return info;
}

// What v.ref() gives (a new reference; Py_None when its array died), nullptr on error.
PyObject* referent(PyObject* v) {
  PyObject* ref = PyObject_GetAttr(v, g_ref_name);
  if (!ref) return nullptr;
  PyObject* r = PyObject_CallNoArgs(ref);
  Py_DECREF(ref);
  return r;
}

// An address or end held by a Python int; false (no error set) when it holds none.
bool address_of(PyObject* o, unsigned long long* out) {
  *out = PyLong_AsUnsignedLongLong(o);
  if (*out == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// The View x (an exact ndarray of at least one element at address p) is, is made from or lies
// in the memory of, as ViewTable.find gives it, read from the table's indexes (_views.py): a
// new reference (Py_None: none), nullptr with an error set. Where an index is not as expected
// (the longest view's length not known, an entry that is no address), the table's find answers.
//
// index: the table's indexes, read once per describe call (ViewIndex::read).
struct ViewIndex {
  PyObject* by_id = nullptr;  // each a new reference, or nullptr
  PyObject* keys = nullptr;
  PyObject* spans = nullptr;
  PyObject* longest = nullptr;
  ViewIndex() = default;
  ViewIndex(const ViewIndex&) = delete;
  ViewIndex& operator=(const ViewIndex&) = delete;
  ~ViewIndex() {
    Py_XDECREF(by_id);
    Py_XDECREF(keys);
    Py_XDECREF(spans);
    Py_XDECREF(longest);
  }
  // false with an error set
  bool read(PyObject* table) {
    by_id = PyObject_GetAttr(table, g_by_id_name);
    keys = by_id ? PyObject_GetAttr(table, g_keys_name) : nullptr;
    spans = keys ? PyObject_GetAttr(table, g_spans_name) : nullptr;
    longest = spans ? PyObject_GetAttr(table, g_longest_name) : nullptr;
    return longest != nullptr;
  }
};

PyObject* find_view(const ViewIndex& index, PyObject* table, PyObject* x, uintptr_t p) {
  PyObject* by_id = index.by_id;
  if (!PyDict_Check(by_id))  // not as expected: the table's own way
    return PyObject_CallMethodObjArgs(table, g_find_name, x, nullptr);
  // The array, or an array it is made from, as a call returned it
  PyObject* b = Py_NewRef(x);
  PyObject* found = nullptr;
  bool failed = false;
  while (!failed) {
    int is_array = PyObject_IsInstance(b, g_ndarray);
    if (is_array <= 0) {
      failed = is_array < 0;
      break;
    }
    PyObject* id = PyLong_FromVoidPtr(b);
    PyObject* v = id ? PyDict_GetItemWithError(by_id, id) : nullptr;  // borrowed
    Py_XDECREF(id);
    if (v) {
      PyObject* r = referent(v);
      if (!r) failed = true;
      if (r == b) found = Py_NewRef(v);
      Py_XDECREF(r);
    } else if (PyErr_Occurred()) {
      failed = true;
    }
    if (found || failed) break;
    PyObject* base = PyObject_GetAttr(b, g_base_name);
    Py_DECREF(b);
    b = base;
    if (!b) failed = true;
  }
  Py_XDECREF(b);
  if (failed) {
    Py_XDECREF(found);
    return nullptr;
  }
  if (found) return found;
  PyObject *keys = index.keys, *spans = index.spans, *longest = index.longest;
  PyObject* out = nullptr;
  unsigned long long span = 0;
  if (!PyList_CheckExact(keys) || !PyList_CheckExact(spans) ||
      PyList_Size(keys) != PyList_Size(spans) || !address_of(longest, &span)) {
    out = PyObject_CallMethodObjArgs(table, g_find_name, x, nullptr);  // the table's own way
  } else {
    // The views that start at or before p and less than the longest view's length before it
    // (keys: (start, serial), sorted); of those holding p, the latest call's, the first
    // returned among equals.
    const Py_ssize_t n = PyList_Size(keys);
    bool bad = false;
    auto first_above = [&](unsigned long long at) {  // the first key whose start is above at
      Py_ssize_t lo = 0, hi = n;
      while (lo < hi && !bad) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        PyObject* k = PyList_GetItem(keys, mid);
        unsigned long long start = 0;
        if (!PyTuple_Check(k) || PyTuple_Size(k) != 2 || !address_of(PyTuple_GetItem(k, 0), &start))
          bad = true;
        else if (start <= at)
          lo = mid + 1;
        else
          hi = mid;
      }
      return lo;
    };
    const Py_ssize_t hi = first_above(p);
    const Py_ssize_t lo = p >= span ? first_above(p - span) : 0;  // else every view from the first
    PyObject* best = nullptr;                                     // borrowed from spans
    long long best_serial = 0;
    bool error = false;
    for (Py_ssize_t k = lo; !bad && !error && k < hi; ++k) {
      PyObject* e = PyList_GetItem(spans, k);
      unsigned long long end = 0;
      if (!PyTuple_Check(e) || PyTuple_Size(e) != 3 || !address_of(PyTuple_GetItem(e, 0), &end)) {
        bad = true;
        break;
      }
      if (p >= end) continue;
      long long serial = PyLong_AsLongLong(PyTuple_GetItem(e, 1));
      if (serial == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        bad = true;
        break;
      }
      PyObject* v = PyTuple_GetItem(e, 2);
      PyObject* r = referent(v);
      if (!r) {
        error = true;
        break;
      }
      bool alive = r != Py_None;
      Py_DECREF(r);
      if (!alive) continue;
      bool better = best == nullptr;
      if (!better) {
        PyObject* call = PyObject_GetAttr(v, g_call_name);
        PyObject* best_call = call ? PyObject_GetAttr(best, g_call_name) : nullptr;
        int gt = best_call ? PyObject_RichCompareBool(call, best_call, Py_GT) : -1;
        int eq = gt == 0 ? PyObject_RichCompareBool(call, best_call, Py_EQ) : 0;
        Py_XDECREF(call);
        Py_XDECREF(best_call);
        if (gt < 0 || eq < 0) {
          error = true;
          break;
        }
        better = gt == 1 || (eq == 1 && serial < best_serial);
      }
      if (better) {
        best = v;
        best_serial = serial;
      }
    }
    if (error)
      out = nullptr;
    else if (bad)
      out = PyObject_CallMethodObjArgs(table, g_find_name, x, nullptr);
    else
      out = Py_NewRef(best ? best : Py_None);
  }
  return out;
}

struct DescribeArgs {
  PyObject* statics;     // the call's static slots (a set)
  bool is_new;           // the key's first call
  long layer;            // the bo_key's layer, or -1
  Py_ssize_t limit;      // arrays below this many bytes are hashed here
  PyObject* views;       // the ViewTable, or None when it tracks no view
  ViewIndex* index;      // its indexes (read when views is not None)
  PyObject* dtype_info;  // dtype -> (trace name or None, str(dtype), hasobject)
  PyObject* hostx;       // dict (numpy dtype name, c_contiguous, zero_strides) -> HostX
  PyObject* make_hostx;  // (numpy dtype name, c_contiguous, zero_strides) -> HostX, kept
  PyObject* host_cls;    // _records.Host
  // (array, data address) -> the trace hash (str) of a C-contiguous array of at least `limit`
  // bytes (HostHashes.hash, which reads only what can have changed and counts what it reads);
  // nullptr: the Python describe does those arrays
  PyObject* large = nullptr;
};

PyObject* describe_array(const DescribeArgs& d, PyObject* x, Py_ssize_t i, const ArrayFacts& f,
                         PyObject* info, bool* placeholder, PyObject** view_out,
                         unsigned long long* hashed);

// Texts and HostX values describe gives again and again, kept (never changed once made: the
// same value is shared, as the Python describe shares its HostX per value). Each table is
// dropped whole beyond kMaxKept entries.
constexpr size_t kMaxKept = 65536;

// "arg<i>@L<layer>", or "arg<i>" for layer -1: the binding name of slot i (a new reference).
std::unordered_map<unsigned long long, PyObject*> g_arg_names;

PyObject* arg_name(Py_ssize_t i, long layer) {
  const bool keep = i >= 0 && i < (1 << 20) && layer >= -1 && layer < (1L << 40);
  const unsigned long long k =
      keep ? static_cast<unsigned long long>(layer + 1) << 20 | static_cast<unsigned long long>(i)
           : 0;
  if (keep) {
    auto it = g_arg_names.find(k);
    if (it != g_arg_names.end()) return Py_NewRef(it->second);
  }
  PyObject* name = layer >= 0 ? PyUnicode_FromFormat("arg%zd@L%ld", i, layer)
                              : PyUnicode_FromFormat("arg%zd", i);
  if (name && keep) {
    if (g_arg_names.size() >= kMaxKept) {
      for (auto& kv : g_arg_names) Py_DECREF(kv.second);
      g_arg_names.clear();
    }
    g_arg_names.emplace(k, Py_NewRef(name));
  }
  return name;
}

// The HostX of (numpy dtype name, c_contiguous, zero_strides) (a new reference): the one the
// recorder keeps for that value (its hostx dict, else make_hostx makes and keeps it), looked up
// here once per value. The key holds a reference to the name, so its address is never reused
// while it is kept. nullptr with an error set.
struct HostXKey {
  PyObject* name;
  bool c_contig, zs;
  bool operator==(const HostXKey& o) const {
    return name == o.name && c_contig == o.c_contig && zs == o.zs;
  }
};
struct HostXKeyHash {
  size_t operator()(const HostXKey& k) const {
    return std::hash<const void*>()(k.name) * 4 + (k.c_contig ? 2 : 0) + (k.zs ? 1 : 0);
  }
};
std::unordered_map<HostXKey, PyObject*, HostXKeyHash> g_hostx;

PyObject* host_x(const DescribeArgs& d, PyObject* numpy_name, bool c_contig, bool zs) {
  const HostXKey k{numpy_name, c_contig, zs};
  auto it = g_hostx.find(k);
  if (it != g_hostx.end()) return Py_NewRef(it->second);
  PyObject* key =
      Py_BuildValue("(OOO)", numpy_name, c_contig ? Py_True : Py_False, zs ? Py_True : Py_False);
  PyObject* hx = key ? PyDict_GetItemWithError(d.hostx, key) : nullptr;  // borrowed
  if (hx)
    Py_INCREF(hx);
  else if (key && !PyErr_Occurred())
    hx = PyObject_CallObject(d.make_hostx, key);
  Py_XDECREF(key);
  if (hx) {
    if (g_hostx.size() >= kMaxKept) {
      for (auto& kv : g_hostx) {
        Py_DECREF(kv.first.name);
        Py_DECREF(kv.second);
      }
      g_hostx.clear();
    }
    Py_INCREF(numpy_name);
    g_hostx.emplace(k, Py_NewRef(hx));
  }
  return hx;
}

// The Host of argument i (a new reference), with its placeholder shape and View; Py_None when
// the Python describe must do it (not an exact ndarray, an object dtype, a static array at its
// key's first call that may be an all-zero placeholder, one to hash in Python); nullptr with
// an error set when a callback raised.
PyObject* describe_one(const DescribeArgs& d, PyObject* x, Py_ssize_t i, bool* placeholder,
                       PyObject** view_out, unsigned long long* hashed) {
  ArrayFacts f;
  if (!read_facts(x, f)) Py_RETURN_NONE;
  PyObject* info = dtype_info_of(f.dtype, d.dtype_info);  // a new reference
  if (!info) return nullptr;
  PyObject* host = describe_array(d, x, i, f, info, placeholder, view_out, hashed);
  Py_DECREF(info);
  return host;
}

// describe_one's work once the dtype's (trace name or None, str(dtype), hasobject) is known
PyObject* describe_array(const DescribeArgs& d, PyObject* x, Py_ssize_t i, const ArrayFacts& f,
                         PyObject* info, bool* placeholder, PyObject** view_out,
                         unsigned long long* hashed) {
  int hasobject = PyObject_IsTrue(PyTuple_GetItem(info, 2));
  if (hasobject != 0) {
    if (hasobject < 0) return nullptr;
    Py_RETURN_NONE;
  }
  const Py_ssize_t nbytes = f.view.len;
  const bool large = nbytes >= d.limit;  // hashed by HostHashes (tracked)
  if (!f.c_contig || (large && !d.large)) Py_RETURN_NONE;
  *placeholder = f.size == 0 || f.zs;
  PyObject* view = nullptr;  // new reference, or nullptr: none
  if (d.views != Py_None && f.size != 0) {
    view = find_view(*d.index, d.views, x, f.address());
    if (!view) return nullptr;
    if (view == Py_None) Py_CLEAR(view);
  }
  PyObject *source = nullptr, *name = nullptr, *view_call = nullptr;  // source borrowed
  if (view) {
    PyObject* call = PyObject_GetAttr(view, g_call_name);
    PyObject* slot = call ? PyObject_GetAttr(view, g_slot_name) : nullptr;
    if (slot) name = PyUnicode_FromFormat("view of call %S slot %S", call, slot);
    Py_XDECREF(slot);
    if (!name) {
      Py_XDECREF(call);
      Py_DECREF(view);
      return nullptr;
    }
    source = g_view_text;
    view_call = call;
  } else {
    PyObject* idx = PyLong_FromSsize_t(i);
    int is_static = idx ? PySet_Contains(d.statics, idx) : -1;
    Py_XDECREF(idx);
    if (is_static < 0) return nullptr;
    if (*placeholder)
      source = g_placeholder_text;
    else if (is_static && d.is_new && nbytes >= 64)
      Py_RETURN_NONE;  // maybe an all-zero placeholder: the Python describe reads its bytes
    else
      source = is_static ? g_tensor_text : g_var_text;
    name = arg_name(i, d.layer);
    view_call = PyLong_FromLong(0);
    if (!name || !view_call) {
      Py_XDECREF(name);
      Py_XDECREF(view_call);
      return nullptr;
    }
  }
  PyObject* h = nullptr;
  if (large) {
    PyObject* addr = PyLong_FromUnsignedLongLong(f.address());
    h = addr ? PyObject_CallFunctionObjArgs(d.large, x, addr, nullptr) : nullptr;
    Py_XDECREF(addr);
    if (h && !PyUnicode_Check(h)) {
      Py_CLEAR(h);
      PyErr_SetString(PyExc_TypeError, "describe: the large-array hash must be a str");
    }
  } else {
    char hex[16];
    bod_fast::hex16(bod::hash_bytes(f.view.buf, static_cast<size_t>(nbytes)), hex);
    h = PyUnicode_FromStringAndSize(hex, 16);
  }
  PyObject* numpy_name = PyTuple_GetItem(info, 1);  // borrowed
  PyObject* trace_name = PyTuple_GetItem(info, 0);
  PyObject* hx = h ? host_x(d, numpy_name, f.c_contig, f.zs) : nullptr;
  PyObject* n = PyLong_FromSsize_t(nbytes);
  PyObject* shape = nullptr;
  if (trace_name == Py_None)  // a dtype the format has no name for: described as its bytes
    shape = n ? Py_BuildValue("[O]", n) : nullptr;
  else
    shape = Py_NewRef(f.shape);
  PyObject* host = nullptr;
  if (hx && h && n && shape)
    host = PyObject_CallFunctionObjArgs(d.host_cls, shape,
                                        trace_name == Py_None ? g_i8_text : trace_name, n, h,
                                        source, name, view_call, hx, nullptr);
  Py_XDECREF(shape);
  Py_XDECREF(n);
  Py_XDECREF(h);
  Py_XDECREF(hx);
  Py_DECREF(name);
  Py_DECREF(view_call);
  if (!host) {
    Py_XDECREF(view);
    return nullptr;
  }
  if (!large) *hashed += static_cast<unsigned long long>(nbytes);  // (large: counted by it)
  *view_out = view;  // (the reference passes to the caller)
  return host;
}

// describe(inputs, static, new, layer, limit, views, dtype_info, hostx, make_hostx, Host) ->
// (hosts, placeholder shapes, views, bytes hashed): for each argument its Host (None where the
// Python describe does it), whether its shape is a placeholder's and the View it is (None).
PyObject* fast_describe(PyObject*, PyObject* args) {
  PyObject* inputs = nullptr;
  DescribeArgs d{};
  int is_new = 0;
  if (!PyArg_ParseTuple(args, "O!O!plnOOO!OO|O", &PyList_Type, &inputs, &PySet_Type, &d.statics,
                        &is_new, &d.layer, &d.limit, &d.views, &d.dtype_info, &PyDict_Type,
                        &d.hostx, &d.make_hostx, &d.host_cls, &d.large))
    return nullptr;
  if (d.large == Py_None) d.large = nullptr;
  d.is_new = is_new != 0;
  ViewIndex index;
  if (d.views != Py_None && !index.read(d.views)) return nullptr;
  d.index = &index;
  const Py_ssize_t n = PyList_Size(inputs);
  PyObject* hosts = PyList_New(n);
  PyObject* shapes = PyList_New(n);
  PyObject* views = PyList_New(n);
  unsigned long long hashed = 0;
  bool ok = hosts && shapes && views;
  for (Py_ssize_t i = 0; ok && i < n; ++i) {
    PyObject* x = PyList_GetItem(inputs, i);  // borrowed; held while callbacks run
    Py_XINCREF(x);
    bool placeholder = false;
    PyObject* view = nullptr;
    PyObject* host = x ? describe_one(d, x, i, &placeholder, &view, &hashed) : nullptr;
    Py_XDECREF(x);
    if (!host) {
      ok = false;
      break;
    }
    PyList_SetItem(hosts, i, host);  // steals
    PyList_SetItem(shapes, i, PyBool_FromLong(placeholder && host != Py_None));
    PyList_SetItem(views, i, view ? view : Py_NewRef(Py_None));
  }
  PyObject* out = ok ? Py_BuildValue("(OOOK)", hosts, shapes, views, hashed) : nullptr;
  Py_XDECREF(hosts);
  Py_XDECREF(shapes);
  Py_XDECREF(views);
  return out;
}

// The arguments (obj, a size >= 0 named `what` in the error) of a hashing function and obj's
// contiguous buffer; 0 with the buffer in v, 1 when obj exposes none (the caller returns None
// and the Python code reads it its own way), -1 with an error set.
int hashing_args(PyObject* args, const char* what, Py_buffer* v, Py_ssize_t* size) {
  PyObject* obj = nullptr;
  if (!PyArg_ParseTuple(args, "On", &obj, size)) return -1;
  if (*size < 0) {
    PyErr_Format(PyExc_ValueError, "%s must not be negative", what);
    return -1;
  }
  if (PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) != 0) {
    PyErr_Clear();
    return 1;
  }
  return 0;
}

// f() run with the interpreter's lock let go when it reads n >= 1 MiB bytes: other threads run
// meanwhile, as they did while ctypes hashed (the buffer export keeps the memory alive).
template <class F>
void hash_outside_the_lock(size_t n, F f) {
  if (n < (size_t(1) << 20)) return f();
  PyThreadState* saved = PyEval_SaveThread();
  f();
  PyEval_RestoreThread(saved);
}

// hash_buffer(obj, limit) -> (trace hash, n) of the first n = min(limit, its length) bytes of a
// contiguous buffer, or None when obj exposes none (the caller then reads it the Python way).
PyObject* fast_hash_buffer(PyObject*, PyObject* args) {
  Py_buffer v;
  Py_ssize_t limit = 0;
  if (int r = hashing_args(args, "hash_buffer: the limit", &v, &limit)) {
    if (r < 0) return nullptr;
    Py_RETURN_NONE;
  }
  size_t n = std::min(static_cast<size_t>(v.len), static_cast<size_t>(limit));
  uint64_t h = 0;
  hash_outside_the_lock(n, [&] { h = bod::hash_bytes(v.buf, n); });
  PyBuffer_Release(&v);
  return Py_BuildValue("(KK)", static_cast<unsigned long long>(h),
                       static_cast<unsigned long long>(n));
}

// hash_buffer_chunks(obj, limit) -> (trace hash, n, chunk hashes) as hash_buffer, with the
// hashes of the value's 64 KiB chunks (core's hash_bytes_chunks) in a bytearray of native
// uint64: a later spot check compares one chunk's hash alone. None as hash_buffer.
PyObject* fast_hash_buffer_chunks(PyObject*, PyObject* args) {
  Py_buffer v;
  Py_ssize_t limit = 0;
  if (int r = hashing_args(args, "hash_buffer_chunks: the limit", &v, &limit)) {
    if (r < 0) return nullptr;
    Py_RETURN_NONE;
  }
  size_t n = std::min(static_cast<size_t>(v.len), static_cast<size_t>(limit));
  std::vector<uint64_t> out(bod::hash_chunk_count(n));  // aligned, then copied out
  uint64_t h = 0;
  hash_outside_the_lock(n, [&] { h = bod::hash_bytes_chunks(v.buf, n, out.data()); });
  PyBuffer_Release(&v);
  PyObject* chunks =
      PyByteArray_FromStringAndSize(reinterpret_cast<const char*>(out.data()),
                                    static_cast<Py_ssize_t>(out.size() * sizeof(uint64_t)));
  if (!chunks) return nullptr;
  return Py_BuildValue("(KKN)", static_cast<unsigned long long>(h),
                       static_cast<unsigned long long>(n), chunks);
}

// block_hashes(obj, block): core's hash_blocks of a C-contiguous buffer (as libbod_hash.so's
// bod_block_hashes gives them) in a bytearray of native uint64; None for an object with no such
// buffer (a numpy array that is not C-contiguous).
PyObject* fast_block_hashes(PyObject*, PyObject* args) {
  Py_buffer v;
  Py_ssize_t block = 0;
  if (int r = hashing_args(args, "block_hashes: the block size", &v, &block)) {
    if (r < 0) return nullptr;
    Py_RETURN_NONE;
  }
  if (block == 0) {
    PyBuffer_Release(&v);
    PyErr_SetString(PyExc_ValueError, "block_hashes: the block size must be positive");
    return nullptr;
  }
  const size_t n = static_cast<size_t>(v.len);
  std::vector<uint64_t> h(bod::block_count(n, static_cast<size_t>(block)));
  hash_outside_the_lock(n,
                        [&] { bod::hash_blocks(v.buf, n, static_cast<size_t>(block), h.data()); });
  PyBuffer_Release(&v);
  return PyByteArray_FromStringAndSize(reinterpret_cast<const char*>(h.data()),
                                       static_cast<Py_ssize_t>(h.size() * sizeof(uint64_t)));
}

// write(fd, dev, ino, data) -> True once all of data (bytes, or a str of ASCII text: written from
// its own bytes, not encoded into a copy) is written to fd, False (nothing
// written) when fd no longer names the file (dev, ino): closed or reused by the program. An
// interrupted write is resumed; any other failure raises OSError. The interpreter's lock is let
// go meanwhile, as os.write does.
PyObject* fast_write(PyObject*, PyObject* args) {
  int fd = 0;
  unsigned long long dev = 0, ino = 0;
  PyObject* obj = nullptr;
  if (!PyArg_ParseTuple(args, "iKKO", &fd, &dev, &ino, &obj)) return nullptr;
  Py_buffer data{};
  if (PyUnicode_Check(obj)) {  // ASCII text, written from the str's own bytes (no copy)
    Py_ssize_t len = 0;
    const char* text = PyUnicode_AsUTF8AndSize(obj, &len);
    if (!text) return nullptr;
    // ASCII exactly when its UTF-8 has one byte per character (no loop over the bytes)
    if (PyUnicode_GetLength(obj) != len) {
      PyErr_SetString(PyExc_ValueError, "write: the text is not ASCII");
      return nullptr;
    }
    data.buf = const_cast<char*>(text);
    data.len = len;
  } else if (PyObject_GetBuffer(obj, &data, PyBUF_SIMPLE) != 0) {
    return nullptr;
  }
  const bool release = data.obj != nullptr;  // a buffer taken (released below)
  bool ours = false;
  int err = 0;
  Py_BEGIN_ALLOW_THREADS;
  struct stat st;
  ours = fstat(fd, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
  const char* p = static_cast<const char*>(data.buf);
  size_t left = ours ? static_cast<size_t>(data.len) : 0;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  Py_END_ALLOW_THREADS;
  if (release) PyBuffer_Release(&data);
  if (err) {
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyBool_FromLong(ours);
}

PyObject* fast_set_ndarray(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "set_ndarray: a type is expected");
    return nullptr;
  }
  Py_INCREF(cls);
  Py_XDECREF(g_ndarray);
  g_ndarray = cls;
  Py_RETURN_NONE;
}

// The version of this module's functions; _fast.py loads only the one it was written for.
PyObject* fast_api_version(PyObject*, PyObject*) {
  // 2: block_hashes; 3: write, register(..., frozen), describe; 4: slots, after, pre_reads;
  // 5: hash_buffer_chunks, after's sampled an int (NOT_SAMPLED, SPOT, READ) and table.spot
  return PyLong_FromLong(5);
}

PyMethodDef kMethods[] = {
    {"api_version", fast_api_version, METH_NOARGS, "api_version() -> the module's API version"},
    {"facts", fast_facts, METH_VARARGS,
     "facts(x, limit) -> (dtype, nbytes, shape, address, c_contiguous, zero_strides, size, "
     "hash or None) of an exact numpy.ndarray, else None"},
    {"set_ndarray", fast_set_ndarray, METH_O, "set_ndarray(numpy.ndarray)"},
    {"describe", fast_describe, METH_VARARGS,
     "describe(inputs, static, new, layer, limit, views, dtype_info, hostx, make_hostx, Host, "
     "large=None) -> (hosts, placeholder shapes, views, bytes hashed)"},
    {"hash_buffer", fast_hash_buffer, METH_VARARGS,
     "hash_buffer(obj, limit) -> (trace hash, bytes hashed) of a contiguous buffer, else None"},
    {"hash_buffer_chunks", fast_hash_buffer_chunks, METH_VARARGS,
     "hash_buffer_chunks(obj, limit) -> (trace hash, bytes hashed, bytearray of the 64 KiB "
     "chunks' hashes) of a contiguous buffer, else None"},
    {"block_hashes", fast_block_hashes, METH_VARARGS,
     "block_hashes(obj, block) -> bytearray of the XXH3-64 of each block of a C-contiguous "
     "buffer, else None"},
    {"write", fast_write, METH_VARARGS,
     "write(fd, dev, ino, data) -> True once data (bytes, or ASCII str) is written, False when fd "
     "is not that file"},
    {"line", fast_line, METH_O,
     "line(record) -> the spool line of a record as _records.reference_line writes it, or None "
     "for a value only the Python serializer writes"},
    {"slots", fast_slots, METH_VARARGS,
     "slots(hosts, bos, static, inter, outs, written, pre, alias_error, ns, key text, first, n, "
     "key_places, places, firsts, Slot, Placement, NO_HASH) -> (slots, bound, h2d, writes), or "
     "None"},
    {"after", fast_after, METH_VARARGS,
     "after(bound, outs, static, lazy_call, sampled, error, table, missed_open, ns, bo_key, "
     "assumed, unread_after, assumed_before, n, NO_HASH, native_table) -> {id(bo): (wrote, "
     "kernel changed)}"},
    {"pre_reads", fast_pre_reads, METH_VARARGS,
     "pre_reads(hosts, bos, written, static, inter, outs, new_data, pooled, lazy, left_ok, reuse, "
     "table, left_verified, ns, key, sampled, pre, unread_before, left, assumed_before, NO_HASH) "
     "-> hashes reused, or None"},
    {"register", fast_register, METH_VARARGS,
     "register(cls, names, omit, frozen=False): write cls's instances as objects of these "
     "fields (frozen: each instance's text is kept)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_bod_fast",
                       "bo-doctor's recorder: the spool serializer in C++",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__bod_fast() {
  if (!bod_fast::intern_all(kInterned) || !fast_slots_init() || !fast_bos_init()) return nullptr;
  return PyModule_Create(&kModule);
}
