// _bod_fast's `slots`: the slot loop of a call's line after the engine ran
// (tool/recorder/python/bo_doctor/_capture.py, CallCapture._after): each argument's Slot, with
// its BO's placement, what the call wrote into it and its hash before the dispatch, in one call.
// It does what the Python loop does, step for step, for the calls it knows exactly (a list of
// the key's own BOs, no shared pool, every written array no larger than its BO); for any other
// it returns the list of the BO sizes it asked so far, before anything of the slot it cannot do
// is changed: the Python loop then does the call with those sizes (what it repeats of the
// slots before, a placement looked up or kept, is the same, and no BO is asked twice).
#include "fast_slots.h"

#include "fast_bos.h"
#include "fast_common.h"

namespace {

using bod_fast::Interned;
using bod_fast::Ref;

PyObject* g_static_text = nullptr;
PyObject* g_intermediate_text = nullptr;
PyObject* g_input_text = nullptr;
PyObject* g_key_text = nullptr;
PyObject* g_unbound_text = nullptr;
PyObject* g_placeholder = nullptr;
PyObject* g_bytes_name = nullptr;
PyObject* g_source_name = nullptr;
PyObject* g_size_name = nullptr;
PyObject* g_reuse_name = nullptr;
PyObject* g_bo_name = nullptr;
PyObject* g_host_name = nullptr;
PyObject* g_pool_name = nullptr;
PyObject* g_view_text = nullptr;
PyObject* g_hash_name = nullptr;
PyObject* g_remember_name = nullptr;
PyObject* g_assumed_name = nullptr;
PyObject* g_changed_name = nullptr;
PyObject* g_add_name = nullptr;
PyObject* g_spot_name = nullptr;
PyObject* g_keep_name = nullptr;
PyObject* g_sync_name = nullptr;

const Interned kInterned[] = {
    {&g_static_text, "static"},   {&g_intermediate_text, "intermediate"},
    {&g_input_text, "input"},     {&g_key_text, "key"},
    {&g_unbound_text, "unbound"}, {&g_placeholder, "placeholder"},
    {&g_hash_name, "hash"},       {&g_bytes_name, "bytes"},
    {&g_source_name, "source"},   {&g_size_name, "size"},
    {&g_reuse_name, "reuse"},     {&g_bo_name, "bo"},
    {&g_host_name, "host"},       {&g_pool_name, "pool"},
    {&g_view_text, "view"},       {&g_remember_name, "remember"},
    {&g_assumed_name, "assumed"}, {&g_changed_name, "changed"},
    {&g_add_name, "add"},         {&g_spot_name, "spot"},
    {&g_keep_name, "keep"},       {&g_sync_name, "sync"},
};

// A call's `sampled` (_capture.py): a skipped static slot assumed, spot-checked or read whole.
enum Sampled { kNotSampled = 0, kSpot = 1, kRead = 2 };

// table.spot(bo, extent, before) (_capture.py `_spot`): 1 when the spot check found the bytes
// read before, 0 when it did not or the table has no spot checks, -1 with an error set.
int spot_check(PyObject* table, PyObject* bo, PyObject* extent, PyObject* before) {
  Ref spot(PyObject_GetAttr(table, g_spot_name));
  if (!spot) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
  }
  Ref got(PyObject_CallFunctionObjArgs(spot.get(), bo, extent, before, nullptr));
  return got ? PyObject_IsTrue(got.get()) : -1;
}

// A Python int as a long long; false (no error set) when it is not an exact int or does not fit.
bool as_ll(PyObject* o, long long* v) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  *v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (*v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  return true;
}

struct SlotsArgs {
  PyObject* hosts;    // list of Host
  PyObject* bos;      // list: the key's BOs
  PyObject* statics;  // set
  PyObject* inter;    // set
  PyObject* outs;     // set
  PyObject* written;  // list of bool
  PyObject* pre;      // dict slot -> hash before the dispatch
  int alias_error;
  PyObject* ns;          // str
  PyObject* keytext;     // str
  PyObject* first;       // int: the key's first call
  PyObject* n;           // int: this call
  PyObject* key_places;  // list: slot -> Placement or None
  PyObject* places;      // dict (ns, key text, slot, bytes, first call) -> Placement
  PyObject* firsts;      // dict (ns, pool, name, index) -> first call
  PyObject* slot_cls;
  PyObject* placement_cls;
  PyObject* no_hash;
};

// The key's own Placement of slot i with a BO of `size` bytes (a new reference), as the Python
// loop finds or makes it; nullptr with an error set.
PyObject* key_placement(const SlotsArgs& a, PyObject* index, Py_ssize_t i, PyObject* size) {
  const Py_ssize_t kept = PyList_Size(a.key_places);
  if (i < kept) {
    PyObject* place = PyList_GetItem(a.key_places, i);  // borrowed
    if (!place) return nullptr;
    if (place != Py_None) {
      Ref bytes(PyObject_GetAttr(place, g_bytes_name));
      if (!bytes) return nullptr;
      int ne = PyObject_RichCompareBool(bytes.get(), size, Py_NE);
      if (ne < 0) return nullptr;
      if (!ne) return Py_NewRef(place);
    }
  }
  Ref fk(PyTuple_Pack(4, a.ns, g_key_text, a.keytext, index));
  if (!fk) return nullptr;
  PyObject* bo_first = PyDict_GetItemWithError(a.firsts, fk.get());  // borrowed
  if (!bo_first) {
    if (PyErr_Occurred() || PyDict_SetItem(a.firsts, fk.get(), a.n) < 0) return nullptr;
    bo_first = a.n;
  }
  Ref held_first(Py_NewRef(bo_first));
  Ref mk(PyTuple_Pack(5, a.ns, a.keytext, index, size, bo_first));
  if (!mk) return nullptr;
  PyObject* found = PyDict_GetItemWithError(a.places, mk.get());  // borrowed
  Ref place;
  if (found) {
    place.reset(Py_NewRef(found));
  } else {
    if (PyErr_Occurred()) return nullptr;
    place.reset(PyObject_CallFunctionObjArgs(a.placement_cls, a.ns, g_key_text, a.keytext, index,
                                             size, bo_first, nullptr));
    if (!place || PyDict_SetItem(a.places, mk.get(), place.get()) < 0) return nullptr;
  }
  for (Py_ssize_t k = PyList_Size(a.key_places); k <= i; ++k)
    if (PyList_Append(a.key_places, Py_None) < 0) return nullptr;
  if (PyList_SetItem(a.key_places, i, Py_NewRef(place.get())) < 0) return nullptr;
  return place.release();
}

// Whether x is in the set s: 1, 0, or -1 with an error set.
int in(PyObject* s, PyObject* x) {
  return PySet_Contains(s, x);
}

}  // namespace

// slots(hosts, bos, static, inter, outs, written, pre, alias_error, ns, key text, first, n,
//       key_places, places, firsts, Slot, Placement, NO_HASH) -> (slots, bound, h2d, writes),
// or the BO sizes asked so far (a list) where the Python loop must do the call.
PyObject* fast_slots(PyObject*, PyObject* args) {
  SlotsArgs a{};
  if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!pUUO!O!O!O!O!OOU", &PyList_Type, &a.hosts,
                        &PyList_Type, &a.bos, &PySet_Type, &a.statics, &PySet_Type, &a.inter,
                        &PySet_Type, &a.outs, &PyList_Type, &a.written, &PyDict_Type, &a.pre,
                        &a.alias_error, &a.ns, &a.keytext, &PyLong_Type, &a.first, &PyLong_Type,
                        &a.n, &PyList_Type, &a.key_places, &PyDict_Type, &a.places, &PyDict_Type,
                        &a.firsts, &a.slot_cls, &a.placement_cls, &a.no_hash))
    return nullptr;
  const Py_ssize_t n_args = PyList_Size(a.hosts);
  const Py_ssize_t n_bos = PyList_Size(a.bos);
  // The sizes asked of the BOs so far: what a decline hands the Python loop, which then asks
  // no BO twice
  Ref sizes(PyList_New(0)), slots(PyList_New(0)), bound(PyList_New(0));
  if (!sizes || !slots || !bound) return nullptr;
  if (PyList_Size(a.written) != n_args) return sizes.release();
  long long h2d = 0, writes = 0;
  for (Py_ssize_t i = 0; i < n_args; ++i) {
    Ref index(PyLong_FromSsize_t(i));
    if (!index) return nullptr;
    PyObject* h = PyList_GetItem(a.hosts, i);  // borrowed: the caller's list holds it
    if (!h) return nullptr;
    int is_static = in(a.statics, index.get());
    int is_inter = is_static ? 0 : in(a.inter, index.get());
    int is_out = in(a.outs, index.get());
    if (is_static < 0 || is_inter < 0 || is_out < 0) return nullptr;
    PyObject* role = is_static ? g_static_text : is_inter ? g_intermediate_text : g_input_text;
    PyObject* out = is_out ? Py_True : Py_False;
    Ref hhash(PyObject_GetAttr(h, g_hash_name));
    if (!hhash) return nullptr;
    if (i >= n_bos) {  // no BO for it: unbound, 0 bytes
      Ref zero(PyLong_FromLong(0));
      if (!zero) return nullptr;
      Ref place(PyObject_CallFunctionObjArgs(a.placement_cls, a.ns, g_unbound_text, a.keytext,
                                             index.get(), zero.get(), a.first, nullptr));
      Ref reuse(place ? PyList_New(2) : nullptr);
      if (!reuse) return nullptr;
      PyList_SetItem(reuse.get(), 0, Py_NewRef(hhash.get()));
      PyList_SetItem(reuse.get(), 1, Py_NewRef(hhash.get()));
      Ref s(PyObject_CallFunctionObjArgs(a.slot_cls, role, out, h, place.get(), zero.get(),
                                         Py_False, zero.get(), a.no_hash, reuse.get(), nullptr));
      if (!s || PyList_Append(slots.get(), s.get()) < 0) return nullptr;
      continue;
    }
    // The engine's list: another thread's call may change it while Python code runs here, so
    // an index gone raises IndexError, as bos[i] does in the Python loop.
    PyObject* bo = PyList_GetItem(a.bos, i);  // borrowed; held below while Python runs
    if (!bo) return nullptr;
    Ref held_bo(Py_NewRef(bo));
    Ref size_got(PyObject_CallMethodObjArgs(bo, g_size_name, nullptr));
    if (!size_got) return nullptr;
    Ref size(PyNumber_Long(size_got.get()));  // int(bo.size())
    if (!size || PyList_Append(sizes.get(), size.get()) < 0) return nullptr;
    long long size_v = 0, hb = 0;
    Ref hbytes(PyObject_GetAttr(h, g_bytes_name));
    if (!hbytes) return nullptr;
    if (!as_ll(size.get(), &size_v) || !as_ll(hbytes.get(), &hb)) return sizes.release();
    PyObject* written_i = PyList_GetItem(a.written, i);
    int wrote = written_i ? PyObject_IsTrue(written_i) : -1;
    if (wrote < 0) return nullptr;
    wrote = wrote && !a.alias_error;
    // Larger than its BO: the Python loop hashes the array and the BO
    if (wrote && hb > size_v) return sizes.release();
    Ref place(key_placement(a, index.get(), i, size.get()));
    if (!place) return nullptr;
    Ref source(PyObject_GetAttr(h, g_source_name));
    if (!source) return nullptr;
    int ph = PyUnicode_Check(source.get()) && PyUnicode_Compare(source.get(), g_placeholder) == 0;
    if (PyErr_Occurred()) return nullptr;
    Ref nb(wrote ? Py_NewRef(hbytes.get()) : PyLong_FromLong(0));
    if (!nb) return nullptr;
    PyObject* wh = wrote ? hhash.get() : a.no_hash;
    if (wrote) {
      h2d += hb;
      writes += 1;
    }
    // The BO's hash before the dispatch, as the Python loop takes it
    PyObject* before = nullptr;  // borrowed
    int in_pre = PyDict_Contains(a.pre, index.get());
    if (in_pre < 0) return nullptr;
    if (ph && in_pre) {
      before = PyDict_GetItemWithError(a.pre, index.get());
    } else if (wrote) {
      before = wh;
    } else if (in_pre) {
      before = PyDict_GetItemWithError(a.pre, index.get());
    } else {
      before = hhash.get();
    }
    if (!before) return nullptr;
    Ref reuse(PyList_New(2));
    if (!reuse) return nullptr;
    PyList_SetItem(reuse.get(), 0, Py_NewRef(before));
    PyList_SetItem(reuse.get(), 1, Py_NewRef(a.no_hash));
    Ref s(PyObject_CallFunctionObjArgs(a.slot_cls, role, out, h, place.get(), size.get(),
                                       wrote ? Py_True : Py_False, nb.get(), wh, reuse.get(),
                                       nullptr));
    if (!s || PyList_Append(slots.get(), s.get()) < 0) return nullptr;
    PyObject* extent = ph ? size.get() : hbytes.get();
    Ref b(PyTuple_Pack(6, index.get(), s.get(), bo, extent, wrote ? Py_True : Py_False,
                       ph ? Py_True : Py_False));
    if (!b || PyList_Append(bound.get(), b.get()) < 0) return nullptr;
  }
  return Py_BuildValue("(OOLL)", slots.get(), bound.get(), h2d, writes);
}

namespace {

// Whether o equals the str s: 1, 0, or -1 with an error set (o's own == for a str subclass or
// another type, as Python's == would).
int str_eq(PyObject* o, PyObject* s) {
  return PyObject_RichCompareBool(o, s, Py_EQ);
}

// Whether the bool or int o, from the Python caller, is true: as PyObject_IsTrue.
int truth(PyObject* o) {
  return PyObject_IsTrue(o);
}

// (a, b) of bools
PyObject* pair(bool a, bool b) {
  return PyTuple_Pack(2, a ? Py_True : Py_False, b ? Py_True : Py_False);
}

}  // namespace

// after(bound, outs, static, lazy_call, sampled, error, table, missed_open, ns, bo_key, assumed,
//       unread_after, assumed_before, n, NO_HASH) -> changes: _capture.py `after_loop`, step for
// step (the BO table's hash and spot called as they are there, its remember too unless
// native_table); sampled an int (NOT_SAMPLED, SPOT or READ).
PyObject* fast_after(PyObject*, PyObject* args) {
  PyObject *bound, *outs, *statics, *table, *missed_open, *ns, *bo_key, *assumed, *unread_after,
      *assumed_before, *n, *no_hash;
  int lazy_call = 0, sampled = 0, error = 0, native_table = 0;
  if (!PyArg_ParseTuple(args, "O!O!O!pipOOOOO!O!OOOp", &PyList_Type, &bound, &PySet_Type, &outs,
                        &PySet_Type, &statics, &lazy_call, &sampled, &error, &table, &missed_open,
                        &ns, &bo_key, &PyList_Type, &assumed, &PyList_Type, &unread_after,
                        &assumed_before, &n, &no_hash, &native_table))
    return nullptr;
  // The table's remember done here (native_table: the table is the recorder's BoTable)
  BoTableView t;
  if (native_table && !t.open(table)) return nullptr;
  const bool own_remember = native_table && t.exact;
  Ref changes(PyDict_New());
  Ref hash_fn(changes ? PyObject_GetAttr(table, g_hash_name) : nullptr);
  Ref remember(hash_fn ? PyObject_GetAttr(table, g_remember_name) : nullptr);
  Ref table_assumed(remember ? PyObject_GetAttr(table, g_assumed_name) : nullptr);
  Ref changed(table_assumed ? PyObject_GetAttr(table, g_changed_name) : nullptr);
  if (!changes || !changed) return nullptr;
  Ref zero(PyLong_FromLong(0)), one(PyLong_FromLong(1));
  if (!zero || !one) return nullptr;
  const Py_ssize_t count = PyList_Size(bound);
  for (Py_ssize_t k = 0; k < count; ++k) {
    PyObject* got_entry = PyList_GetItem(bound, k);
    if (!got_entry) return nullptr;
    Ref entry(Py_NewRef(got_entry));                     // held: Python code runs below
    PyObject *index, *s, *bo, *extent, *wrote_o, *ph_o;  // borrowed from entry
    if (!PyArg_ParseTuple(entry.get(), "OOOOOO", &index, &s, &bo, &extent, &wrote_o, &ph_o))
      return nullptr;
    const int wrote = truth(wrote_o), ph = truth(ph_o);
    if (wrote < 0 || ph < 0) return nullptr;
    Ref reuse(PyObject_GetAttr(s, g_reuse_name));
    Ref before(reuse ? PyObject_GetItem(reuse.get(), zero.get()) : nullptr);
    if (!before) return nullptr;
    // lazy = lazy_call and i not in outs and s.bo.pool == "key" and s.host.source != "view"
    int lazy = lazy_call;
    if (lazy) {
      int r = PySet_Contains(outs, index);
      if (r < 0) return nullptr;
      lazy = !r;
    }
    if (lazy) {
      Ref place(PyObject_GetAttr(s, g_bo_name));
      Ref pool(place ? PyObject_GetAttr(place.get(), g_pool_name) : nullptr);
      int r = pool ? str_eq(pool.get(), g_key_text) : -1;
      if (r < 0) return nullptr;
      lazy = r;
    }
    if (lazy) {
      Ref host(PyObject_GetAttr(s, g_host_name));
      Ref source(host ? PyObject_GetAttr(host.get(), g_source_name) : nullptr);
      int r = source ? PyObject_RichCompareBool(source.get(), g_view_text, Py_NE) : -1;
      if (r < 0) return nullptr;
      lazy = r;
    }
    int is_static = PySet_Contains(statics, index);
    if (is_static < 0) return nullptr;
    int before_read = PyObject_RichCompareBool(before.get(), no_hash, Py_NE);
    if (before_read < 0) return nullptr;
    Ref after;
    int assume = lazy && is_static && !wrote && sampled != kRead && before_read;
    if (assume && sampled != kNotSampled) {
      assume = spot_check(table, bo, extent, before.get());
      if (assume < 0) return nullptr;
    }
    if (assume) {
      // A skipped static slot between its key's sampled calls, or whose spot check found the
      // bytes read before: not read again.
      after.reset(Py_NewRef(before.get()));
      if (PyList_Append(assumed, index) < 0) return nullptr;
    } else {
      int unread = lazy && !ph && !is_static;
      if (unread && missed_open != Py_None) {
        Ref open(PyObject_CallFunctionObjArgs(missed_open, ns, bo_key, index, nullptr));
        int r = open ? truth(open.get()) : -1;
        if (r < 0) return nullptr;
        unread = !r;
      }
      if (unread) {  // read before the next call that needs its bytes, not now
        after.reset(Py_NewRef(no_hash));
        if (PyList_Append(unread_after, index) < 0) return nullptr;
      } else if (error) {
        after.reset(Py_NewRef(before.get()));
      } else {
        int in_outs = PySet_Contains(outs, index);
        if (in_outs < 0) return nullptr;
        // keep: a static slot the call did not write, its chunks kept for its spot checks
        Ref kw(PyDict_New());
        if (!kw || PyDict_SetItem(kw.get(), g_sync_name, in_outs ? Py_False : Py_True) < 0 ||
            (is_static && !wrote && PyDict_SetItem(kw.get(), g_keep_name, Py_True) < 0))
          return nullptr;
        Ref pargs(kw ? PyTuple_Pack(2, bo, extent) : nullptr);
        after.reset(pargs ? PyObject_Call(hash_fn.get(), pargs.get(), kw.get()) : nullptr);
        if (!after) return nullptr;
      }
    }
    if (PyObject_SetItem(reuse.get(), one.get(), after.get()) < 0) return nullptr;
    int after_read = PyObject_RichCompareBool(after.get(), no_hash, Py_NE);
    if (after_read < 0) return nullptr;
    Ref id(PyLong_FromVoidPtr(bo));  // id(bo)
    if (!id) return nullptr;
    if (!error && after_read) {
      if (own_remember) {
        if (t.remember(bo, extent, after.get(), no_hash) < 0) return nullptr;
      } else {
        Ref r(PyObject_CallFunctionObjArgs(remember.get(), bo, extent, after.get(), nullptr));
        if (!r) return nullptr;
      }
      // i in assumed or i in assumed_before and after == before and not sampled
      int add = PySequence_Contains(assumed, index);
      if (add < 0) return nullptr;
      if (!add) {
        add = PySequence_Contains(assumed_before, index);
        if (add > 0) add = PyObject_RichCompareBool(after.get(), before.get(), Py_EQ);
        if (add > 0) add = sampled == kNotSampled;
        if (add < 0) return nullptr;
      }
      if (add) {  // table.assumed.add(id(bo))
        if (own_remember) {
          if (PySet_Add(table_assumed.get(), id.get()) < 0) return nullptr;
        } else {
          Ref r(PyObject_CallMethodObjArgs(table_assumed.get(), g_add_name, id.get(), nullptr));
          if (!r) return nullptr;
        }
      }
    }
    int kernel_changed = before_read && after_read;
    if (kernel_changed) {
      kernel_changed = PyObject_RichCompareBool(after.get(), before.get(), Py_NE);
      if (kernel_changed < 0) return nullptr;
    }
    if ((wrote || kernel_changed) && PyObject_SetItem(changed.get(), id.get(), n) < 0)
      return nullptr;
    PyObject* got = PyDict_GetItemWithError(changes.get(), id.get());  // borrowed
    if (!got && PyErr_Occurred()) return nullptr;
    bool w = wrote, c = kernel_changed;
    if (got) {
      int g0 = truth(PyTuple_GetItem(got, 0)), g1 = truth(PyTuple_GetItem(got, 1));
      if (g0 < 0 || g1 < 0) return nullptr;
      w = g0 || wrote;
      c = g1 || kernel_changed;
    }
    Ref value(pair(w, c));
    if (!value || PyDict_SetItem(changes.get(), id.get(), value.get()) < 0) return nullptr;
  }
  return changes.release();
}

bool fast_slots_init() {
  return bod_fast::intern_all(kInterned);
}
