// Reads pcap and pcapng files record by record through libpcap. Errors are values with a
// message: a file that cannot be opened, a link type we do not decode, or a file that ends in
// the middle of a record.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "capture/link_layer.hpp"
#include "protocol/be.hpp"

struct pcap;  // libpcap's handle; pcap.h stays out of this header

namespace roce::capture {

struct CaptureRecord {
  std::uint64_t index = 0;  // 1-based, as tshark and Wireshark number frames
  std::int64_t ts_sec = 0;
  std::uint32_t ts_nsec = 0;
  std::uint32_t caplen = 0;    // bytes in the file
  std::uint32_t wire_len = 0;  // bytes on the wire; larger than caplen when the snap length cut the frame
  proto::ByteSpan data{};      // valid until the next call to next()
  bool snap_truncated() const { return caplen < wire_len; }
};

enum class ReadStatus : std::uint8_t { Record, End, Error };
std::string to_string(ReadStatus s);

class CaptureReader {
 public:
  CaptureReader() = default;
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // False, with error() set, when the file cannot be read as pcap/pcapng or its link type is
  // not one of LinkType.
  bool open(const std::string& path);
  // Record: `out` holds the next record. End: the file ended cleanly. Error: error() says why
  // (e.g. a record cut short by the end of the file); records before it were good.
  ReadStatus next(CaptureRecord& out);

  LinkType link_type() const { return link_; }
  const std::string& error() const { return error_; }
  std::uint64_t records_read() const { return records_; }
  // Bytes of the file read so far (for progress lines); -1 when unknown.
  std::int64_t file_position() const;

 private:
  void close();

  pcap* pcap_ = nullptr;
  std::unique_ptr<char[]> buffer_;  // the FILE's read buffer; outlives pcap_, which closes the FILE
  LinkType link_ = LinkType::Ethernet;
  std::string error_;
  std::uint64_t records_ = 0;
};

}  // namespace roce::capture
