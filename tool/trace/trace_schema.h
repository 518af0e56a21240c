// docs/trace.schema.json printed from the record tables (trace_records.h), so the schema cannot
// drift from the reader: a test compares the committed file with this output, and
// `BOD_UPDATE_GOLDEN=1 build/tests/bod_tests --gtest_filter='TraceSchema.*'` rewrites it.
#pragma once
#include <string>
#include <vector>

namespace bod {

// The JSON Schema (draft 2020-12) of one trace line, as the committed file holds it.
std::string trace_schema_json();

// Every field of every record as "record.key", in table order (for the documentation check).
std::vector<std::string> trace_field_names();

}  // namespace bod
