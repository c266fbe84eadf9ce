// Writes classic pcap files through libpcap: the project's own fixtures and the captures tests
// make at run time (microsecond timestamps), and generated traffic whose frames are closer
// together than a microsecond (nanosecond timestamps, magic a1b23c4d).
#pragma once

#include <cstdint>
#include <string>

#include "capture/link_layer.hpp"
#include "protocol/be.hpp"

struct pcap;
struct pcap_dumper;

namespace roce::capture {

enum class TimestampPrecision : std::uint8_t { Micro, Nano };
std::string to_string(TimestampPrecision p);

class CaptureWriter {
 public:
  CaptureWriter() = default;
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  bool open(const std::string& path, LinkType link, std::uint32_t snaplen = 65535,
            TimestampPrecision precision = TimestampPrecision::Micro);
  // Writes min(data.size(), snaplen) bytes; wire_len 0 means data.size().
  bool write(std::int64_t ts_sec, std::uint32_t ts_usec, proto::ByteSpan data, std::uint32_t wire_len = 0);
  // The same with a nanosecond fraction (truncated to microseconds in a Micro file).
  bool write_ns(std::int64_t ts_sec, std::uint32_t ts_nsec, proto::ByteSpan data, std::uint32_t wire_len = 0);
  // Flushes and closes; false when the file could not be written completely.
  bool close();

  const std::string& error() const { return error_; }

 private:
  bool write_fraction(std::int64_t ts_sec, std::uint32_t fraction, proto::ByteSpan data, std::uint32_t wire_len);

  pcap* pcap_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::uint32_t snaplen_ = 0;
  TimestampPrecision precision_ = TimestampPrecision::Micro;
  std::string error_;
};

}  // namespace roce::capture
