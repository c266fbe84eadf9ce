#include "apps/inspect/table_output.hpp"

#include <cinttypes>
#include <cstdio>

namespace roce::inspect {
namespace {

// Widths fit the longest verdict ("malformed"), reason ("payload-length-invalid") and
// opcode name ("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE").
constexpr const char* kRowFormat = "%7s  %-9s  %-22s  %-33s  %8s  %8s  %-7s  %4s  %4s  %3s  %7s  %-13s  %s";

std::string hex24(std::uint32_t v) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "0x%06x", v);
  return buf;
}

std::string hex_u64(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

std::string hex32(std::uint32_t v) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string hex8(std::uint8_t v) {
  char buf[6];
  std::snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

const char* bit(bool b) { return b ? "1" : "0"; }

std::string details(const FrameView& v) {
  std::string d;
  auto add = [&d](const std::string& s) {
    if (!d.empty()) d += "  ";
    d += s;
  };
  if (v.aeth) add("aeth=" + hex8(v.aeth->syndrome) + " (" + v.aeth->meaning + ") msn=" + std::to_string(v.aeth->msn));
  if (v.reth)
    add("reth va=" + hex_u64(v.reth->va) + " rkey=" + hex32(v.reth->rkey) + " len=" + std::to_string(v.reth->dma_length));
  if (v.caplen < v.wire_len)
    add("captured " + std::to_string(v.caplen) + " of " + std::to_string(v.wire_len) + " bytes");
  return d;
}

std::string format_row(const char* no, const char* verdict, const char* reason, const char* opcode, const char* qp,
                       const char* psn, const char* ecn, const char* fecn, const char* becn, const char* ack,
                       const char* payload, const char* icrc, const char* detail) {
  char buf[512];
  std::snprintf(buf, sizeof buf, kRowFormat, no, verdict, reason, opcode, qp, psn, ecn, fecn, becn, ack, payload,
                icrc, detail);
  std::string s = buf;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string table_header() {
  return format_row("No.", "Verdict", "Reason", "Opcode", "DestQP", "PSN", "ECN", "FECN", "BECN", "Ack", "Payload",
                    "ICRC", "Details");
}

std::string table_row(const FrameView& v) {
  const std::string no = std::to_string(v.index);
  const std::string verdict = capture::to_string(v.verdict);
  const std::string reason = v.reason();
  const BthView* b = v.bth ? &*v.bth : nullptr;
  const std::string opcode = b ? b->opcode_name : "-";
  const std::string qp = b ? hex24(b->dest_qp) : "-";
  const std::string psn = b ? hex24(b->psn) : "-";
  const std::string ecn = b ? proto::to_string(b->ecn) : "-";
  const std::string payload = v.payload_length ? std::to_string(*v.payload_length) : "-";
  const std::string icrc = v.icrc ? proto::to_string(*v.icrc) : "-";
  const std::string detail = details(v);
  return format_row(no.c_str(), verdict.c_str(), reason.c_str(), opcode.c_str(), qp.c_str(), psn.c_str(), ecn.c_str(),
                    b ? bit(b->fecn) : "-", b ? bit(b->becn) : "-", b ? bit(b->ack_req) : "-", payload.c_str(),
                    icrc.c_str(), detail.c_str());
}

}  // namespace roce::inspect
