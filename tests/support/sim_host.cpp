#include "tests/support/sim_host.hpp"

namespace roce::test {

SimHost::SimHost(std::string name, EngineConfig cfg)
    : name_(std::move(name)),
      mrs_(std::make_unique<MrTable>()),
      engine_(std::make_unique<Engine>(std::move(cfg), *mrs_)),
      buffers_(kBurst, std::vector<std::byte>(kFrameBytes)) {
  for (auto& b : buffers_) frames_.push_back(TxFrame{b.data(), kFrameBytes, 0});
}

}  // namespace roce::test
