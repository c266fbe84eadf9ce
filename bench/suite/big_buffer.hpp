// The buffers larger than the LLC that copies land in. Every 8-byte word of them differs from
// its neighbours: this machine is a guest, and a host may reclaim a page that repeats one value
// (same-filled page compression, page merging) and fault it back on the next write. A timed
// window that wrote such pages ran at a fifth of its speed until it had passed over the whole
// buffer once. The same two buffers serve every case and baseline of a run, so a ratio never
// compares memory with a different history (a freshly allocated gigabyte ran the memcpy+ICRC
// ceiling anywhere between 6 and 120 Gbit/s here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace roce::bench {

struct BigBuffers {
  std::vector<std::byte> a, b;
};

// Allocated and filled on the first call; every call touches each page again, so pages the
// host took back are faulted in before the caller starts timing.
BigBuffers& big_buffers(std::size_t bytes);

}  // namespace roce::bench
