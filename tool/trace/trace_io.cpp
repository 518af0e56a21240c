// Trace <-> JSON Lines (docs/trace-format.md). Every line's fields come from the record tables
// (trace_records.h): the writer and the reader here only walk them. The reader checks limits
// on the raw line, parses it, then reads it with a Cursor that spells out
// "FILE:LINE:/json/pointer" only when it reports an error.
#include "trace/trace_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_read.h"
#include "trace/trace_records.h"

namespace bod {

using namespace trace_json;

namespace {

// Invalid UTF-8 (say in an engine's error text) becomes U+FFFD rather than an exception.
std::string dump(const ojson& j) {
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

template <class R>
std::string line_of(const Record<R>& rec, const R& r, const Capabilities& caps, bool timings) {
  return dump(write_record(rec, r, WriteCtx{caps, timings}));
}

const Capabilities kNoCaps{};

// Figures exist for the engines that ran.
bool engine_ran(const Capabilities& caps, TraceEngine e) {
  return e == TraceEngine::reuse ? caps.run : caps.no_reuse || caps.verify;
}

}  // namespace

std::string trace_header_line(const Trace& t) {
  return line_of(header_record(), t.header, kNoCaps, false);
}

std::string trace_call_line(const Trace& t, const TraceCall& c) {
  return line_of(call_record(), c, t.header.caps, false);
}

std::string trace_view_read_line(const ViewRead& v) {
  return line_of(view_read_record(), v, kNoCaps, false);
}

std::string trace_token_line(TraceEngine e, const TokenStep& s) {
  TokenLine l;
  static_cast<TokenStep&>(l) = s;
  l.engine = e;
  return line_of(token_record(), l, kNoCaps, false);
}

std::string trace_gap_line(const RecordingGap& g) {
  return line_of(gap_record(), g, kNoCaps, false);
}

std::string trace_verify_line(const VerifyOutput& v) {
  return line_of(verify_record(), v, kNoCaps, false);
}

std::string trace_figures_line(const Trace& t, TraceEngine e) {
  FiguresLine l;
  static_cast<EngineFigures&>(l) = e == TraceEngine::reuse ? t.reuse : t.noreuse;
  l.engine = e;
  return line_of(figures_record(), l, kNoCaps, t.timings);
}

std::string trace_end_line(const Trace& t) {
  return line_of(end_record(), t, kNoCaps, t.timings);
}

void write_trace(std::ostream& out, const Trace& t) {
  out << trace_header_line(t) << '\n';
  for (auto& c : t.calls) out << trace_call_line(t, c) << '\n';
  for (auto& v : t.view_reads) out << trace_view_read_line(v) << '\n';
  for (auto& g : t.gaps) out << trace_gap_line(g) << '\n';
  for (auto& s : t.tokens_reuse) out << trace_token_line(TraceEngine::reuse, s) << '\n';
  for (auto& s : t.tokens_noreuse) out << trace_token_line(TraceEngine::no_reuse, s) << '\n';
  if (t.header.caps.verify)
    for (auto& v : t.verify) out << trace_verify_line(v) << '\n';
  for (TraceEngine e : {TraceEngine::reuse, TraceEngine::no_reuse})
    if (engine_ran(t.header.caps, e)) out << trace_figures_line(t, e) << '\n';
  out << trace_end_line(t) << '\n';
}

namespace {

// ---------------------------------------------------------------------------------------------
// Reading lines into the Trace

// "trace" and "version" first, so a newer trace gets the version message, not key errors.
Status read_identity(Cursor& c, const rjson& o) {
  const rjson* magic = find(o, "trace");
  if (!magic) {
    const rjson* type = find(o, "type");
    return c.line_err(
        "the first line must be the trace header {\"trace\": \"bo-doctor\", "
        "\"version\": 1, ...}, found " +
        (type ? "a line of type " + quote(*type) : "a line without \"trace\""));
  }
  {
    auto in = c.in("trace");
    if (*magic != "bo-doctor") return c.err(expected("\"bo-doctor\" (a bo-doctor trace)", *magic));
  }
  auto in = c.in("version");
  const rjson* v = find(o, "version");
  if (!v) return missing(c, "an integer");
  BOD_TRY(long long version, int_v(c, *v, 1, LLONG_MAX));
  if (version > kTraceVersion)
    return c.err("trace format version " + std::to_string(version) + " is newer than this " +
                 "build reads (version " + std::to_string(kTraceVersion) +
                 "); use a newer bo-doctor");
  return ok_status();
}

Status read_header(Cursor& c, const rjson& o, ReadCtx& st) {
  BOD_CHECK(read_identity(c, o));
  TraceHeader h;
  BOD_CHECK(read_record(c, o, header_record(), h, st));
  st.t.header = std::move(h);
  for (size_t k = 0; k < st.t.header.kernels.size(); ++k)
    st.kernels[st.t.header.kernels[k].name] = k;
  st.have_header = true;
  return ok_status();
}

Status read_call(Cursor& c, const rjson& o, ReadCtx& st) {
  const size_t max_calls = std::min<size_t>(st.lim.max_calls, INT_MAX - 1);  // numbers are int
  if (st.t.calls.size() >= max_calls)
    return c.line_err("more than " + std::to_string(max_calls) + " calls; expected at most " +
                      std::to_string(max_calls) + " call lines (the limit TraceLimits::max_calls)");
  TraceCall call;
  call.number = static_cast<int>(st.t.calls.size()) + 1;
  st.ref_hi = call.number;  // a call may name itself (key_first_call, bo.first_call)
  BOD_CHECK(read_record(c, o, call_record(), call, st));
  st.t.calls.push_back(std::move(call));
  return ok_status();
}

Status read_view_read(Cursor& c, const rjson& o, ReadCtx& st) {
  ViewRead v;
  BOD_CHECK(read_record(c, o, view_read_record(), v, st));
  st.t.view_reads.push_back(std::move(v));
  return ok_status();
}

Status read_gap(Cursor& c, const rjson& o, ReadCtx& st) {
  RecordingGap g;
  BOD_CHECK(read_record(c, o, gap_record(), g, st));
  st.t.gaps.push_back(std::move(g));
  return ok_status();
}

Status read_token(Cursor& c, const rjson& o, ReadCtx& st) {
  TokenLine l;
  BOD_CHECK(read_record(c, o, token_record(), l, st));
  auto& to = l.engine == TraceEngine::reuse ? st.t.tokens_reuse : st.t.tokens_noreuse;
  to.push_back(std::move(static_cast<TokenStep&>(l)));
  return ok_status();
}

Status read_verify(Cursor& c, const rjson& o, ReadCtx& st) {
  if (!st.t.header.caps.verify) {
    auto in = c.in("type");
    return c.err(
        "a \"verify\" line needs capability \"verify\", which the header does not "
        "declare");
  }
  VerifyOutput v;
  BOD_CHECK(read_record(c, o, verify_record(), v, st));
  st.t.verify.push_back(std::move(v));
  return ok_status();
}

Status read_figures(Cursor& c, const rjson& o, ReadCtx& st) {
  FiguresLine l;
  BOD_CHECK(read_record(c, o, figures_record(), l, st));
  (l.engine == TraceEngine::reuse ? st.t.reuse : st.t.noreuse) = l;
  return ok_status();
}

Status read_end(Cursor& c, const rjson& o, ReadCtx& st) {
  st.t.finished = true;
  return read_record(c, o, end_record(), st.t, st);
}

// The line types after the header, by their "type".
struct LineType {
  const char* (*name)();
  Status (*read)(Cursor&, const rjson&, ReadCtx&);
};
template <class R, const Record<R>& (*Rec)()>
const char* name_of() {
  return Rec().name;
}
const LineType kLineTypes[] = {
    {name_of<TraceCall, call_record>, read_call},
    {name_of<ViewRead, view_read_record>, read_view_read},
    {name_of<RecordingGap, gap_record>, read_gap},
    {name_of<TokenLine, token_record>, read_token},
    {name_of<VerifyOutput, verify_record>, read_verify},
    {name_of<FiguresLine, figures_record>, read_figures},
    {name_of<Trace, end_record>, read_end},
};

// One parsed line after the header, by its "type".
Status read_line(Cursor& c, const rjson& o, ReadCtx& st, size_t line) {
  if (st.end_line)
    return c.line_err("a line after the \"end\" line (line " + std::to_string(st.end_line) +
                      "); \"end\" must be the last line");
  const rjson* type = find(o, "type");
  if (!type && find(o, "trace")) return c.line_err("a second header line; only the first is one");
  st.ref_hi = static_cast<int>(st.t.calls.size());
  std::string want = "one of";
  for (auto& lt : kLineTypes) {
    if (type && *type == lt.name()) {
      BOD_CHECK(lt.read(c, o, st));
      if (lt.read == read_end) st.end_line = line;
      return ok_status();
    }
    want += std::string(want.size() > 6 ? ", " : " ") + lt.name();
  }
  auto in = c.in("type");
  if (!type) return missing(c, want.c_str());
  return c.err(expected(want, *type));
}

// ---------------------------------------------------------------------------------------------
// Lines

// Reads '\n'-terminated lines in chunks and refuses a line longer than the limit before more
// than the limit is held in memory.
class LineReader {
 public:
  enum class Got { line, eof, too_long, io_error };
  LineReader(std::istream& in, size_t max) : in_(in), max_(max), buf_(size_t(1) << 16) {}

  Got next(std::string& line) {
    line.clear();
    bool any = false;
    for (;;) {
      if (pos_ == end_ && !fill()) return any ? Got::line : in_.bad() ? Got::io_error : Got::eof;
      any = true;
      const char* b = buf_.data() + pos_;
      size_t n = end_ - pos_;
      auto nl = static_cast<const char*>(std::memchr(b, '\n', n));
      size_t take = nl ? static_cast<size_t>(nl - b) : n;
      if (line.size() + take > max_) return Got::too_long;
      line.append(b, take);
      pos_ += take + (nl ? 1 : 0);
      if (nl) return Got::line;
    }
  }

 private:
  bool fill() {
    in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    end_ = static_cast<size_t>(in_.gcount());
    pos_ = 0;
    return end_ > 0;
  }
  std::istream& in_;
  size_t max_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
};

// Nesting depth and string lengths, checked on the raw line before it is parsed.
Status prescan(Cursor& c, const std::string& s, const TraceLimits& lim) {
  int depth = 0;
  size_t start = 0;
  bool in_str = false;
  auto too_long = [&](size_t len) {
    return c.line_err("a string of " + std::to_string(len) + (in_str ? "+" : "") +
                      " bytes at column " + std::to_string(start + 1) + " (\"" +
                      excerpt(std::string_view(s).substr(start + 1, 40), kMsgBytes) +
                      "...\"); expected at most " + std::to_string(lim.max_string_bytes) +
                      " bytes per string as written (the limit TraceLimits::max_string_bytes)");
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (in_str) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_str = false;
        if (i - start - 1 > lim.max_string_bytes) return too_long(i - start - 1);
      }
    } else if (ch == '"') {
      in_str = true;
      start = i;
    } else if (ch == '{' || ch == '[') {
      if (++depth > lim.max_depth)
        return c.line_err("JSON nested deeper than " + std::to_string(lim.max_depth) +
                          " levels at column " + std::to_string(i + 1) + "; expected at most " +
                          std::to_string(lim.max_depth) +
                          " levels of [ and { per line (the limit TraceLimits::max_depth)");
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  if (in_str && s.size() - start - 1 > lim.max_string_bytes) return too_long(s.size() - start - 1);
  return ok_status();
}

// One line parsed into a value in linear time (core/json_read.h): a duplicate key is refused
// (nlohmann would keep the last silently), and so is a line of more values than the limit,
// before they are stored.
Result<rjson> parse_line(Cursor& c, const std::string& s, const TraceLimits& lim) {
  JsonReader reader(lim.max_values);
  rjson j;
  JsonReader::Stop stop;
  try {
    stop = reader.parse(s, j);
  } catch (const rjson::parse_error& e) {
    std::string w = e.what();
    size_t p = w.find(": ");
    std::string why = p == std::string::npos ? w : w.substr(p + 2);
    return c.line_err("not valid JSON at column " + std::to_string(e.byte) + ": " +
                      excerpt(why, 160));
  } catch (const rjson::exception& e) {
    return c.line_err("not valid JSON: " + excerpt(e.what(), 160));
  }
  if (stop == JsonReader::Stop::duplicate_key)
    return c.line_err("duplicate key \"" + excerpt(reader.key(), kMsgBytes) + "\" in one object");
  if (stop == JsonReader::Stop::too_many_values)
    return c.line_err("more than " + std::to_string(lim.max_values) + " JSON values at " +
                      excerpt(reader.pointer(), kMsgBytes) + "; expected at most " +
                      std::to_string(lim.max_values) +
                      " values and keys per line (the limit TraceLimits::max_values)");
  if (!j.is_object()) return c.line_err(expected("one JSON object per line", j));
  return j;
}

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r") == std::string::npos;
}

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<Trace> read_trace(std::istream& in, const std::string& name, const TraceLimits& limits) {
  Cursor c(name);
  ReadCtx st(limits);
  st.t.finished = false;  // until its "end" line
  LineReader lines(in, limits.max_line_bytes);
  std::string s;
  for (size_t n = 1;; ++n) {
    c.start_line(n);
    auto got = lines.next(s);
    if (got == LineReader::Got::eof) break;
    if (got == LineReader::Got::io_error) return c.line_err("read error");
    if (got == LineReader::Got::too_long)
      return c.line_err("line longer than the limit of " + std::to_string(limits.max_line_bytes) +
                        " bytes; expected at most " + std::to_string(limits.max_line_bytes) +
                        " bytes per line (the limit TraceLimits::max_line_bytes)");
    if (blank(s)) continue;
    BOD_CHECK(prescan(c, s, limits));
    BOD_TRY(rjson j, parse_line(c, s, limits));
    if (!st.have_header)
      BOD_CHECK(read_header(c, j, st));
    else
      BOD_CHECK(read_line(c, j, st, n));
  }
  if (!st.have_header)
    return Error{name + ":1",
                 "empty trace: expected the header line {\"trace\": \"bo-doctor\", "
                 "\"version\": 1, ...}",
                 Exit::bad_input};
  // BO numbers are derived, not stored in the file; a first_call the file states must agree.
  std::vector<int> stated;
  for (auto& call : st.t.calls)
    for (auto& slot : call.slots) stated.push_back(slot.place.first_call);
  number_bos(st.t);
  size_t i = 0;
  for (auto& call : st.t.calls)
    for (auto& slot : call.slots)
      if (stated[i++] != slot.place.first_call)
        return Error{name,
                     "call " + std::to_string(call.number) + " slot " + std::to_string(slot.slot) +
                         ": bo.first_call is " + std::to_string(stated[i - 1]) + " but BO " +
                         slot.place.label() + " is first used at call " +
                         std::to_string(slot.place.first_call),
                     Exit::bad_input};
  return std::move(st.t);
}

Result<Trace> read_trace(const std::string& path, const TraceLimits& limits) {
  if (path == "-") return read_trace(std::cin, "<stdin>", limits);
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0)
    return Error{path, std::string("cannot read the trace: ") + std::strerror(errno),
                 Exit::bad_input};
  if (!S_ISREG(sb.st_mode))
    return Error{path,
                 std::string("is ") + file_kind(sb.st_mode) +
                     ", not a regular file; expected a trace file (JSON Lines) or - for stdin",
                 Exit::bad_input};
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Error{path, std::string("cannot open the trace: ") + std::strerror(errno),
                 Exit::bad_input};
  return read_trace(f, path, limits);
}

}  // namespace bod
