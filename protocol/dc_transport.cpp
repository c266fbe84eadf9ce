#include "protocol/dc_transport.hpp"

#include <cstring>

#include "protocol/icrc_verdict.hpp"
#include "protocol/payload_tail.hpp"

namespace roce::proto {
namespace {

using enum ExtHeader;
using O = Operation;

struct Row {
  std::uint8_t op;
  const char* name;
  Operation operation;
  std::initializer_list<ExtHeader> headers;
  bool payload;
  bool request;
};

// Wireshark's DctOpCodeMap and its header sequences for the RD opcodes (tshark 4.0).
constexpr Row kRows[] = {
    {0x40, "DC_SEND_FIRST", O::Send, {Rdeth, Deth}, true, true},
    {0x41, "DC_SEND_MIDDLE", O::Send, {Rdeth, Deth}, true, true},
    {0x42, "DC_SEND_LAST", O::Send, {Rdeth, Deth}, true, true},
    {0x43, "DC_SEND_LAST_WITH_IMMEDIATE", O::Send, {Rdeth, Deth, ImmDt}, true, true},
    {0x44, "DC_SEND_ONLY", O::Send, {Rdeth, Deth}, true, true},
    {0x45, "DC_SEND_ONLY_WITH_IMMEDIATE", O::Send, {Rdeth, Deth, ImmDt}, true, true},
    {0x46, "DC_RDMA_WRITE_FIRST", O::Write, {Rdeth, Deth, Reth}, true, true},
    {0x47, "DC_RDMA_WRITE_MIDDLE", O::Write, {Rdeth, Deth}, true, true},
    {0x48, "DC_RDMA_WRITE_LAST", O::Write, {Rdeth, Deth}, true, true},
    {0x49, "DC_RDMA_WRITE_LAST_WITH_IMMEDIATE", O::Write, {Rdeth, Deth, ImmDt}, true, true},
    {0x4A, "DC_RDMA_WRITE_ONLY", O::Write, {Rdeth, Deth, Reth}, true, true},
    {0x4B, "DC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", O::Write, {Rdeth, Deth, Reth, ImmDt}, true, true},
    {0x4C, "DC_RDMA_READ_REQUEST", O::ReadRequest, {Rdeth, Deth, Reth}, false, true},
    {0x4D, "DC_RDMA_READ_RESPONSE_FIRST", O::ReadResponse, {Rdeth, Aeth}, true, false},
    {0x4E, "DC_RDMA_READ_RESPONSE_MIDDLE", O::ReadResponse, {Rdeth}, true, false},
    {0x4F, "DC_RDMA_READ_RESPONSE_LAST", O::ReadResponse, {Rdeth, Aeth}, true, false},
    {0x50, "DC_RDMA_READ_RESPONSE_ONLY", O::ReadResponse, {Rdeth, Aeth}, true, false},
    // Wireshark reads the AETH right after the DCT ETH here, with no RDETH.
    {0x51, "DC_ACKNOWLEDGE", O::Ack, {Aeth}, false, false},
    {0x52, "DC_ATOMIC_ACKNOWLEDGE", O::AtomicAck, {Rdeth, Aeth, AtomicAckEth}, false, false},
    {0x53, "DC_COMPARE_SWAP", O::CmpSwap, {Rdeth, Deth, AtomicEth}, false, true},
    {0x54, "DC_FETCH_ADD", O::FetchAdd, {Rdeth, Deth, AtomicEth}, false, true},
};

DcOpcodeInfo from_row(const Row& r) {
  DcOpcodeInfo o;
  o.valid = true;
  o.name = r.name;
  o.operation = r.operation;
  for (ExtHeader h : r.headers) o.headers = static_cast<std::uint16_t>(o.headers | header_bit(h));
  o.has_payload = r.payload;
  o.is_request = r.request;
  return o;
}

std::size_t ext_bytes(const DcOpcodeInfo& info) {
  std::size_t n = kDctEthBytes + (info.connect_eth ? kDcConnectEthBytes : 0);
  for (std::size_t i = 0; i < kExtHeaderCount; ++i)
    if (info.headers & (1u << i)) n += kExtHeaderBytes[i];
  return n;
}

}  // namespace

DcOpcodeInfo dc_opcode_info(std::uint8_t op, bool se) {
  for (const Row& r : kRows)
    if (r.op == op) return from_row(r);
  DcOpcodeInfo o;
  if (op == 0x55) {
    // Wireshark names it "DC Unknown Opcode"; with SE clear it reads a DC Connect ETH.
    o.valid = true;
    o.name = se ? "DC_0x55" : "DC_CONNECT";
    o.connect_eth = !se;
    o.has_payload = true;
  }
  return o;
}

ParseError parse_dc(ByteSpan buf, const ParseOptions& opts, Packet& p, DcHeaders& dc) noexcept {
  dc = DcHeaders{};
  dc.info = dc_opcode_info(p.bth.opcode, p.bth.se());
  if (!dc.info.valid) return ParseError::UnknownOpcode;
  const std::size_t ext_off = p.bth_offset + sizeof(Bth);
  const std::size_t ext = ext_bytes(dc.info);
  const std::size_t fixed = sizeof(UdpHeader) + sizeof(Bth) + ext + kIcrcBytes;
  if (p.udp_length < fixed) return buf.size() < ext_off + ext ? ParseError::Truncated : ParseError::LengthMismatch;
  if (buf.size() < ext_off + ext) return ParseError::Truncated;

  std::size_t off = ext_off;
  dc.dct_eth = load_header<Be64>(buf, off).get();
  off += kDctEthBytes;
  if (dc.info.connect_eth) {
    dc.has_connect_eth = true;
    std::memcpy(dc.connect_eth.data(), buf.data() + off, kDcConnectEthBytes);
    off += kDcConnectEthBytes;
  }
  for_each_ext_header(p.ext, [&](auto& h, auto kind) {
    if (!dc.info.has(decltype(kind)::value)) return;
    std::memcpy(&h, buf.data() + off, sizeof h);
    off += sizeof h;
  });

  const std::uint32_t payload_and_pad = static_cast<std::uint32_t>(p.udp_length - fixed);
  const std::uint8_t pad = p.bth.pad_count();
  if (payload_and_pad % 4 != 0 || pad > payload_and_pad) return ParseError::PadCntInconsistent;
  if (!dc.info.has_payload && payload_and_pad != 0) return ParseError::PayloadLengthInvalid;
  p.payload_length = payload_and_pad - pad;
  p.payload_offset = off;

  switch (place_payload(buf, opts, p)) {
    case PayloadTail::Refused: return ParseError::Truncated;
    case PayloadTail::Cut: return ParseError::None;
    case PayloadTail::Whole: break;
  }
  p.icrc_status = icrc_verdict(buf, opts, p);
  return ParseError::None;
}

}  // namespace roce::proto
