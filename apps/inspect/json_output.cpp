#include "apps/inspect/json_output.hpp"

#include "lib/util/json_writer.hpp"

namespace roce::inspect {

std::string frame_json(const FrameView& v, const FieldContext& c) {
  JsonWriter w;
  w.begin_object();
  for (const FieldDef& f : all_fields()) {
    const Value x = f.get(v, c);
    if (!x.present()) continue;
    w.key(f.name);
    switch (f.type) {
      case FieldType::Uint: w.value(x.u); break;
      case FieldType::Real: w.value(x.d); break;
      case FieldType::Bool:
      case FieldType::Flag: w.value(x.u != 0); break;
      case FieldType::Hex64:
      case FieldType::Text:
      case FieldType::Ip: w.value(format_value(f, x)); break;
    }
  }
  w.end_object();
  return w.str();
}

}  // namespace roce::inspect
