// Dataplane tests share one EAL per process: no hugepages, no PCI, a private file prefix, and
// telemetry on (its socket is under /var/run/dpdk/<prefix>/ for the telemetry tests).
#include <gtest/gtest.h>
#include <unistd.h>

#include "dataplane/eal.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string prefix = "--file-prefix=roce_dp_test_" + std::to_string(getpid());
  const auto s = roce::dp::Eal::init({"dataplane_tests", "--no-huge", "--no-pci", "-m", "512", prefix.c_str(),
                                      "--log-level=error"});
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  roce::dp::Eal::cleanup();
  return rc;
}
