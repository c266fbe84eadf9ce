// Names for the enums and addresses of protocol/, for traces, tools and test messages.
#include <cstdio>

#include "protocol/aeth.hpp"
#include "protocol/headers.hpp"
#include "protocol/mtu.hpp"
#include "protocol/opcode.hpp"

namespace roce::proto {

std::string to_string(Ecn e) {
  switch (e) {
    case Ecn::NotEct: return "not-ect";
    case Ecn::Ect1: return "ect1";
    case Ecn::Ect0: return "ect0";
    case Ecn::Ce: return "ce";
  }
  return "unknown";
}

std::string mac_to_string(const MacAddr& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

std::string ipv4_to_string(const Ipv4Addr& a) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
  return buf;
}

std::string ipv6_to_string(const Ipv6Addr& a) {
  std::string s;
  char buf[6];
  for (std::size_t i = 0; i < 16; i += 2) {
    std::snprintf(buf, sizeof buf, "%x", unsigned{a[i]} << 8 | a[i + 1]);
    if (i) s += ':';
    s += buf;
  }
  return s;
}

std::string opcode_name(std::uint8_t op) {
  if (kOpcodeTable[op].valid) return kOpcodeTable[op].name;
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", op);
  return buf;
}

std::string to_string(Opcode op) { return opcode_name(static_cast<std::uint8_t>(op)); }

std::string to_string(Transport t) {
  switch (t) {
    case Transport::Rc: return "RC";
    case Transport::Uc: return "UC";
    case Transport::Rd: return "RD";
    case Transport::Ud: return "UD";
    case Transport::Cnp: return "CNP";
    case Transport::Xrc: return "XRC";
    case Transport::Vendor: return "vendor";
  }
  return "unknown";
}

std::string to_string(Operation o) {
  switch (o) {
    case Operation::Send: return "send";
    case Operation::Write: return "write";
    case Operation::ReadRequest: return "read-request";
    case Operation::ReadResponse: return "read-response";
    case Operation::Ack: return "ack";
    case Operation::AtomicAck: return "atomic-ack";
    case Operation::CmpSwap: return "cmp-swap";
    case Operation::FetchAdd: return "fetch-add";
    case Operation::Flush: return "flush";
    case Operation::AtomicWrite: return "atomic-write";
    case Operation::Cnp: return "cnp";
  }
  return "unknown";
}

std::string to_string(ExtHeader h) {
  switch (h) {
    case ExtHeader::Rdeth: return "RDETH";
    case ExtHeader::Deth: return "DETH";
    case ExtHeader::Feth: return "FETH";
    case ExtHeader::Reth: return "RETH";
    case ExtHeader::AtomicEth: return "AtomicETH";
    case ExtHeader::Aeth: return "AETH";
    case ExtHeader::AtomicAckEth: return "AtomicAckETH";
    case ExtHeader::ImmDt: return "ImmDt";
    case ExtHeader::Ieth: return "IETH";
    case ExtHeader::CnpReserved: return "CNP-reserved";
    case ExtHeader::Count: break;
  }
  return "unknown";
}

std::string to_string(PathMtu m) { return std::to_string(mtu_bytes(m)); }

std::string to_string(AckType t) {
  switch (t) {
    case AckType::Ack: return "ACK";
    case AckType::RnrNak: return "RNR-NAK";
    case AckType::Reserved: return "reserved";
    case AckType::Nak: return "NAK";
  }
  return "unknown";
}

std::string to_string(NakCode c) {
  switch (c) {
    case NakCode::PsnSequenceError: return "psn-sequence-error";
    case NakCode::InvalidRequest: return "invalid-request";
    case NakCode::RemoteAccessError: return "remote-access-error";
    case NakCode::RemoteOperationalError: return "remote-operational-error";
    case NakCode::InvalidRdRequest: return "invalid-rd-request";
  }
  return "reserved-" + std::to_string(static_cast<unsigned>(c));
}

std::string to_string(Syndrome s) {
  switch (s.type()) {
    case AckType::Ack: {
      const auto c = s.credits();
      return c ? "ACK credits=" + std::to_string(*c) : std::string("ACK credits=unlimited");
    }
    case AckType::RnrNak: return "RNR-NAK timer=" + std::to_string(s.value());
    case AckType::Nak: return "NAK " + to_string(s.nak_code());
    case AckType::Reserved: break;
  }
  return "reserved-syndrome";
}

}  // namespace roce::proto
