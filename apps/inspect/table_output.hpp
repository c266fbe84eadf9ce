// The default human output: one aligned line per frame, like tshark's packet list.
#pragma once

#include <string>

#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

std::string table_header();
std::string table_row(const FrameView& v);

}  // namespace roce::inspect
