// write_atomic: every file bo-doctor writes (reports, traces, baselines, skeletons) is
// written to a temp file and renamed into place, so a killed run leaves the old file or the
// new one, never half of one.
#pragma once
#include <string>

#include "core/result.h"

namespace bod {

// Writes `text` to `path` atomically and durably: a temp file in the target's folder
// (".NAME.tmp.PID"), written, fsynced, renamed over the target, then the folder fsynced.
// "-" (or /dev/stdout) writes to stdout instead. An existing target must be a regular file
// (a symlink, device, directory, FIFO or socket is refused, exit 2) and keeps its permission
// bits. SIGINT/SIGTERM during the write remove the temp file (the process then dies of the
// signal as before).
Status write_atomic(const std::string& path, const std::string& text);

// Tests only: called with the temp path once the temp file exists, before it is written.
extern void (*g_write_atomic_test_hook)(const std::string& tmp);

}  // namespace bod
