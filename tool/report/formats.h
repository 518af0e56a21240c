// The report formats as one table: the CLI's --format parsing (any case, did-you-mean), its
// help text, the dispatch and the rule that a format showing measured times gets a timed run
// all read it. classify and list-checks keep tables of their own formats (cli/commands.cpp),
// read through the same helpers.
#pragma once
#include <string>
#include <vector>

#include "core/suggest.h"
#include "report/report.h"

namespace bod {

struct ReportFormat {
  const char* name;  // as --format takes it (any case)
  std::string (*render)(const Report&);
  bool timed;  // shows measured times, so the run is timed (markdown's reuse block)
};

// text (the default), json, markdown, sarif, junit, html.
const std::vector<ReportFormat>& report_formats();

// A format table's row named `name` (any case), or null.
template <typename Row>
const Row* find_format(const std::vector<Row>& table, const std::string& name) {
  std::string l = lower_ascii(name);
  for (auto& row : table)
    if (l == row.name) return &row;
  return nullptr;
}

// A format table's names, in order.
template <typename Row>
std::vector<std::string> format_names(const std::vector<Row>& table) {
  std::vector<std::string> names;
  for (auto& row : table) names.push_back(row.name);
  return names;
}

// Whether the report format `format` (any case) shows measured times, so that its run must be
// timed as --timings would (markdown).
bool timed_format(const std::string& format);

// "text, json or html": format names for help texts and "expected ..." messages.
std::string or_list(const std::vector<std::string>& names);

}  // namespace bod
