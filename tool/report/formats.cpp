#include "report/formats.h"

namespace bod {

const std::vector<ReportFormat>& report_formats() {
  static const std::vector<ReportFormat> formats = {
      {"text", render_text, false},        {"json", render_json, false},
      {"markdown", render_markdown, true}, {"sarif", render_sarif, false},
      {"junit", render_junit, false},      {"html", render_html, false},
  };
  return formats;
}

bool timed_format(const std::string& format) {
  const ReportFormat* f = find_format(report_formats(), format);
  return f && f->timed;
}

std::string or_list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace bod
