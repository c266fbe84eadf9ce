#include "apps/inspect/table_output.hpp"

#include <cinttypes>
#include <cstdio>

#include "apps/inspect/fields.hpp"
#include "protocol/aeth.hpp"
#include "protocol/feth.hpp"

namespace roce::inspect {
namespace {

using proto::ExtHeader;

// Widths fit the longest verdict ("malformed"), reason ("payload-length-invalid") and opcode
// name ("DC_RDMA_WRITE_ONLY_WITH_IMMEDIATE").
constexpr int kReasonWidth = 22;
constexpr int kOpcodeWidth = 33;

std::string fmt(const char* f, auto... args) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

// The table is written for every frame of captures of millions: its cells are built without
// printf (which was a quarter of the time).
std::string hex_digits(std::uint64_t v, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(static_cast<std::size_t>(digits) + 2, '0');
  s[1] = 'x';
  for (int i = digits + 1; i >= 2; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kHex[v & 0xF];
  return s;
}
std::string hex24(std::uint32_t v) { return hex_digits(v, 6); }
std::string hex32(std::uint32_t v) { return hex_digits(v, 8); }
std::string hex64(std::uint64_t v) { return hex_digits(v, 16); }

// The FETH decoded: placement type and selectivity level by their IBA names.
std::string feth_text(const proto::Feth& f) {
  const std::uint8_t p = proto::feth_placement(f);
  std::string place = p == 0 ? "none" : "";
  if (p & 0x1) place += "global";
  if (p & 0x2) place += place.empty() ? "persistent" : "+persistent";
  if (p & ~0x3) place += (place.empty() ? "" : "+") + std::string("reserved(") + hex_digits(p & ~0x3u, 1) + ")";
  const std::uint8_t sel = proto::feth_selectivity(f);
  const std::string level = sel == 0 ? "range" : sel == 1 ? "region" : "reserved(" + std::to_string(sel) + ")";
  return "placement=" + place + " selectivity=" + level;
}

std::string lpad(const std::string& s, std::size_t width) { return s.size() >= width ? s : std::string(width - s.size(), ' ') + s; }

// Seconds with 9 decimals from nanoseconds, in integers.
std::string seconds_text(std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t a = static_cast<std::uint64_t>(negative ? -ns : ns);
  std::string frac = std::to_string(a % 1'000'000'000);
  return (negative ? "-" : "") + std::to_string(a / 1'000'000'000) + "." + std::string(9 - frac.size(), '0') + frac;
}

// "YYYY-MM-DD HH:MM:SS." is the same for every frame of one second: made once per second.
std::string utc_cell(std::int64_t ns) {
  static const FieldDef& utc = *find_field("time.utc");
  thread_local std::int64_t cached_second = INT64_MIN;
  thread_local std::string prefix;
  const std::int64_t sec = ns >= 0 ? ns / 1'000'000'000 : -((-ns + 999'999'999) / 1'000'000'000);
  if (sec != cached_second) {
    FrameView at_second;
    at_second.ts_ns = sec * 1'000'000'000;
    const std::string full = format_value(utc, utc.get(at_second, {}));
    prefix = full.substr(0, full.size() - 9);
    cached_second = sec;
  }
  std::string frac = std::to_string(ns - sec * 1'000'000'000);
  return prefix + std::string(9 - frac.size(), '0') + frac;
}

std::string time_cells(const FrameView& v, TimeFormat t) {
  switch (t) {
    case TimeFormat::Relative: return lpad(seconds_text(v.rel_ns), 14);
    case TimeFormat::Utc: return utc_cell(v.ts_ns);
    case TimeFormat::Epoch: return lpad(seconds_text(v.ts_ns), 20);
    case TimeFormat::Both: break;
  }
  return lpad(seconds_text(v.rel_ns), 14) + "  " + utc_cell(v.ts_ns);
}

std::string time_header(TimeFormat t) {
  switch (t) {
    case TimeFormat::Relative: return fmt("%14s", "Time");
    case TimeFormat::Utc: return fmt("%-29s", "Date/time (UTC)");
    case TimeFormat::Epoch: return fmt("%20s", "Epoch time");
    case TimeFormat::Both: break;
  }
  return fmt("%14s", "Time") + "  " + fmt("%-29s", "Date/time (UTC)");
}

std::string pad(const std::string& s, int width) { return s.size() >= static_cast<std::size_t>(width) ? s : s + std::string(width - s.size(), ' '); }

std::string row(const std::string& no, const std::string& time, const std::string& macs, const std::string& src,
                const std::string& dst, const std::string& sport, const std::string& verdict, const std::string& reason,
                const std::string& opcode, const std::string& qp, const std::string& psn, const std::string& ecn,
                const std::string& fba, const std::string& payload, const std::string& icrc, const std::string& detail) {
  std::string s;
  s.reserve(256);
  s += lpad(no, 7) + "  " + time + "  ";
  if (!macs.empty()) s += macs + "  ";
  s += pad(src, 15) + "  " + pad(dst, 15) + "  " + lpad(sport, 5) + "  " + pad(verdict, 9) + "  " + pad(reason, kReasonWidth) +
       "  " + pad(opcode, kOpcodeWidth) + "  " + lpad(qp, 8) + "  " + lpad(psn, 8) + "  " + pad(ecn, 7) + "  " + pad(fba, 5) +
       "  " + lpad(payload, 11) + "  " + pad(icrc, 13) + "  " + detail;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string frame_details(const FrameView& v) {
  std::string d;
  auto add = [&d](const std::string& s) {
    if (!d.empty()) d += "  ";
    d += s;
  };
  if (v.dc) add("dct_eth=" + hex64(v.dct_eth));
  if (v.dc_connect) {
    std::string h;
    for (std::uint8_t b : *v.dc_connect) h += hex_digits(b, 2).substr(2);
    add("dc_connect=" + h);
  }
  if (v.has(ExtHeader::Rdeth)) add("rdeth eecnxt=" + hex24(v.ext.rdeth.ee_context.get() & 0xFFFFFF));
  if (v.has(ExtHeader::Deth)) add("deth qkey=" + hex32(v.ext.deth.qkey.get()) + " srcqp=" + hex24(v.ext.deth.source_qp()));
  if (v.has(ExtHeader::Feth)) add("feth=" + hex32(v.ext.feth.bits.get()) + " " + feth_text(v.ext.feth));
  if (v.has(ExtHeader::Reth))
    add("reth va=" + hex64(v.ext.reth.va.get()) + " rkey=" + hex32(v.ext.reth.rkey.get()) + " len=" +
        std::to_string(v.ext.reth.dma_length.get()));
  if (v.has(ExtHeader::AtomicEth))
    add("atomic va=" + hex64(v.ext.atomic.va.get()) + " rkey=" + hex32(v.ext.atomic.rkey.get()) + " swap_add=" +
        hex64(v.ext.atomic.swap_add.get()) + " compare=" + hex64(v.ext.atomic.compare.get()));
  if (v.has(ExtHeader::Aeth))
    add("aeth=" + hex_digits(v.ext.aeth.syndrome, 2) + " (" + proto::to_string(proto::Syndrome{v.ext.aeth.syndrome}) +
        ") msn=" + std::to_string(v.ext.aeth.msn.get()));
  if (v.has(ExtHeader::AtomicAckEth)) add("atomicack orig=" + hex64(v.ext.atomic_ack.original_data.get()));
  if (v.has(ExtHeader::ImmDt)) {
    const auto& b = v.ext.imm.bytes;
    add("imm=" + hex32(std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3]));
  }
  if (v.has(ExtHeader::Ieth)) add("ieth rkey=" + hex32(v.ext.ieth.rkey.get()));
  if (v.flag(FrameFlag::Gsi)) add(v.mad ? "mad: " + v.mad->text : std::string("gsi (QP1 management datagram)"));
  if (v.nvme) add(v.nvme->text);
  if (v.flag(FrameFlag::Retransmission)) add(v.flag(FrameFlag::Duplicate) ? "retransmission (duplicate: already acknowledged)" : "retransmission");
  if (v.flag(FrameFlag::Cut)) add("cut by the snap length: captured " + std::to_string(v.caplen) + " of " + std::to_string(v.wire_len) + " bytes");
  if (v.flag(FrameFlag::IpBeyondFrame))
    add(std::string(v.ip_src.version == proto::IpVersion::V4 ? "IPv4 total length" : "IPv6 payload length") +
        " exceeds packet length (" + std::to_string(v.caplen) + " bytes; the sniffer cut the frame)");
  return d;
}

std::string table_header(const TableOptions& o) {
  return row("No.", time_header(o.time), o.link ? pad("Src MAC", 17) + "  " + pad("Dst MAC", 17) : "", "Source",
             "Destination", "Sport", "Verdict", "Reason", "Opcode", "DestQP", "PSN", "ECN", "F B A", "Payload", "ICRC",
             "Details");
}

std::string table_row(const FrameView& v, const TableOptions& o) {
  const std::string macs = !o.link ? "" : v.has_eth ? proto::mac_to_string(v.eth_src) + "  " + proto::mac_to_string(v.eth_dst)
                                                    : pad("-", 17) + "  " + pad("-", 17);
  const bool b = v.has_bth;
  std::string payload = "-";
  if (v.payload_len) {
    payload = std::to_string(*v.payload_len);
    // A cut frame shows what it holds of the payload, not a length it does not have.
    if (v.payload_captured < *v.payload_len) payload = std::to_string(v.payload_captured) + "/" + payload;
  }
  return row(std::to_string(v.index), time_cells(v, o.time), macs, v.has_ip ? v.ip_src.str() : "-",
             v.has_ip ? v.ip_dst.str() : "-", v.has_udp ? std::to_string(v.udp_sport) : "-", capture::to_string(v.verdict),
             v.reason(), b ? v.opcode_name() : "-", b ? hex24(v.bth.dest_qp.get()) : "-", b ? std::to_string(v.bth.psn.get()) : "-",
             v.has_ip ? proto::to_string(static_cast<proto::Ecn>(v.ip_tclass & 3)) : "-",
             b ? std::string{v.bth.fecn() ? '1' : '0', ' ', v.bth.becn() ? '1' : '0', ' ', v.bth.ack_requested() ? '1' : '0'} : "-", payload,
             v.icrc ? proto::to_string(*v.icrc) : "-", frame_details(v));
}

}  // namespace roce::inspect
