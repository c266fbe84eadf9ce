// --json output: one JSON object per frame, one per line (JSON Lines). Fields absent from a
// frame (no BTH, no AETH...) are left out rather than written as null.
#pragma once

#include <string>

#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

std::string frame_json(const FrameView& v);

}  // namespace roce::inspect
