#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace bod {

Result<std::string> read_regular_file(const std::string& path, const std::string& noun,
                                      const std::string& expected, size_t limit,
                                      const std::string& limit_name) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return Error{path, "cannot open " + noun + ": " + std::strerror(errno) +
                           " (does it exist and is it readable?)"};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return Error{path, "cannot stat " + noun + ": " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{path, "is a directory; expected " + expected};
  if (!S_ISREG(st.st_mode))
    return Error{path, "is not a regular file (a device, FIFO or socket); expected " + expected};
  if (static_cast<uint64_t>(st.st_size) > limit)
    return Error{path, noun + " is " + std::to_string(st.st_size) + " bytes; expected at most " +
                           std::to_string(limit) + " (" + limit_name + ")"};
  std::string text;
  text.resize(static_cast<size_t>(st.st_size) + 1);  // one more: notice a file that grew
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{path, "cannot read " + noun + ": " + std::strerror(errno)};
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > static_cast<size_t>(st.st_size))
    return Error{path, noun + " changed size while it was read; expected a file at rest"};
  text.resize(got);
  return text;
}

}  // namespace bod
