// roce-make-replay-goldens OUTDIR: writes every golden replay scenario (cases.hpp) as
// NAME.scenario, NAME.in.pcap (what the peer sends) and NAME.out.pcap (what we must answer).
// scripts/make_replay_goldens.sh runs it to regenerate pcap/replay/.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "capture/capture_writer.hpp"
#include "apps/replay_goldens/cases.hpp"

namespace {

bool write_pcap(const std::filesystem::path& path, const std::vector<roce::goldens::TimedFrame>& frames) {
  roce::capture::CaptureWriter w;
  if (!w.open(path.string(), roce::capture::LinkType::Ethernet)) {
    std::fprintf(stderr, "roce-make-replay-goldens: %s: %s\n", path.c_str(), w.error().c_str());
    return false;
  }
  for (const auto& f : frames)
    w.write(roce::goldens::kStartSec + f.at_ns / 1'000'000'000, static_cast<std::uint32_t>(f.at_ns % 1'000'000'000 / 1000),
            f.bytes);
  if (!w.close()) {
    std::fprintf(stderr, "roce-make-replay-goldens: %s: %s\n", path.c_str(), w.error().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: roce-make-replay-goldens OUTDIR\n"
                         "Writes the golden replay scenarios (NAME.scenario, NAME.in.pcap, NAME.out.pcap).\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    for (const auto& c : roce::goldens::golden_cases()) {
      std::ofstream s(dir / (c.name + ".scenario"), std::ios::binary | std::ios::trunc);
      s << c.scenario;
      if (!s) {
        std::fprintf(stderr, "roce-make-replay-goldens: cannot write %s.scenario\n", c.name.c_str());
        return 1;
      }
      if (!write_pcap(dir / (c.name + ".in.pcap"), c.frames.in()) || !write_pcap(dir / (c.name + ".out.pcap"), c.frames.out()))
        return 1;
      std::printf("%-24s %3zu frames in, %3zu expected out\n", c.name.c_str(), c.frames.in().size(), c.frames.out().size());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-make-replay-goldens: %s\n", e.what());
    return 1;
  }
  return 0;
}
