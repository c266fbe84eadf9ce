#include "apps/inspect/fields_output.hpp"

namespace roce::inspect {

std::string fields_header(const FieldsOptions& o, const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? o.separator : "") + names[i];
  return s;
}

std::string fields_row(const FrameView& v, const FieldContext& c, const FieldsOptions& o) {
  std::string s;
  for (std::size_t i = 0; i < o.fields.size(); ++i) {
    if (i) s += o.separator;
    s += format_value(*o.fields[i], o.fields[i]->get(v, c));
  }
  return s;
}

}  // namespace roce::inspect
