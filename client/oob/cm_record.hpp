// perftest's QP record as its -R (rdma_cm) exchange sends it: rdma_write_keys copies
// `struct pingpong_dest` (perftest 4.5, src/perftest_resources.h) into one SEND of its size, the
// integers in network order (HAVE_ENDIAN, as Debian builds it), the C layout of x86-64 with its
// padding: lid, out_reads, qpn, psn, rkey (4 bytes each), 4 bytes of padding, vaddr (8), the GID
// (16), srqn, gid_index (4 each): 56 bytes. rdma_read_keys takes lid..gid and leaves srqn and
// gid_index. Every other step of the -R exchange is the TCP one's bytes, one SEND each.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "client/oob/records.hpp"

namespace roce::client {

inline constexpr std::size_t kPerftestCmRecordBytes = 56;

// The padding goes out as zeros (perftest's is whatever its stack held); gid_index as given.
std::array<std::byte, kPerftestCmRecordBytes> format_perftest_cm(const PerftestDest& d, std::int32_t gid_index = 0);
// A message of any other length is refused (perftest's receive is exactly the record's size).
Result<PerftestDest> parse_perftest_cm(std::span<const std::byte> message);

}  // namespace roce::client
