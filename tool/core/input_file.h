// Reading a whole input file the way hostile input demands (docs/model-format.md §13): a
// regular file only (a device would be read without end, a FIFO would block), opened without
// blocking, its type and size checked on the open descriptor before anything is read. Shared
// by the model loader, the report's source locator and the baseline reader.
#pragma once
#include <cstddef>
#include <string>

#include "core/result.h"

namespace bod {

// The file's bytes, or a one-line error naming `path`. `noun` names the file in messages
// ("model file"), `expected` the kind it must be ("a model.json file"), `limit` the size cap
// (with `limit_name`, e.g. "64 MiB").
Result<std::string> read_regular_file(const std::string& path, const std::string& noun,
                                      const std::string& expected, size_t limit,
                                      const std::string& limit_name);

}  // namespace bod
