// Where a received WRITE will store its first bytes, asked for a couple of frames ahead. A worker
// whose QPs write many regions waits otherwise on a read-for-ownership per 64 B message: the
// hardware prefetcher follows one sequential stream, not sixteen (docs/perf-changes.md
// section 29). Only what a prefetch needs is looked at; the engine checks everything when the
// frame's turn comes, and a prefetch of a wrong address costs a cache line, never a fault.
#pragma once

#include <cstddef>
#include <span>

#include "lib/rdma/memory.hpp"

namespace roce::dp {

// The local address an RC or UC WRITE_FIRST / WRITE_ONLY (with or without immediate) in `frame`
// writes first, from its RETH through `mrs`; nullptr for any other frame, or a key or range
// the table does not hold.
const std::byte* write_destination(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept;

}  // namespace roce::dp
