#include "tests/support/sim_host.hpp"

namespace roce::test {

SimHost::SimHost(std::string name, rdma::EngineConfig cfg)
    : name_(std::move(name)),
      mrs_(std::make_unique<rdma::MrTable>()),
      engine_(std::make_unique<rdma::Engine>(std::move(cfg), *mrs_)),
      buffers_(kBurst, std::vector<std::byte>(kFrameBytes)) {
  for (auto& b : buffers_) frames_.push_back(rdma::TxFrame{b.data(), kFrameBytes, 0});
}

}  // namespace roce::test
