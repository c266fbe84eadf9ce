// The capture's requests name memory by the R_Key and virtual address the real responder
// handed out; our regions have keys from MrTable and addresses of our buffers. Before a
// request reaches the engine its RETH, AtomicETH and IETH are rewritten from the capture's
// values to ours and its ICRC is computed again (docs/replay.md, "Memory keys").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/rdma/address.hpp"
#include "protocol/be.hpp"
#include "protocol/crc32.hpp"

namespace roce::replay {

struct KeyMapping {
  std::uint32_t capture_rkey = 0;
  std::uint64_t capture_va = 0;  // what the capture calls byte 0 of the region
  std::uint32_t rkey = 0;        // the region's key in our MrTable
  std::uint64_t va = 0;          // the region's address for remote access (its iova)
};

enum class Rewrite : std::uint8_t {
  None,       // no key in this frame, or not a request we can rewrite (bad or uncheckable ICRC)
  Mapped,     // the key was one the scenario declares
  Unmapped,   // an undeclared key: replaced by 0, which no region ever has
};

std::string to_string(Rewrite r);

class KeyMap {
 public:
  void add(const KeyMapping& m) { maps_.push_back(m); }
  // Only requests to this address are rewritten (others are not ours and get dropped).
  void set_local(const rdma::IpAddress& ip) { local_ = ip; }
  const KeyMapping* find(std::uint32_t capture_rkey) const;
  // Rewrites `frame` in place. A frame whose ICRC does not verify is left alone: the engine
  // drops it on the ICRC before any key is looked at, and a rewrite would repair it.
  Rewrite rewrite(proto::MutableByteSpan frame, proto::CrcBackend crc = proto::CrcBackend::Isal) const;
  bool empty() const { return maps_.empty(); }

 private:
  std::vector<KeyMapping> maps_;
  std::optional<rdma::IpAddress> local_;
};

}  // namespace roce::replay
