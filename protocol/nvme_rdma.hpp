// The NVMe/RDMA transport binding's own wire formats (shared/spec/nvmf-rdma.md sections 2-3):
// rdma_cm private data of the connect request, the accept and the reject, and the command
// capsule (SQE plus in-capsule data) as it arrives in a SEND.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/be.hpp"
#include "protocol/nvme.hpp"

namespace roce::proto::nvme {

inline constexpr std::uint16_t kNvmeRdmaPort = 4420;
inline constexpr std::uint16_t kRecfmt10 = 0;  // NVME_RDMA_CM_FMT_1_0
inline constexpr std::uint16_t kAdminQueueDepth = 32;

// REQ private data (after the rdma_cm header).
struct CmRequestData {
  Le16 recfmt;
  Le16 qid;
  Le16 hrqsize;  // host receive queue size
  Le16 hsqsize;  // host send queue size, 0's based
  Le16 cntlid;   // SPDK; Linux leaves it 0
  std::array<std::uint8_t, 22> rsvd{};
};
static_assert(sizeof(CmRequestData) == 32);

// REP private data.
struct CmReplyData {
  Le16 recfmt;
  Le16 crqsize;  // controller receive queue size
  std::array<std::uint8_t, 28> rsvd{};
};
static_assert(sizeof(CmReplyData) == 32);

// REJ private data (REJ reason 28, consumer defined).
enum class CmRejectStatus : std::uint16_t {
  InvalidPrivateDataLength = 0x01,
  InvalidRecfmt = 0x02,
  InvalidQid = 0x03,
  InvalidHsqsize = 0x04,
  InvalidHrqsize = 0x05,
  NoResources = 0x06,
  InvalidIrd = 0x07,
  InvalidOrd = 0x08,
};
struct CmRejectData {
  Le16 recfmt;
  Le16 sts;
};
static_assert(sizeof(CmRejectData) == 4);
std::string to_string(CmRejectStatus s);

std::optional<CmRequestData> parse_cm_request(ByteSpan private_data);

// What the SGL of a command asks the target to do with its data.
enum class SglKind : std::uint8_t {
  KeyedAddress,     // 0x40: RDMA READ/WRITE at (addr, key); all zero is the NULL SGL
  KeyedInvalidate,  // 0x4F: the same, and answer with SEND_WITH_INVALIDATE(key)
  InCapsule,        // 0x01: data follows the SQE in the capsule
  Unsupported,      // any other type/subtype: SGL descriptor type invalid
};
SglKind classify(const SglDescriptor& d);
std::string to_string(SglKind k);

enum class CapsuleError : std::uint8_t { TooShort };
std::string to_string(CapsuleError e);

// A received command capsule. `data` is whatever followed the SQE in the SEND.
struct CommandCapsule {
  Sqe sqe;
  ByteSpan data;
};
// Fails only on a capsule shorter than an SQE (fatal for the queue, as in Linux nvmet).
std::optional<CommandCapsule> parse_command_capsule(ByteSpan bytes, CapsuleError* why = nullptr);

// Which queue a capsule travels on decides what its opcode means (0x02 is Get Log Page on the
// admin queue, Read on an I/O queue). A capture reader that has not seen the queue's Connect
// passes Unknown and gets both names.
enum class QueueKind : std::uint8_t { Admin, Io, Unknown };
// One line naming a command capsule for traces and roce-inspect: opcode, CID, NSID, SLBA and
// length for reads and writes, Fabrics type, SGL.
std::string describe_command(const Sqe& sqe, QueueKind queue);
// The same for a 16-byte response capsule.
std::string describe_response(const Cqe& cqe);

}  // namespace roce::proto::nvme
