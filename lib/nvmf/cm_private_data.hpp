// The target's answer to an rdma_cm connect request's NVMe/RDMA private data (spec section 2):
// accept with CRQSIZE and the queue this connection becomes, or reject with the binding's
// status. Pure decision, so the CM integration (after the rdma_cm work lands) only carries it.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "lib/nvmf/queue.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::nvmf {

struct CmAccept {
  proto::nvme::CmReplyData reply;
  QueueConfig queue;          // qid, depth = HSQSIZE + 1
  std::uint16_t send_depth;   // HRQSIZE: responses the host can take
};
struct CmReject {
  proto::nvme::CmRejectData reject;
  proto::nvme::CmRejectStatus status;
};

std::variant<CmAccept, CmReject> decide_cm_request(const TargetConfig& t, proto::ByteSpan private_data);

// Bytes of a REP's / REJ's private data.
std::vector<std::byte> to_bytes(const proto::nvme::CmReplyData& r);
std::vector<std::byte> to_bytes(const proto::nvme::CmRejectData& r);

}  // namespace roce::nvmf
