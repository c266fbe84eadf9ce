#include "capture/capture_reader.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace roce::capture {

namespace {
constexpr std::size_t kReadBuffer = 1 << 20;
}  // namespace

std::string to_string(ReadStatus s) {
  switch (s) {
    case ReadStatus::Record: return "record";
    case ReadStatus::End: return "end";
    case ReadStatus::Error: return "error";
  }
  return "unknown";
}

CaptureReader::~CaptureReader() { close(); }

void CaptureReader::close() {
  if (pcap_) pcap_close(pcap_);
  pcap_ = nullptr;
}

bool CaptureReader::open(const std::string& path) {
  close();
  records_ = 0;
  error_.clear();
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  // Our own FILE with a large buffer: libpcap's default one costs a read() every few frames,
  // more system time than the decoding of a large capture takes.
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error_ = std::strerror(errno);
    return false;
  }
  // glibc ignores the size unless it is given the buffer too.
  if (!buffer_) buffer_ = std::make_unique<char[]>(kReadBuffer);
  std::setvbuf(f, buffer_.get(), _IOFBF, kReadBuffer);
  // Nanosecond precision keeps pcapng and nanosecond-pcap timestamps exact.
  pcap_ = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!pcap_) {
    std::fclose(f);  // libpcap leaves a FILE it did not accept to the caller
    error_ = errbuf[0] ? errbuf : "cannot open capture";
    return false;
  }
  const int dlt = pcap_datalink(pcap_);
  const auto link = link_type_from_dlt(dlt);
  if (!link) {
    const char* name = pcap_datalink_val_to_name(dlt);
    error_ = "link type " + std::to_string(dlt) + " (" + (name ? name : "unknown") +
             ") is not supported; supported: Ethernet, Linux cooked (SLL, SLL2), raw IP";
    close();
    return false;
  }
  link_ = *link;
  return true;
}

std::int64_t CaptureReader::file_position() const {
  if (!pcap_) return -1;
  FILE* f = pcap_file(pcap_);
  return f ? static_cast<std::int64_t>(std::ftell(f)) : -1;
}

ReadStatus CaptureReader::next(CaptureRecord& out) {
  if (!pcap_) {
    error_ = "no capture open";
    return ReadStatus::Error;
  }
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(pcap_, &hdr, &data);
  if (rc == PCAP_ERROR_BREAK) return ReadStatus::End;
  if (rc != 1) {
    error_ = pcap_geterr(pcap_);
    return ReadStatus::Error;
  }
  ++records_;
  out.index = records_;
  out.ts_sec = hdr->ts.tv_sec;
  out.ts_nsec = static_cast<std::uint32_t>(hdr->ts.tv_usec);  // nanoseconds at this precision
  out.caplen = hdr->caplen;
  out.wire_len = hdr->len;
  out.data = proto::ByteSpan(reinterpret_cast<const std::byte*>(data), hdr->caplen);
  return ReadStatus::Record;
}

}  // namespace roce::capture
