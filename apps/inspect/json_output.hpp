// --json (-T json): one JSON object per frame, one per line (JSON Lines). The keys are the field
// names of fields.hpp and each has one JSON type (fields.hpp says which; 64-bit values are hex
// strings). Fields a frame does not have are left out rather than written as null.
#pragma once

#include <string>

#include "apps/inspect/fields.hpp"

namespace roce::inspect {

std::string frame_json(const FrameView& v, const FieldContext& c);

}  // namespace roce::inspect
