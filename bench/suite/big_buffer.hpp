// The buffers larger than the LLC that copies land in. Every 8-byte word of them differs from
// its neighbours: this machine is a guest, and a host may reclaim a page that repeats one value
// (same-filled page compression, page merging) and fault it back on the next write. A timed
// window that wrote such pages ran at a fifth of its speed until it had passed over the whole
// buffer once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace roce::bench {

std::vector<std::byte> make_big_buffer(std::size_t bytes, std::uint64_t seed);

// Rewrites one word of every page, so pages the host took back are faulted in before timing.
void touch_pages(std::span<std::byte> buf, std::uint64_t seed);

}  // namespace roce::bench
