// Writes classic pcap files (microsecond timestamps) through libpcap: the project's own
// fixtures and the captures tests make at run time.
#pragma once

#include <cstdint>
#include <string>

#include "apps/capture/link_layer.hpp"
#include "protocol/be.hpp"

struct pcap;
struct pcap_dumper;

namespace roce::capture {

class CaptureWriter {
 public:
  CaptureWriter() = default;
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  bool open(const std::string& path, LinkType link, std::uint32_t snaplen = 65535);
  // Writes min(data.size(), snaplen) bytes; wire_len 0 means data.size().
  bool write(std::int64_t ts_sec, std::uint32_t ts_usec, proto::ByteSpan data, std::uint32_t wire_len = 0);
  // Flushes and closes; false when the file could not be written completely.
  bool close();

  const std::string& error() const { return error_; }

 private:
  pcap* pcap_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::uint32_t snaplen_ = 0;
  std::string error_;
};

}  // namespace roce::capture
