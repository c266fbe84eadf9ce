#include "apps/inspect/nvme_capsule_view.hpp"

#include "protocol/nvme.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::inspect {

namespace nv = proto::nvme;

namespace {

bool known_opcode(const nv::Sqe& s) {
  if (s.opc == 0x7F) {
    switch (static_cast<nv::FabricsType>(s.fctype())) {
      case nv::FabricsType::PropertySet:
      case nv::FabricsType::Connect:
      case nv::FabricsType::PropertyGet:
      case nv::FabricsType::AuthSend:
      case nv::FabricsType::AuthReceive:
      case nv::FabricsType::Disconnect: return true;
    }
    return false;
  }
  switch (s.opc) {
    case 0x00: case 0x01: case 0x02: case 0x06: case 0x08: case 0x09: case 0x0A: case 0x0C: case 0x18:
      return true;
    default: return false;
  }
}

}  // namespace

std::optional<NvmeView> describe_nvme_capsule(proto::ByteSpan payload, bool whole) {
  if (whole && payload.size() == nv::kCqeSize) {
    const auto cqe = proto::load_header<nv::Cqe>(payload, 0);
    if (cqe.status.get() & 1) return std::nullopt;
    NvmeView v;
    v.response = true;
    v.cid = cqe.cid.get();
    const auto st = nv::NvmeStatus::from_field(cqe.status.get());
    v.status = static_cast<std::uint16_t>(static_cast<unsigned>(st.sct) << 8 | st.sc);
    v.text = nv::describe_response(cqe);
    return v;
  }
  const auto cap = nv::parse_command_capsule(payload);
  if (!cap) return std::nullopt;
  const nv::Sqe& s = cap->sqe;
  if ((s.flags & 0xC3) != nv::kPsdtSgl || nv::classify(s.sgl1) == nv::SglKind::Unsupported || !known_opcode(s))
    return std::nullopt;
  NvmeView v;
  v.opcode = s.opc;
  v.cid = s.cid.get();
  v.text = nv::describe_command(s, nv::QueueKind::Unknown);
  if (s.opc != 0x7F) {
    v.nsid = s.nsid.get();
    if (s.opc == 0x01 || s.opc == 0x02 || s.opc == 0x08) {
      v.slba = std::uint64_t{s.cdw11.get()} << 32 | s.cdw10.get();
      v.nlb = (s.cdw12.get() & 0xFFFF) + 1u;
    }
  }
  const nv::SglKind k = nv::classify(s.sgl1);
  v.length = k == nv::SglKind::InCapsule ? s.sgl1.offset_length() : s.sgl1.keyed_length();
  return v;
}

}  // namespace roce::inspect
