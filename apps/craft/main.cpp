// roce-craft: start-up only. DPDK options (port mode) come before `--`, roce-craft's after it;
// with no `--` everything is roce-craft's. The work is in craft_run.cpp.
#include <unistd.h>

#include <iostream>

#include "apps/craft/craft_options.hpp"
#include "apps/craft/craft_run.hpp"
#include "dataplane/eal.hpp"

int main(int argc, char** argv) {
  using namespace roce::craft;
  // Without DPDK options: no hugepages, no PCI, private runtime files (ports then come only
  // from options given before `--`, so this default serves --help and errors).
  const std::vector<std::string> eal_defaults = {"--no-huge", "--no-pci", "-m", "256", "--no-telemetry",
                                                 "--log-level=error",
                                                 "--file-prefix=roce-craft-" + std::to_string(getpid())};
  const auto split = roce::dp::split_args(argc, argv, eal_defaults);
  const CraftUsage u = parse_craft_args(split.app);
  if (u.help) {
    std::cout << u.help_text;
    return kExitOk;
  }
  if (u.list_opcodes) {
    std::cout << opcode_list();
    return kExitOk;
  }
  if (!u.error.empty()) {
    std::cerr << "roce-craft: " << u.error << '\n';
    return kExitUsage;
  }
  if (!u.cmd.pcap_path.empty()) return run_pcap(u.cmd, std::cout, std::cerr);
  return run_port(u.cmd, split.eal, std::cout, std::cerr);
}
