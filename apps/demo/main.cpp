// roce-demo: the README's main job. Start-up and wiring only; apps/demo/demo.cpp runs it.
#include <cstdio>
#include <iostream>

#include <cxxopts.hpp>

#include "client/runtime.hpp"
#include "apps/demo/demo.hpp"

using namespace roce;
using namespace roce::client;

int demo_main(int argc, char** argv) {
  const dp::SplitArgs split = dp::split_args(argc, argv, default_eal_args("roce-demo"));
  cxxopts::Options opts("roce-demo",
                        "roce-demo: roce-gen and roce-appliance in one process, over virtual DPDK ports joined by a link\n"
                        "emulator with a little loss and an ECN-marking bottleneck. Prints the perftest-style result,\n"
                        "retransmissions and CNPs, and writes a pcap of the first packets and a DCQCN rate trace.\n"
                        "No NIC and no hugepages needed.");
  std::string size;
  DemoOptions d;
  d.spec.verb = Verb::Write;
  d.spec.measure = Measure::Bandwidth;
  opts.add_options()
      ("s,size", "message size in bytes", cxxopts::value<std::string>(size)->default_value("65536"))
      ("n,iters", "messages", cxxopts::value<std::uint64_t>(d.spec.iters)->default_value("4000"))
      ("loss", "loss probability on the link, each way", cxxopts::value<double>(d.loss)->default_value("0.001"))
      ("dup", "duplication probability on the link, each way", cxxopts::value<double>(d.duplicate)->default_value("0"))
      ("reorder", "probability a frame is held back 100 us (reordered), each way", cxxopts::value<double>(d.reorder)->default_value("0"))
      ("soak", "soak mode: verified WRITE/READ/atomic rounds for this many seconds, watching memory and mbufs",
       cxxopts::value<double>(d.soak_s)->default_value("0"))
      ("soak-rss-slack", "soak: resident memory growth allowed after warm-up, MiB", cxxopts::value<double>(d.soak_rss_slack_mib)->default_value("16"))
      ("bottleneck", "bottleneck rate, Gb/s", cxxopts::value<double>(d.bottleneck_gbps)->default_value("2"))
      ("q,qps", "sender QPs (flows) sharing the bottleneck, each with its own DCQCN rate", cxxopts::value<unsigned>(d.flows)->default_value("2"))
      ("out", "directory for the pcap and the rate trace", cxxopts::value<std::string>(d.out_dir)->default_value("demo-out"))
      ("h,help", "this text");
  std::vector<const char*> av;
  for (const auto& a : split.app) av.push_back(a.c_str());
  try {
    auto r = opts.parse(static_cast<int>(av.size()), av.data());
    if (r.count("help")) {
      std::cout << opts.help();
      return 0;
    }
    if (!r.unmatched().empty()) throw std::runtime_error("unexpected argument '" + r.unmatched().front() + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-demo: %s (try --help)\n", e.what());
    return 2;
  }
  const auto sz = parse_size(size);
  if (!sz || *sz == 0 || *sz > (8u << 20)) {
    std::fprintf(stderr, "roce-demo: bad --size '%s' (1 B .. 8 MiB)\n", size.c_str());
    return 2;
  }
  d.spec.size = static_cast<std::uint32_t>(*sz);
  if (d.loss < 0 || d.loss >= 0.5 || d.duplicate < 0 || d.duplicate >= 0.5 || d.reorder < 0 || d.reorder >= 0.5 ||
      d.bottleneck_gbps <= 0 || d.spec.iters == 0 || d.soak_s < 0 || d.soak_rss_slack_mib < 0 || d.flows == 0 || d.flows > 16) {
    std::fprintf(stderr, "roce-demo: --loss, --dup and --reorder must be in [0, 0.5), --bottleneck and --iters positive, --qps 1..16, --soak not negative\n");
    return 2;
  }
  // Before DPDK starts: a directory that cannot be made is the command line's fault (exit 2).
  // The soak writes no files.
  if (d.soak_s == 0)
    if (Status s = prepare_out_dir(d.out_dir); !s) {
      std::fprintf(stderr, "roce-demo: %s\n", s.error().message.c_str());
      return 2;
    }
  std::vector<std::string> eal = split.eal;
  if (eal.size() > 3 && eal[3] == "512") eal[3] = "1024";  // the default: three mbuf pools need more room
  ToolEal tool_eal;
  // The demo's runs end on their own; Ctrl-C keeps its default meaning.
  const auto fail = [](const std::string& why, int code) { return report_error("roce-demo", why, code); };
  if (int rc = tool_eal.start(eal, {}, fail, /*stop_signals=*/false)) return rc;
  auto r = run_demo(d);
  if (!r) {
    std::fprintf(stderr, "roce-demo: %s\n", r.error().message.c_str());
    return 1;
  }
  return r->exit_code;
}

int main(int argc, char** argv) {
  return guarded_main("roce-demo", [&] { return demo_main(argc, argv); });
}
