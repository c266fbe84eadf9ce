// roce-make-demo-pcap OUT.pcap: writes the demo exchange (demo_exchange.hpp) as a pcap file.
// scripts/make_demo_pcap.sh runs it to regenerate pcap/demo_write_read.pcap.
#include <cstdio>
#include <string>

#include "apps/demo_pcap/demo_exchange.hpp"
#include "capture/capture_writer.hpp"
#include "client/cli.hpp"

namespace {

constexpr const char* kProg = "roce-make-demo-pcap";

// libpcap's open error names the file already; ours do not.
std::string about(const std::string& path, const std::string& error) {
  return error.find(path) == std::string::npos ? path + ": " + error : error;
}

int write_demo(const std::string& path) {
  const auto frames = roce::demo::demo_exchange();
  roce::capture::CaptureWriter w;
  if (!w.open(path, roce::capture::LinkType::Ethernet)) return roce::client::report_error(kProg, about(path, w.error()));
  std::uint32_t usec = 0;
  for (const auto& f : frames) {
    w.write(roce::demo::kDemoStartSec, usec, f.bytes);
    std::printf("%3u us  %4zu bytes  %s\n", usec, f.bytes.size(), f.what.c_str());
    usec += roce::demo::kDemoGapUsec;
  }
  if (!w.close()) return roce::client::report_error(kProg, about(path, w.error()));
  return roce::client::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: roce-make-demo-pcap OUT.pcap\n"
                         "Writes a short RoCEv2 WRITE/READ/ACK/CNP exchange built by protocol/builder.\n");
    return roce::client::kExitUsage;
  }
  const std::string path = argv[1];
  return roce::client::guarded_main(kProg, [&] { return write_demo(path); });
}
