#include "report/report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

namespace bod {

bool Report::has_error() const {
  for (auto& f : findings)
    if (f.severity == Severity::error) return true;
  return false;  // DESIGN §6: exit 1 and "fail" mean an error finding
}

std::vector<KeyRow> key_table(const RunResult& r) {
  std::vector<KeyRow> rows;
  std::map<std::string, size_t> at;
  for (auto& rec : r.records) {
    auto [it, fresh] = at.emplace(rec.call->bo_key, rows.size());
    if (fresh) rows.push_back({rec.call->bo_key, rec.call->kernel->name, rec.call->number});
    KeyRow& k = rows[it->second];
    k.calls++;
    double cmin = 1;
    long long nan = 0;
    for (auto& o : rec.outputs) {
      cmin = std::min(cmin, o.cosine);
      nan += o.nan_reuse + o.inf_reuse;
    }
    bool bad = rec.diverged() || rec.failed;
    if (rec.first_of_key) {
      k.first_diverged += bad;
      k.first_min_cosine = std::min(k.first_min_cosine, cmin);
    } else {
      k.later_diverged += bad;
      k.later_min_cosine = std::min(k.later_min_cosine, cmin);
      k.later_nan += nan;
      if (bad && !k.first_bad_later_call) k.first_bad_later_call = rec.call->number;
    }
  }
  return rows;
}

Status write_atomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  fs::path p(path);
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Error{path, "cannot write report (is the folder there and writable?)", Exit::bad_input};
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Error{path, "cannot write report (disk full?)", Exit::bad_input};
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{path, "cannot move report into place: " + ec.message(), Exit::bad_input};
  }
  return ok_status();
}

}  // namespace bod
