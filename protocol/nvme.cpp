#include "protocol/nvme.hpp"

#include <cstdio>
#include <cstring>

#include "protocol/nvme_rdma.hpp"

namespace roce::proto::nvme {

namespace {
std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%02x", v);
  return b;
}
}  // namespace

std::string to_string(AdminOpcode o) {
  switch (o) {
    case AdminOpcode::DeleteIoSq: return "DeleteIoSq";
    case AdminOpcode::GetLogPage: return "GetLogPage";
    case AdminOpcode::Identify: return "Identify";
    case AdminOpcode::Abort: return "Abort";
    case AdminOpcode::SetFeatures: return "SetFeatures";
    case AdminOpcode::GetFeatures: return "GetFeatures";
    case AdminOpcode::AsyncEventRequest: return "AsyncEventRequest";
    case AdminOpcode::KeepAlive: return "KeepAlive";
    case AdminOpcode::Fabrics: return "Fabrics";
  }
  return "admin-" + hex(static_cast<unsigned>(o));
}

std::string to_string(IoOpcode o) {
  switch (o) {
    case IoOpcode::Flush: return "Flush";
    case IoOpcode::Write: return "Write";
    case IoOpcode::Read: return "Read";
    case IoOpcode::WriteZeroes: return "WriteZeroes";
    case IoOpcode::DatasetManagement: return "DatasetManagement";
    case IoOpcode::Fabrics: return "Fabrics";
  }
  return "io-" + hex(static_cast<unsigned>(o));
}

std::string to_string(FabricsType t) {
  switch (t) {
    case FabricsType::PropertySet: return "PropertySet";
    case FabricsType::Connect: return "Connect";
    case FabricsType::PropertyGet: return "PropertyGet";
    case FabricsType::AuthSend: return "AuthSend";
    case FabricsType::AuthReceive: return "AuthReceive";
    case FabricsType::Disconnect: return "Disconnect";
  }
  return "fctype-" + hex(static_cast<unsigned>(t));
}

std::string to_string(const NvmeStatus& s) {
  if (s.ok()) return "success";
  const char* name = nullptr;
  if (s.sct == StatusType::Generic) {
    switch (s.sc) {
      case sc::kInvalidOpcode: name = "invalid opcode"; break;
      case sc::kInvalidField: name = "invalid field"; break;
      case sc::kDataTransferError: name = "data transfer error"; break;
      case sc::kInternalError: name = "internal error"; break;
      case sc::kAbortRequested: name = "abort requested"; break;
      case sc::kInvalidNamespace: name = "invalid namespace or format"; break;
      case sc::kCommandSequenceError: name = "command sequence error"; break;
      case sc::kDataSglLengthInvalid: name = "data SGL length invalid"; break;
      case sc::kSglDescriptorTypeInvalid: name = "SGL descriptor type invalid"; break;
      case sc::kSglOffsetInvalid: name = "SGL offset invalid"; break;
      case sc::kLbaOutOfRange: name = "LBA out of range"; break;
      case sc::kCapacityExceeded: name = "capacity exceeded"; break;
      case sc::kNamespaceNotReady: name = "namespace not ready"; break;
      default: break;
    }
  } else if (s.sct == StatusType::CommandSpecific) {
    switch (s.sc) {
      case sc::kInvalidQueueIdentifier: name = "invalid queue identifier"; break;
      case sc::kInvalidQueueSize: name = "invalid queue size"; break;
      case sc::kAsyncEventLimitExceeded: name = "async event request limit exceeded"; break;
      case sc::kInvalidLogPage: name = "invalid log page"; break;
      case sc::kFeatureNotSaveable: name = "feature not saveable"; break;
      case sc::kConnectIncompatibleFormat: name = "connect incompatible format"; break;
      case sc::kConnectControllerBusy: name = "connect controller busy"; break;
      case sc::kConnectInvalidParameters: name = "connect invalid parameters"; break;
      case sc::kConnectRestartDiscovery: name = "connect restart discovery"; break;
      case sc::kConnectInvalidHost: name = "connect invalid host"; break;
      default: break;
    }
  }
  std::string out = "sct " + std::to_string(static_cast<unsigned>(s.sct)) + " sc " + hex(s.sc);
  if (name) out += std::string(" (") + name + ")";
  if (s.dnr) out += " dnr";
  return out;
}

SglDescriptor SglDescriptor::keyed(std::uint64_t va, std::uint32_t len, std::uint32_t key, bool invalidate) {
  SglDescriptor d;
  d.addr.set(va);
  const Le24 l = Le24::of(len & 0xFFFFFF);
  const Le32 k = Le32::of(key);
  for (int i = 0; i < 3; ++i) d.spec[i] = l.bytes[i];
  for (int i = 0; i < 4; ++i) d.spec[3 + i] = k.bytes[i];
  d.id = sgl_id(SglType::KeyedDataBlock, invalidate ? SglSubtype::Invalidate : SglSubtype::Address);
  return d;
}

SglDescriptor SglDescriptor::in_capsule(std::uint64_t offset, std::uint32_t len) {
  SglDescriptor d;
  d.addr.set(offset);
  const Le32 l = Le32::of(len);
  for (int i = 0; i < 4; ++i) d.spec[i] = l.bytes[i];
  d.id = sgl_id(SglType::DataBlock, SglSubtype::Offset);
  return d;
}

std::string to_string(CmRejectStatus s) {
  switch (s) {
    case CmRejectStatus::InvalidPrivateDataLength: return "invalid private data length";
    case CmRejectStatus::InvalidRecfmt: return "invalid RECFMT";
    case CmRejectStatus::InvalidQid: return "invalid QID";
    case CmRejectStatus::InvalidHsqsize: return "invalid HSQSIZE";
    case CmRejectStatus::InvalidHrqsize: return "invalid HRQSIZE";
    case CmRejectStatus::NoResources: return "no resources";
    case CmRejectStatus::InvalidIrd: return "invalid IRD";
    case CmRejectStatus::InvalidOrd: return "invalid ORD";
  }
  return "reject-" + hex(static_cast<unsigned>(s));
}

std::optional<CmRequestData> parse_cm_request(ByteSpan private_data) {
  if (private_data.size() < sizeof(CmRequestData)) return std::nullopt;
  return load_header<CmRequestData>(private_data, 0);
}

SglKind classify(const SglDescriptor& d) {
  if (d.id == sgl_id(SglType::KeyedDataBlock, SglSubtype::Address)) return SglKind::KeyedAddress;
  if (d.id == sgl_id(SglType::KeyedDataBlock, SglSubtype::Invalidate)) return SglKind::KeyedInvalidate;
  if (d.id == sgl_id(SglType::DataBlock, SglSubtype::Offset)) return SglKind::InCapsule;
  return SglKind::Unsupported;
}

std::string to_string(SglKind k) {
  switch (k) {
    case SglKind::KeyedAddress: return "keyed";
    case SglKind::KeyedInvalidate: return "keyed+inv";
    case SglKind::InCapsule: return "in-capsule";
    case SglKind::Unsupported: return "unsupported";
  }
  return "?";
}

std::string to_string(CapsuleError e) {
  switch (e) {
    case CapsuleError::TooShort: return "capsule shorter than a 64-byte SQE";
  }
  return "?";
}

std::optional<CommandCapsule> parse_command_capsule(ByteSpan bytes, CapsuleError* why) {
  if (bytes.size() < kSqeSize) {
    if (why) *why = CapsuleError::TooShort;
    return std::nullopt;
  }
  return CommandCapsule{load_header<Sqe>(bytes, 0), bytes.subspan(kSqeSize)};
}

namespace {
std::string describe_sgl(const SglDescriptor& d) {
  const SglKind k = classify(d);
  char b[96];
  switch (k) {
    case SglKind::KeyedAddress:
    case SglKind::KeyedInvalidate:
      std::snprintf(b, sizeof b, "sgl=%s addr=0x%llx len=%u key=0x%x", to_string(k).c_str(),
                    static_cast<unsigned long long>(d.addr.get()), d.keyed_length(), d.key());
      break;
    case SglKind::InCapsule:
      std::snprintf(b, sizeof b, "sgl=in-capsule off=%llu len=%u", static_cast<unsigned long long>(d.addr.get()),
                    d.offset_length());
      break;
    case SglKind::Unsupported: std::snprintf(b, sizeof b, "sgl=id-0x%02x", d.id); break;
  }
  return b;
}
}  // namespace

std::string describe_command(const Sqe& sqe, QueueKind queue) {
  std::string name;
  const bool rw = queue != QueueKind::Admin && (sqe.opc == static_cast<std::uint8_t>(IoOpcode::Read) ||
                                                 sqe.opc == static_cast<std::uint8_t>(IoOpcode::Write) ||
                                                 sqe.opc == static_cast<std::uint8_t>(IoOpcode::WriteZeroes));
  if (sqe.opc == 0x7F) {
    name = "Fabrics " + to_string(static_cast<FabricsType>(sqe.fctype()));
  } else if (queue == QueueKind::Admin) {
    name = to_string(static_cast<AdminOpcode>(sqe.opc));
  } else if (queue == QueueKind::Io) {
    name = to_string(static_cast<IoOpcode>(sqe.opc));
  } else {
    name = to_string(static_cast<IoOpcode>(sqe.opc)) + "|" + to_string(static_cast<AdminOpcode>(sqe.opc));
  }
  char b[160];
  std::snprintf(b, sizeof b, "NVMe %s opc=0x%02x cid=%u", name.c_str(), sqe.opc, sqe.cid.get());
  std::string out = b;
  if (sqe.opc == 0x7F) {
    if (sqe.fctype() == static_cast<std::uint8_t>(FabricsType::Connect)) {
      const auto c = overlay<ConnectCommand>(sqe);
      out += " qid=" + std::to_string(c.qid.get()) + " sqsize=" + std::to_string(c.sqsize.get());
    } else if (sqe.fctype() == static_cast<std::uint8_t>(FabricsType::PropertyGet) ||
               sqe.fctype() == static_cast<std::uint8_t>(FabricsType::PropertySet)) {
      const auto p = overlay<PropertyCommand>(sqe);
      std::snprintf(b, sizeof b, " ofst=0x%x", p.ofst.get());
      out += b;
    }
  } else {
    out += " nsid=" + std::to_string(sqe.nsid.get());
    if (rw) {
      const std::uint64_t slba = std::uint64_t{sqe.cdw11.get()} << 32 | sqe.cdw10.get();
      std::snprintf(b, sizeof b, " slba=%llu nlb=%u", static_cast<unsigned long long>(slba),
                    (sqe.cdw12.get() & 0xFFFF) + 1);
      out += b;
    }
  }
  return out + " " + describe_sgl(sqe.sgl1);
}

std::string describe_response(const Cqe& cqe) {
  char b[128];
  std::snprintf(b, sizeof b, "NVMe response cid=%u sqid=%u sqhd=%u dw0=0x%x ", cqe.cid.get(), cqe.sqid.get(),
                cqe.sqhd.get(), cqe.dw0.get());
  return b + to_string(NvmeStatus::from_field(cqe.status.get()));
}

}  // namespace roce::proto::nvme
