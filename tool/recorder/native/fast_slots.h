// _bod_fast's functions of a call's slots (fast_slots.cpp), in fast_ext.cpp's method table.
#pragma once

typedef struct _object PyObject;  // as Python.h declares it

// slots(...): the slot loop of CallCapture._after (fast_slots.cpp)
PyObject* fast_slots(PyObject*, PyObject* args);
// after(...): the bound-slot loop after the dispatch, _capture.py `after_loop`
PyObject* fast_after(PyObject*, PyObject* args);
// Interns the names fast_slots uses; false with an error set.
bool fast_slots_init();
