// roce-craft: start-up only; `roce-gen raw` is the same tool. DPDK options (port mode) come
// before `--`, roce-craft's after it; with no `--` everything is roce-craft's. The work is in
// craft_run.cpp.
#include <unistd.h>

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
  return craft_main("roce-craft", split.eal, split.app);
}
