// RC SENDs may carry NVMe/RDMA capsules: a 64-byte command (plus in-capsule data) from host to
// target, a 16-byte response back. roce-inspect hands the payload of each RC SEND ONLY / FIRST
// (with or without invalidate) to the describer set here (roce-inspect's main sets
// nvme_capsule_view.hpp's); what it returns becomes the `nvme` and `nvme.*` fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"

namespace roce::inspect {

struct NvmeView {
  std::string text;
  bool response = false;
  std::uint8_t opcode = 0;  // commands
  std::uint16_t cid = 0;
  std::optional<std::uint32_t> nsid;
  std::optional<std::uint64_t> slba;
  std::optional<std::uint32_t> nlb;     // blocks (Read, Write, Write Zeroes)
  std::optional<std::uint32_t> length;  // SGL data bytes
  std::optional<std::uint16_t> status;  // responses: SCT << 8 | SC
};

// `payload` is the SEND's payload as captured; `whole` says it is the whole message (SEND ONLY).
using NvmeDescriber = std::optional<NvmeView> (*)(proto::ByteSpan payload, bool whole);

void set_nvme_describer(NvmeDescriber d);
NvmeDescriber nvme_describer();

}  // namespace roce::inspect
