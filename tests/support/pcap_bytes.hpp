// Classic pcap files assembled byte by byte (little-endian, microsecond timestamps), so reader
// tests do not depend on libpcap's own writer and can cut files anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace roce::test {

inline void put_le32(std::vector<char>& f, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void put_le16(std::vector<char>& f, std::uint16_t v) {
  f.push_back(static_cast<char>(v & 0xFF));
  f.push_back(static_cast<char>(v >> 8));
}

inline constexpr std::size_t kPcapFileHeaderBytes = 24;
inline constexpr std::size_t kPcapRecordHeaderBytes = 16;

inline std::vector<char> pcap_file_header(std::uint32_t linktype, std::uint32_t snaplen = 65535) {
  std::vector<char> f;
  put_le32(f, 0xA1B2C3D4);  // microsecond pcap, written little-endian
  put_le16(f, 2);
  put_le16(f, 4);
  put_le32(f, 0);  // thiszone
  put_le32(f, 0);  // sigfigs
  put_le32(f, snaplen);
  put_le32(f, linktype);
  return f;
}

// Appends one record; wire_len 0 means the record holds the whole frame.
inline void append_record(std::vector<char>& f, std::span<const std::byte> data, std::uint32_t ts_sec,
                          std::uint32_t ts_usec, std::uint32_t wire_len = 0) {
  put_le32(f, ts_sec);
  put_le32(f, ts_usec);
  put_le32(f, static_cast<std::uint32_t>(data.size()));
  put_le32(f, wire_len ? wire_len : static_cast<std::uint32_t>(data.size()));
  for (std::byte b : data) f.push_back(static_cast<char>(b));
}

}  // namespace roce::test
