// _bod_fast's reads of the recorder's BO table (fast_bos.cpp): what _bos.py BoTable's methods
// do, on the table's own dicts and sets.
#pragma once

typedef struct _object PyObject;  // as Python.h declares it

// A BoTable's state, its attributes held while a native loop uses them.
struct BoTableView {
  int reuse = 0;
  PyObject* viewed = nullptr;   // set of id(bo)
  PyObject* known = nullptr;    // dict id(bo) -> (identity, {nbytes: hash})
  PyObject* assumed = nullptr;  // set of id(bo)
  PyObject* ids = nullptr;      // dict id(bo) -> (bo, identity), or None
  bool exact = false;           // every one of them of the type BoTable gives it
  BoTableView() = default;
  BoTableView(const BoTableView&) = delete;
  BoTableView& operator=(const BoTableView&) = delete;
  ~BoTableView();
  // Reads the table's attributes; false with an error set.
  bool open(PyObject* table);
  // BoTable.identity(bo): a new reference, nullptr with an error set.
  PyObject* identity(PyObject* bo);
  // BoTable.known_hash(bo, nbytes): a new reference (None: not known), nullptr on error.
  PyObject* known_hash(PyObject* bo, PyObject* nbytes);
  // BoTable.remember(bo, nbytes, h): 0, or -1 with an error set.
  int remember(PyObject* bo, PyObject* nbytes, PyObject* h, PyObject* no_hash);
};

// pre_reads(...): the BOs read before a call, _capture.py `pre_loop`
PyObject* fast_pre_reads(PyObject*, PyObject* args);
// Interns the names fast_bos.cpp uses; false with an error set.
bool fast_bos_init();
