// The BTH opcode table: for every opcode, the transport, the operation, the position of the
// packet in its message, the extension headers it carries (in wire order) and its payload rule.
// Parser and builder both read this one table.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace roce::proto {

enum class Transport : std::uint8_t { Rc = 0, Uc = 1, Rd = 2, Ud = 3, Cnp = 4, Xrc = 5, Vendor = 7 };

enum class Opcode : std::uint8_t {
  RcSendFirst = 0x00,
  RcSendMiddle = 0x01,
  RcSendLast = 0x02,
  RcSendLastImm = 0x03,
  RcSendOnly = 0x04,
  RcSendOnlyImm = 0x05,
  RcWriteFirst = 0x06,
  RcWriteMiddle = 0x07,
  RcWriteLast = 0x08,
  RcWriteLastImm = 0x09,
  RcWriteOnly = 0x0A,
  RcWriteOnlyImm = 0x0B,
  RcReadRequest = 0x0C,
  RcReadResponseFirst = 0x0D,
  RcReadResponseMiddle = 0x0E,
  RcReadResponseLast = 0x0F,
  RcReadResponseOnly = 0x10,
  RcAck = 0x11,
  RcAtomicAck = 0x12,
  RcCmpSwap = 0x13,
  RcFetchAdd = 0x14,
  RcSendLastInv = 0x16,
  RcSendOnlyInv = 0x17,
  RcFlush = 0x1C,
  RcAtomicWrite = 0x1D,
  UcSendFirst = 0x20,
  UcSendMiddle = 0x21,
  UcSendLast = 0x22,
  UcSendLastImm = 0x23,
  UcSendOnly = 0x24,
  UcSendOnlyImm = 0x25,
  UcWriteFirst = 0x26,
  UcWriteMiddle = 0x27,
  UcWriteLast = 0x28,
  UcWriteLastImm = 0x29,
  UcWriteOnly = 0x2A,
  UcWriteOnlyImm = 0x2B,
  UdSendOnly = 0x64,
  UdSendOnlyImm = 0x65,
  Cnp = 0x81,
};

// Extension headers, in the order they follow the BTH on the wire.
enum class ExtHeader : std::uint8_t { Rdeth, Deth, Feth, Reth, AtomicEth, Aeth, AtomicAckEth, ImmDt, Ieth, CnpReserved, Count };
inline constexpr std::size_t kExtHeaderCount = static_cast<std::size_t>(ExtHeader::Count);
inline constexpr std::array<std::uint8_t, kExtHeaderCount> kExtHeaderBytes{4, 8, 4, 16, 28, 4, 8, 4, 4, 16};

constexpr std::uint16_t header_bit(ExtHeader h) { return static_cast<std::uint16_t>(1u << static_cast<unsigned>(h)); }

enum class Operation : std::uint8_t {
  Send, Write, ReadRequest, ReadResponse, Ack, AtomicAck, CmpSwap, FetchAdd, Flush, AtomicWrite, Cnp
};

// Where the packet sits in its message; governs the payload length rule.
enum class Position : std::uint8_t { First, Middle, Last, Only };

enum class PayloadRule : std::uint8_t {
  None,       // no payload at all
  ExactPmtu,  // FIRST and MIDDLE: exactly the path MTU
  OneToPmtu,  // LAST: 1..PMTU
  ZeroToPmtu, // ONLY: 0..PMTU
  Exactly8,   // ATOMIC_WRITE: 8 bytes
};

struct OpcodeInfo {
  bool valid = false;
  const char* name = "UNKNOWN";
  Transport transport = Transport::Rc;
  Operation operation = Operation::Send;
  Position position = Position::Only;
  PayloadRule payload = PayloadRule::None;
  bool is_request = false;  // goes requester -> responder
  std::uint16_t headers = 0;
  std::uint8_t ext_bytes = 0;                                // sum of extension header sizes
  std::array<std::uint8_t, kExtHeaderCount> offset{};        // from the end of the BTH

  constexpr bool has(ExtHeader h) const { return headers & header_bit(h); }
  constexpr bool has_immediate() const { return has(ExtHeader::ImmDt); }
  constexpr bool has_invalidate() const { return has(ExtHeader::Ieth); }
  constexpr bool starts_message() const { return position == Position::First || position == Position::Only; }
  constexpr bool ends_message() const { return position == Position::Last || position == Position::Only; }
};

namespace detail {

constexpr OpcodeInfo make(const char* name, Transport t, Operation op, Position pos, PayloadRule p,
                          bool request, std::initializer_list<ExtHeader> hs) {
  OpcodeInfo o;
  o.valid = true;
  o.name = name;
  o.transport = t;
  o.operation = op;
  o.position = pos;
  o.payload = p;
  o.is_request = request;
  for (ExtHeader h : hs) o.headers = static_cast<std::uint16_t>(o.headers | header_bit(h));
  std::uint8_t off = 0;
  for (std::size_t i = 0; i < kExtHeaderCount; ++i) {
    if (o.headers & (1u << i)) {
      o.offset[i] = off;
      off = static_cast<std::uint8_t>(off + kExtHeaderBytes[i]);
    }
  }
  o.ext_bytes = off;
  return o;
}

constexpr std::array<OpcodeInfo, 256> build_table() {
  using enum ExtHeader;
  using O = Operation;
  using P = Position;
  using R = PayloadRule;
  std::array<OpcodeInfo, 256> t{};
  const auto rc = Transport::Rc;
  const auto uc = Transport::Uc;
  auto set = [&t](Opcode op, const OpcodeInfo& info) { t[static_cast<std::uint8_t>(op)] = info; };

  set(Opcode::RcSendFirst, make("RC_SEND_FIRST", rc, O::Send, P::First, R::ExactPmtu, true, {}));
  set(Opcode::RcSendMiddle, make("RC_SEND_MIDDLE", rc, O::Send, P::Middle, R::ExactPmtu, true, {}));
  set(Opcode::RcSendLast, make("RC_SEND_LAST", rc, O::Send, P::Last, R::OneToPmtu, true, {}));
  set(Opcode::RcSendLastImm, make("RC_SEND_LAST_WITH_IMMEDIATE", rc, O::Send, P::Last, R::OneToPmtu, true, {ImmDt}));
  set(Opcode::RcSendOnly, make("RC_SEND_ONLY", rc, O::Send, P::Only, R::ZeroToPmtu, true, {}));
  set(Opcode::RcSendOnlyImm, make("RC_SEND_ONLY_WITH_IMMEDIATE", rc, O::Send, P::Only, R::ZeroToPmtu, true, {ImmDt}));
  set(Opcode::RcWriteFirst, make("RC_RDMA_WRITE_FIRST", rc, O::Write, P::First, R::ExactPmtu, true, {Reth}));
  set(Opcode::RcWriteMiddle, make("RC_RDMA_WRITE_MIDDLE", rc, O::Write, P::Middle, R::ExactPmtu, true, {}));
  set(Opcode::RcWriteLast, make("RC_RDMA_WRITE_LAST", rc, O::Write, P::Last, R::OneToPmtu, true, {}));
  set(Opcode::RcWriteLastImm, make("RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", rc, O::Write, P::Last, R::OneToPmtu, true, {ImmDt}));
  set(Opcode::RcWriteOnly, make("RC_RDMA_WRITE_ONLY", rc, O::Write, P::Only, R::ZeroToPmtu, true, {Reth}));
  set(Opcode::RcWriteOnlyImm, make("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", rc, O::Write, P::Only, R::ZeroToPmtu, true, {Reth, ImmDt}));
  set(Opcode::RcReadRequest, make("RC_RDMA_READ_REQUEST", rc, O::ReadRequest, P::Only, R::None, true, {Reth}));
  set(Opcode::RcReadResponseFirst, make("RC_RDMA_READ_RESPONSE_FIRST", rc, O::ReadResponse, P::First, R::ExactPmtu, false, {Aeth}));
  set(Opcode::RcReadResponseMiddle, make("RC_RDMA_READ_RESPONSE_MIDDLE", rc, O::ReadResponse, P::Middle, R::ExactPmtu, false, {}));
  set(Opcode::RcReadResponseLast, make("RC_RDMA_READ_RESPONSE_LAST", rc, O::ReadResponse, P::Last, R::OneToPmtu, false, {Aeth}));
  set(Opcode::RcReadResponseOnly, make("RC_RDMA_READ_RESPONSE_ONLY", rc, O::ReadResponse, P::Only, R::ZeroToPmtu, false, {Aeth}));
  set(Opcode::RcAck, make("RC_ACKNOWLEDGE", rc, O::Ack, P::Only, R::None, false, {Aeth}));
  set(Opcode::RcAtomicAck, make("RC_ATOMIC_ACKNOWLEDGE", rc, O::AtomicAck, P::Only, R::None, false, {Aeth, AtomicAckEth}));
  set(Opcode::RcCmpSwap, make("RC_COMPARE_SWAP", rc, O::CmpSwap, P::Only, R::None, true, {AtomicEth}));
  set(Opcode::RcFetchAdd, make("RC_FETCH_ADD", rc, O::FetchAdd, P::Only, R::None, true, {AtomicEth}));
  set(Opcode::RcSendLastInv, make("RC_SEND_LAST_WITH_INVALIDATE", rc, O::Send, P::Last, R::OneToPmtu, true, {Ieth}));
  set(Opcode::RcSendOnlyInv, make("RC_SEND_ONLY_WITH_INVALIDATE", rc, O::Send, P::Only, R::ZeroToPmtu, true, {Ieth}));
  set(Opcode::RcFlush, make("RC_FLUSH", rc, O::Flush, P::Only, R::None, true, {Feth, Reth}));
  set(Opcode::RcAtomicWrite, make("RC_ATOMIC_WRITE", rc, O::AtomicWrite, P::Only, R::Exactly8, true, {Reth}));

  set(Opcode::UcSendFirst, make("UC_SEND_FIRST", uc, O::Send, P::First, R::ExactPmtu, true, {}));
  set(Opcode::UcSendMiddle, make("UC_SEND_MIDDLE", uc, O::Send, P::Middle, R::ExactPmtu, true, {}));
  set(Opcode::UcSendLast, make("UC_SEND_LAST", uc, O::Send, P::Last, R::OneToPmtu, true, {}));
  set(Opcode::UcSendLastImm, make("UC_SEND_LAST_WITH_IMMEDIATE", uc, O::Send, P::Last, R::OneToPmtu, true, {ImmDt}));
  set(Opcode::UcSendOnly, make("UC_SEND_ONLY", uc, O::Send, P::Only, R::ZeroToPmtu, true, {}));
  set(Opcode::UcSendOnlyImm, make("UC_SEND_ONLY_WITH_IMMEDIATE", uc, O::Send, P::Only, R::ZeroToPmtu, true, {ImmDt}));
  set(Opcode::UcWriteFirst, make("UC_RDMA_WRITE_FIRST", uc, O::Write, P::First, R::ExactPmtu, true, {Reth}));
  set(Opcode::UcWriteMiddle, make("UC_RDMA_WRITE_MIDDLE", uc, O::Write, P::Middle, R::ExactPmtu, true, {}));
  set(Opcode::UcWriteLast, make("UC_RDMA_WRITE_LAST", uc, O::Write, P::Last, R::OneToPmtu, true, {}));
  set(Opcode::UcWriteLastImm, make("UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", uc, O::Write, P::Last, R::OneToPmtu, true, {ImmDt}));
  set(Opcode::UcWriteOnly, make("UC_RDMA_WRITE_ONLY", uc, O::Write, P::Only, R::ZeroToPmtu, true, {Reth}));
  set(Opcode::UcWriteOnlyImm, make("UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", uc, O::Write, P::Only, R::ZeroToPmtu, true, {Reth, ImmDt}));

  set(Opcode::UdSendOnly, make("UD_SEND_ONLY", Transport::Ud, O::Send, P::Only, R::ZeroToPmtu, true, {Deth}));
  set(Opcode::UdSendOnlyImm, make("UD_SEND_ONLY_WITH_IMMEDIATE", Transport::Ud, O::Send, P::Only, R::ZeroToPmtu, true, {Deth, ImmDt}));

  set(Opcode::Cnp, make("CNP", Transport::Cnp, O::Cnp, P::Only, R::None, false, {CnpReserved}));
  return t;
}

}  // namespace detail

inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = detail::build_table();

constexpr const OpcodeInfo& opcode_info(std::uint8_t op) { return kOpcodeTable[op]; }
constexpr const OpcodeInfo& opcode_info(Opcode op) { return kOpcodeTable[static_cast<std::uint8_t>(op)]; }
constexpr std::uint8_t raw(Opcode op) { return static_cast<std::uint8_t>(op); }

static_assert(opcode_info(Opcode::RcWriteOnlyImm).offset[static_cast<int>(ExtHeader::ImmDt)] == 16);
static_assert(opcode_info(Opcode::RcAtomicAck).ext_bytes == 12);
static_assert(opcode_info(Opcode::UdSendOnlyImm).ext_bytes == 12);
static_assert(opcode_info(Opcode::Cnp).ext_bytes == 16);

std::string to_string(Opcode op);
std::string opcode_name(std::uint8_t op);  // table name, or "0xNN" for an opcode we do not know
std::string to_string(Transport t);
std::string to_string(Operation o);
std::string to_string(ExtHeader h);

}  // namespace roce::proto
