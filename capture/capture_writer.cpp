#include "capture/capture_writer.hpp"

#include <pcap/pcap.h>

#include <algorithm>

namespace roce::capture {

CaptureWriter::~CaptureWriter() { close(); }

std::string to_string(TimestampPrecision p) { return p == TimestampPrecision::Nano ? "nano" : "micro"; }

bool CaptureWriter::open(const std::string& path, LinkType link, std::uint32_t snaplen, TimestampPrecision precision) {
  close();
  error_.clear();
  snaplen_ = snaplen;
  precision_ = precision;
  pcap_ = pcap_open_dead_with_tstamp_precision(
      dlt_of(link), static_cast<int>(snaplen),
      precision == TimestampPrecision::Nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
  if (!pcap_) {
    error_ = "pcap_open_dead failed";
    return false;
  }
  dumper_ = pcap_dump_open(pcap_, path.c_str());
  if (!dumper_) {
    error_ = pcap_geterr(pcap_);
    pcap_close(pcap_);
    pcap_ = nullptr;
    return false;
  }
  return true;
}

bool CaptureWriter::write_ns(std::int64_t ts_sec, std::uint32_t ts_nsec, proto::ByteSpan data, std::uint32_t wire_len) {
  // libpcap's header has one field for the fraction; its unit is the file's precision.
  const std::uint32_t fraction = precision_ == TimestampPrecision::Nano ? ts_nsec : ts_nsec / 1000;
  return write_fraction(ts_sec, fraction, data, wire_len);
}

bool CaptureWriter::write(std::int64_t ts_sec, std::uint32_t ts_usec, proto::ByteSpan data, std::uint32_t wire_len) {
  return write_fraction(ts_sec, precision_ == TimestampPrecision::Nano ? ts_usec * 1000 : ts_usec, data, wire_len);
}

bool CaptureWriter::write_fraction(std::int64_t ts_sec, std::uint32_t fraction, proto::ByteSpan data,
                                   std::uint32_t wire_len) {
  if (!dumper_) {
    error_ = "no capture open for writing";
    return false;
  }
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(ts_sec);
  hdr.ts.tv_usec = static_cast<suseconds_t>(fraction);
  hdr.caplen = static_cast<bpf_u_int32>(std::min<std::size_t>(data.size(), snaplen_));
  hdr.len = wire_len ? wire_len : static_cast<bpf_u_int32>(data.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, reinterpret_cast<const u_char*>(data.data()));
  return true;
}

bool CaptureWriter::close() {
  bool ok = true;
  if (dumper_) {
    if (pcap_dump_flush(dumper_) != 0) {
      error_ = "write to capture file failed";
      ok = false;
    }
    pcap_dump_close(dumper_);
    dumper_ = nullptr;
  }
  if (pcap_) pcap_close(pcap_);
  pcap_ = nullptr;
  return ok;
}

}  // namespace roce::capture
