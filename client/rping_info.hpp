// rping's one message (librdmacm examples/rping.c, struct rping_rdma_info): a buffer's address,
// R_Key and length in network byte order, 16 bytes, SENT by the client twice a round (the
// buffer to READ, then the one to WRITE back into) and as the server's go-ahead.
#pragma once

#include <cstdint>

#include "protocol/be.hpp"

namespace roce::client {

struct RpingInfo {
  proto::Be64 buf;
  proto::Be32 rkey;
  proto::Be32 size;
};
static_assert(sizeof(RpingInfo) == 16);

inline constexpr std::uint16_t kRpingPort = 7174;
inline constexpr std::uint16_t kCmatosePort = 7471;

}  // namespace roce::client
