// _bod_fast's BO table reads (tool/recorder/python/bo_doctor/_bos.py BoTable): `identity`,
// `known_hash` and `remember` on the table's own dicts and sets, step for step as the Python
// methods do them, and `pre_reads`, the BOs read before a call (_capture.py `pre_loop`).
#include "fast_bos.h"

#include <algorithm>

#include "fast_common.h"

namespace {

using bod_fast::Interned;
using bod_fast::Ref;

PyObject* g_reuse = nullptr;
PyObject* g_viewed = nullptr;
PyObject* g_known = nullptr;
PyObject* g_assumed = nullptr;
PyObject* g_ids = nullptr;
PyObject* g_address = nullptr;
PyObject* g_size = nullptr;
PyObject* g_hash = nullptr;
PyObject* g_bytes = nullptr;
PyObject* g_source = nullptr;
PyObject* g_placeholder = nullptr;
PyObject* g_view = nullptr;

const Interned kInterned[] = {
    {&g_reuse, "reuse"},
    {&g_viewed, "viewed"},
    {&g_known, "known"},
    {&g_assumed, "assumed"},
    {&g_ids, "_ids"},
    {&g_address, "address"},
    {&g_size, "size"},
    {&g_hash, "hash"},
    {&g_bytes, "bytes"},
    {&g_source, "source"},
    {&g_placeholder, "placeholder"},
    {&g_view, "view"},
};

}  // namespace

bool BoTableView::open(PyObject* table) {
  Ref r(PyObject_GetAttr(table, g_reuse));
  if (!r) return false;
  reuse = PyObject_IsTrue(r.get());
  if (reuse < 0) return false;
  viewed = PyObject_GetAttr(table, g_viewed);
  known = viewed ? PyObject_GetAttr(table, g_known) : nullptr;
  assumed = known ? PyObject_GetAttr(table, g_assumed) : nullptr;
  ids = assumed ? PyObject_GetAttr(table, g_ids) : nullptr;
  if (!ids) return false;
  // The types the Python methods' operations assume: anything else is the caller's to do.
  exact = PySet_CheckExact(viewed) && PyDict_CheckExact(known) && PySet_CheckExact(assumed) &&
          (ids == Py_None || PyDict_CheckExact(ids));
  return true;
}

BoTableView::~BoTableView() {
  Py_XDECREF(viewed);
  Py_XDECREF(known);
  Py_XDECREF(assumed);
  Py_XDECREF(ids);
}

// _identity(bo): (int(bo.address()), int(bo.size())), None when bo raises an Exception.
static PyObject* bo_identity_of(PyObject* bo) {
  Ref a(PyObject_CallMethodObjArgs(bo, g_address, nullptr));
  Ref ai(a ? PyNumber_Long(a.get()) : nullptr);
  Ref s(ai ? PyObject_CallMethodObjArgs(bo, g_size, nullptr) : nullptr);
  Ref si(s ? PyNumber_Long(s.get()) : nullptr);
  if (!si) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;
    PyErr_Clear();
    return Py_NewRef(Py_None);
  }
  return PyTuple_Pack(2, ai.get(), si.get());
}

PyObject* BoTableView::identity(PyObject* bo) {
  if (ids == Py_None) return bo_identity_of(bo);
  Ref id(PyLong_FromVoidPtr(bo));
  if (!id) return nullptr;
  PyObject* got = PyDict_GetItemWithError(ids, id.get());  // borrowed
  if (!got && PyErr_Occurred()) return nullptr;
  if (got && PyTuple_Check(got) && PyTuple_Size(got) == 2 && PyTuple_GetItem(got, 0) == bo)
    return Py_NewRef(PyTuple_GetItem(got, 1));
  Ref ident(bo_identity_of(bo));
  if (!ident) return nullptr;
  Ref entry(PyTuple_Pack(2, bo, ident.get()));
  if (!entry || PyDict_SetItem(ids, id.get(), entry.get()) < 0) return nullptr;
  return ident.release();
}

PyObject* BoTableView::known_hash(PyObject* bo, PyObject* nbytes) {
  if (!reuse) return Py_NewRef(Py_None);
  Ref id(PyLong_FromVoidPtr(bo));
  if (!id) return nullptr;
  int v = PySet_Contains(viewed, id.get());
  if (v < 0) return nullptr;
  if (v) return Py_NewRef(Py_None);
  PyObject* k = PyDict_GetItemWithError(known, id.get());  // borrowed
  if (!k) return PyErr_Occurred() ? nullptr : Py_NewRef(Py_None);
  Ref held(Py_NewRef(k));  // identity() runs Python code
  Ref hashes(PySequence_GetItem(k, 1));
  if (!hashes) return nullptr;
  int has = PySequence_Contains(hashes.get(), nbytes);
  if (has < 0) return nullptr;
  if (!has) return Py_NewRef(Py_None);
  Ref k0(PySequence_GetItem(k, 0));
  Ref ident(k0 ? identity(bo) : nullptr);
  if (!ident) return nullptr;
  int same = PyObject_RichCompareBool(k0.get(), ident.get(), Py_EQ);
  if (same < 0) return nullptr;
  if (!same) return Py_NewRef(Py_None);
  return PyObject_GetItem(hashes.get(), nbytes);
}

int BoTableView::remember(PyObject* bo, PyObject* nbytes, PyObject* h, PyObject* no_hash) {
  if (!reuse) return 0;
  int none = PyObject_RichCompareBool(h, no_hash, Py_EQ);
  if (none) return none < 0 ? -1 : 0;
  Ref ident(identity(bo));
  Ref id(ident ? PyLong_FromVoidPtr(bo) : nullptr);
  if (!id) return -1;
  PyObject* k = PyDict_GetItemWithError(known, id.get());  // borrowed
  if (!k && PyErr_Occurred()) return -1;
  Ref entry(k ? Py_NewRef(k) : nullptr);
  int same = 0;
  if (entry) {
    Ref k0(PySequence_GetItem(entry.get(), 0));
    if (!k0) return -1;
    same = PyObject_RichCompareBool(k0.get(), ident.get(), Py_NE);
    if (same < 0) return -1;
    same = !same;
  }
  if (!same) {
    Ref fresh(PyDict_New());
    Ref made(fresh ? PyTuple_Pack(2, ident.get(), fresh.get()) : nullptr);
    if (!made || PyDict_SetItem(known, id.get(), made.get()) < 0) return -1;
    entry.reset(made.release());
  }
  Ref hashes(PySequence_GetItem(entry.get(), 1));
  if (!hashes) return -1;
  return PyObject_SetItem(hashes.get(), nbytes, h);
}

// pre_reads(hosts, bos, written, static, inter, outs, new_data, pooled, lazy, left_ok, reuse,
//           table, left_verified, ns, key, sampled, pre, unread_before, left, assumed_before,
//           NO_HASH) -> the number of known hashes reused, or None (nothing done) for a table
//           whose state is not of BoTable's types: _capture.py `pre_loop`, step for step.
PyObject* fast_pre_reads(PyObject*, PyObject* args) {
  PyObject *hosts, *bos, *written, *statics, *inter, *outs, *new_data, *pooled, *table,
      *left_verified, *ns, *key, *pre, *unread_before, *left, *assumed_before, *no_hash;
  int lazy = 0, left_ok = 0, reuse = 0, sampled = 0;
  if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!pppOOOOpO!O!O!O!O", &PyList_Type, &hosts,
                        &PyList_Type, &bos, &PyList_Type, &written, &PySet_Type, &statics,
                        &PySet_Type, &inter, &PySet_Type, &outs, &PySet_Type, &new_data,
                        &PySet_Type, &pooled, &lazy, &left_ok, &reuse, &table, &left_verified, &ns,
                        &key, &sampled, &PyDict_Type, &pre, &PyList_Type, &unread_before,
                        &PySet_Type, &left, &PyList_Type, &assumed_before, &no_hash))
    return nullptr;
  BoTableView t;
  if (!t.open(table)) return nullptr;
  if (!t.exact) Py_RETURN_NONE;
  Ref hash_fn(PyObject_GetAttr(table, g_hash));
  Ref sync_kw(hash_fn ? Py_BuildValue("{s:O}", "sync", Py_True) : nullptr);
  if (!sync_kw) return nullptr;
  long long reused = 0;
  const Py_ssize_t n = std::min(PyList_Size(hosts), PyList_Size(bos));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* h = PyList_GetItem(hosts, i);  // borrowed: the caller's list holds it
    Ref source(h ? PyObject_GetAttr(h, g_source) : nullptr);
    if (!source) return nullptr;
    int ph = PyObject_RichCompareBool(source.get(), g_placeholder, Py_EQ);
    PyObject* written_i = ph < 0 ? nullptr : PyList_GetItem(written, i);
    int w = written_i ? PyObject_IsTrue(written_i) : -1;
    if (w < 0) return nullptr;
    if (w && !ph) continue;
    // The engine's list: another thread's call may change it while Python code runs here (an
    // index gone raises IndexError, as bos[i] does in the Python loop)
    PyObject* bo_i = PyList_GetItem(bos, i);
    if (!bo_i) return nullptr;
    Ref bo(Py_NewRef(bo_i));
    Ref index(PyLong_FromSsize_t(i));
    Ref extent;
    if (ph) {
      Ref size(index ? PyObject_CallMethodObjArgs(bo.get(), g_size, nullptr) : nullptr);
      extent.reset(size ? PyNumber_Long(size.get()) : nullptr);
    } else {
      extent.reset(index ? PyObject_GetAttr(h, g_bytes) : nullptr);
    }
    Ref known(extent ? t.known_hash(bo.get(), extent.get()) : nullptr);
    if (!known) return nullptr;
    const bool is_known = known.get() != Py_None;
    if (!ph && (!is_known || (left_ok && reuse)) && (lazy || left_ok)) {
      // i in inter and i not in static, outs, new_data; not a view; its BO in no pool
      int skip = PySet_Contains(inter, index.get());
      for (PyObject* s : {statics, outs, new_data})
        if (skip > 0) skip = PySet_Contains(s, index.get()) > 0 ? 0 : PyErr_Occurred() ? -1 : 1;
      if (skip > 0) skip = PyObject_RichCompareBool(source.get(), g_view, Py_NE);
      if (skip > 0) {
        Ref id(PyLong_FromVoidPtr(bo.get()));
        int in_pool = id ? PySet_Contains(pooled, id.get()) : -1;
        skip = in_pool < 0 ? -1 : !in_pool;
      }
      if (skip < 0) return nullptr;
      if (skip && is_known) {  // --shadow: the key's previous leftover, its hash known (read)
        if (PySet_Add(left, index.get()) < 0) return nullptr;
        skip = 0;
      } else if (skip && !lazy) {  // --shadow: the previous leftover, unread once shown harmless
        if (PySet_Add(left, index.get()) < 0) return nullptr;
        Ref ok(PyObject_CallFunctionObjArgs(left_verified, ns, key, index.get(),
                                            sampled ? Py_True : Py_False, nullptr));
        skip = ok ? PyObject_IsTrue(ok.get()) : -1;
        if (skip < 0) return nullptr;
      }
      if (skip) {
        if (PyDict_SetItem(pre, index.get(), no_hash) < 0 ||
            PyList_Append(unread_before, index.get()) < 0)
          return nullptr;
        continue;
      }
    }
    if (known.get() != Py_None) {
      Ref id(PyLong_FromVoidPtr(bo.get()));
      int a = id ? PySet_Contains(t.assumed, id.get()) : -1;
      if (a < 0 || (a && PyList_Append(assumed_before, index.get()) < 0)) return nullptr;
    }
    if (known.get() != Py_None && reuse) {
      ++reused;
      if (PyDict_SetItem(pre, index.get(), known.get()) < 0) return nullptr;
    } else {
      Ref pargs(PyTuple_Pack(2, bo.get(), extent.get()));
      Ref got(pargs ? PyObject_Call(hash_fn.get(), pargs.get(), sync_kw.get()) : nullptr);
      if (!got || PyDict_SetItem(pre, index.get(), got.get()) < 0) return nullptr;
    }
  }
  return PyLong_FromLongLong(reused);
}

bool fast_bos_init() {
  return bod_fast::intern_all(kInterned);
}
