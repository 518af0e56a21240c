// _bod_fast's functions of the spool file written through a mapping (fast_spool.cpp), in
// fast_ext.cpp's method table.
#pragma once

typedef struct _object PyObject;  // as Python.h declares it

// spool_map() -> a handle for one spool file's mapped writes
PyObject* fast_spool_map(PyObject*, PyObject*);
// spool_put(handle, fd, dev, ino, text) -> True once the ASCII text is in the file, False
// (nothing written) when fd no longer names the file (dev, ino); OSError on a failure
PyObject* fast_spool_put(PyObject*, PyObject* args);
// spool_unmap(handle): the window unmapped and the handle dropped (the file is left as it is)
PyObject* fast_spool_unmap(PyObject*, PyObject* arg);
