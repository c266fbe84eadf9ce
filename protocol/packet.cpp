#include "protocol/packet.hpp"

namespace roce::proto {

std::byte* ExtHeaders::storage(ExtHeader h) noexcept {
  void* p = nullptr;
  switch (h) {
    case ExtHeader::Rdeth: p = &rdeth; break;
    case ExtHeader::Deth: p = &deth; break;
    case ExtHeader::Feth: p = &feth; break;
    case ExtHeader::Reth: p = &reth; break;
    case ExtHeader::AtomicEth: p = &atomic; break;
    case ExtHeader::Aeth: p = &aeth; break;
    case ExtHeader::AtomicAckEth: p = &atomic_ack; break;
    case ExtHeader::ImmDt: p = &imm; break;
    case ExtHeader::Ieth: p = &ieth; break;
    case ExtHeader::CnpReserved: p = &cnp; break;
    case ExtHeader::Count: break;
  }
  return static_cast<std::byte*>(p);
}

std::string to_string(IcrcStatus s) {
  switch (s) {
    case IcrcStatus::Ok: return "ok";
    case IcrcStatus::Bad: return "bad";
    case IcrcStatus::NotCheckable: return "not-checkable";
    case IcrcStatus::NotChecked: return "not-checked";
    case IcrcStatus::Deferred: return "deferred";
  }
  return "unknown";
}

}  // namespace roce::proto
