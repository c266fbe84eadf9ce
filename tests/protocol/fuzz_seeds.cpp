// Writes the seed corpus of fuzz_parser: frames from our builder for every opcode (Ethernet with
// 0-2 VLAN tags, and bare IP datagrams, IPv4 and IPv6), and the frames of the shared captures
// when their directory is given. Seeds are made at run time, never committed.
//   fuzz_seeds <out-dir> [captures-dir]
#include <dirent.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/support/capture_file.hpp"
#include "tests/support/random_frames.hpp"

namespace {

constexpr std::size_t kMaxFramesPerCapture = 48;  // the big captures repeat the same few shapes

bool write_seed(const std::string& dir, const std::string& name, const std::vector<std::byte>& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

std::size_t builder_seeds(const std::string& dir) {
  using namespace roce::proto;
  roce::test::Rng rng(0xF022);
  std::size_t n = 0;
  for (std::uint8_t op : roce::test::valid_opcodes()) {
    for (auto v : {IpVersion::V4, IpVersion::V6}) {
      for (int l2 = 0; l2 < 4; ++l2) {
        roce::test::RandomFrameOptions o;
        o.ip_version = v;
        o.with_ethernet = l2 > 0;
        o.vlan_count = static_cast<std::uint8_t>(l2 > 0 ? l2 - 1 : 0);
        o.pad = static_cast<std::uint8_t>(rng() % 4);
        o.max_payload = (rng() % 4 == 0) ? 4096 : 256;  // mostly short: cheaper to mutate
        const auto frame = roce::test::build(roce::test::random_frame(rng, op, o));
        char name[64];
        std::snprintf(name, sizeof name, "builder-%02x-v%d-l2%d", op, static_cast<int>(v), l2);
        n += write_seed(dir, name, frame);
      }
    }
  }
  return n;
}

std::vector<std::string> pcaps_under(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".pcap") == 0) {
      out.push_back(path);
    } else if (e->d_type == DT_DIR) {
      for (auto& p : pcaps_under(path)) out.push_back(p);
    }
  }
  closedir(d);
  return out;
}

std::size_t capture_seeds(const std::string& out_dir, const std::string& captures) {
  std::size_t n = 0;
  std::set<std::vector<std::byte>> seen;
  for (const auto& path : pcaps_under(captures)) {
    const auto pcap = roce::test::read_capture(path);
    if (!pcap.error.empty() || pcap.link != roce::capture::LinkType::Ethernet) {
      std::fprintf(stderr, "fuzz_seeds: skipping %s (%s)\n", path.c_str(),
                   pcap.error.empty() ? "not Ethernet" : pcap.error.c_str());
      continue;
    }
    const std::size_t step = pcap.records.size() / kMaxFramesPerCapture + 1;
    const std::string base = path.substr(path.rfind('/') + 1);
    for (std::size_t i = 0; i < pcap.records.size(); i += step) {
      if (!seen.insert(pcap.records[i].data).second) continue;
      n += write_seed(out_dir, "capture-" + base + "-" + std::to_string(i), pcap.records[i].data);
    }
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <out-dir> [captures-dir]\n", argv[0]);
    return 2;
  }
  const std::size_t built = builder_seeds(argv[1]);
  const std::size_t captured = argc == 3 ? capture_seeds(argv[1], argv[2]) : 0;
  std::printf("fuzz_seeds: %zu builder frames, %zu capture frames -> %s\n", built, captured, argv[1]);
  return built > 0 ? 0 : 1;
}
