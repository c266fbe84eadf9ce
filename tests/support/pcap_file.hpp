// Reading and writing classic pcap files through libpcap, for tests that exchange frames with
// other tools (scapy, tshark) or read the shared captures.
#pragma once

#include <pcap/pcap.h>

#include <cstddef>
#include <string>
#include <vector>

namespace roce::test {

struct PcapRecord {
  std::vector<std::byte> data;  // the captured bytes (caplen)
  std::size_t wire_length = 0;  // the original length (len)
};

struct PcapContents {
  std::string error;  // empty on success
  int linktype = 0;
  std::vector<PcapRecord> records;
};

inline PcapContents read_pcap(const std::string& path) {
  PcapContents out;
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  if (!p) {
    out.error = err;
    return out;
  }
  out.linktype = pcap_datalink(p);
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc;
  while ((rc = pcap_next_ex(p, &hdr, &data)) == 1) {
    const auto* b = reinterpret_cast<const std::byte*>(data);
    out.records.push_back({std::vector<std::byte>(b, b + hdr->caplen), hdr->len});
  }
  if (rc == PCAP_ERROR) out.error = pcap_geterr(p);
  pcap_close(p);
  return out;
}

// Writes Ethernet frames (or raw IP datagrams with linktype DLT_RAW); returns an error or "".
inline std::string write_pcap(const std::string& path, const std::vector<std::vector<std::byte>>& frames,
                              int linktype = DLT_EN10MB) {
  pcap_t* p = pcap_open_dead(linktype, 262144);
  if (!p) return "pcap_open_dead failed";
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (!d) {
    std::string e = pcap_geterr(p);
    pcap_close(p);
    return e;
  }
  long usec = 0;
  for (const auto& f : frames) {
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = 1'700'000'000 + usec / 1'000'000;  // fixed clock: the file is reproducible
    hdr.ts.tv_usec = usec % 1'000'000;
    usec += 10;
    hdr.caplen = hdr.len = static_cast<bpf_u_int32>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &hdr, reinterpret_cast<const u_char*>(f.data()));
  }
  pcap_dump_close(d);
  pcap_close(p);
  return {};
}

}  // namespace roce::test
