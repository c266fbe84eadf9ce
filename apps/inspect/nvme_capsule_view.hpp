// The NVMe describer roce-inspect installs in nvme_hook.hpp. A SEND is named as a capsule only
// when it looks like one, since nothing in a frame says "NVMe": a command has 64+ bytes, the
// SGL bits of PSDT set (NVMe over Fabrics always uses SGLs), no fused bits, an SGL descriptor
// the RDMA binding uses and an opcode of the admin or NVM command sets; a response is a whole
// 16-byte SEND with the phase bit clear (always so on fabrics). Frames are described one by one,
// so an opcode that differs between the admin and I/O queues (0x01, 0x02, 0x09...) is named
// both ways ("Read|GetLogPage").
#pragma once

#include <optional>

#include "apps/inspect/nvme_hook.hpp"

namespace roce::inspect {

std::optional<NvmeView> describe_nvme_capsule(proto::ByteSpan payload, bool whole);

}  // namespace roce::inspect
