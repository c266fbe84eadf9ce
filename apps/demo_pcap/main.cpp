// roce-make-demo-pcap OUT.pcap: writes the demo exchange (demo_exchange.hpp) as a pcap file.
// scripts/make_demo_pcap.sh runs it to regenerate pcap/demo_write_read.pcap.
#include <cstdio>
#include <exception>

#include "capture/capture_writer.hpp"
#include "apps/demo_pcap/demo_exchange.hpp"

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: roce-make-demo-pcap OUT.pcap\n"
                         "Writes a short RoCEv2 WRITE/READ/ACK/CNP exchange built by protocol/builder.\n");
    return 2;
  }
  try {
    const auto frames = roce::demo::demo_exchange();
    roce::capture::CaptureWriter w;
    if (!w.open(argv[1], roce::capture::LinkType::Ethernet)) {
      std::fprintf(stderr, "roce-make-demo-pcap: %s: %s\n", argv[1], w.error().c_str());
      return 1;
    }
    std::uint32_t usec = 0;
    for (const auto& f : frames) {
      w.write(roce::demo::kDemoStartSec, usec, f.bytes);
      std::printf("%3u us  %4zu bytes  %s\n", usec, f.bytes.size(), f.what.c_str());
      usec += roce::demo::kDemoGapUsec;
    }
    if (!w.close()) {
      std::fprintf(stderr, "roce-make-demo-pcap: %s: %s\n", argv[1], w.error().c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-make-demo-pcap: %s\n", e.what());
    return 1;
  }
  return 0;
}
