// -T fields -e NAME ...: the values of the named fields, one line per frame, like tshark.
#pragma once

#include <string>
#include <vector>

#include "apps/inspect/fields.hpp"

namespace roce::inspect {

struct FieldsOptions {
  std::vector<const FieldDef*> fields;
  std::string separator = "\t";  // -E separator=,
  bool header = false;           // -E header=y
};

std::string fields_header(const FieldsOptions& o, const std::vector<std::string>& names);
std::string fields_row(const FrameView& v, const FieldContext& c, const FieldsOptions& o);

}  // namespace roce::inspect
