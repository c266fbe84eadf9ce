// The two forms an endpoint address takes here: the engine's (lib/rdma/address.hpp, what the
// dataplane and the GIDs use) and the cma_hdr's (protocol/cma_header.hpp, what rdma_cm carries
// in its private data). Either family converts to the other unchanged.
#pragma once

#include "lib/rdma/address.hpp"
#include "protocol/cma_header.hpp"

namespace roce::cm {

inline proto::IpAddress cma_ip(const rdma::IpAddress& a) {
  return a.version == proto::IpVersion::V4 ? proto::IpAddress::of(a.v4) : proto::IpAddress::of(a.v6);
}

inline rdma::IpAddress engine_ip(const proto::IpAddress& a) {
  return a.version == proto::IpVersion::V4 ? rdma::IpAddress::ipv4(a.v4) : rdma::IpAddress::ipv6(a.v6);
}

}  // namespace roce::cm
