// The MAD describer roce-inspect installs in mad_hook.hpp: CM messages (REQ, REP, RTU, REJ,
// DREQ, ...) read with protocol/'s MAD parser, one line each with what identifies the
// connection (comm IDs, service ID, QPNs, starting PSNs, the REJ reason); other management
// classes by their header.
#pragma once

#include <optional>

#include "apps/inspect/mad_hook.hpp"

namespace roce::inspect {

std::optional<MadView> describe_cm_mad(proto::ByteSpan mad);

}  // namespace roce::inspect
