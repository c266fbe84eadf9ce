// Service mode's MR memory (FreeFlow's way, docs/verbs.md): the pages of a registered buffer are
// moved into a memfd mapped MAP_SHARED|MAP_FIXED over the same range, so the program's pointers
// stay valid and the service maps the same pages. Pages already moved by an earlier
// registration are reused (two buffers in one page, or one buffer registered twice), after
// checking in /proc/self/maps that the program did not unmap or replace them since.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/status.hpp"

namespace roce::verbs {

// A run of a registration's pages in one memfd.
struct SharedSegment {
  int fd = -1;                 // owned by the segment table; the service gets a copy
  std::uint64_t fd_offset = 0;
  std::uint64_t length = 0;    // bytes, whole pages
};

// The memfd segments covering [addr, addr + length) rounded out to pages, in address order,
// moving the pages that are not shared yet. The fds stay owned by the table.
Result<std::vector<SharedSegment>> share_pages(const void* addr, std::size_t length);

// The first address of the page holding `addr`.
std::uintptr_t page_floor(std::uintptr_t addr);
std::uintptr_t page_ceil(std::uintptr_t addr);

}  // namespace roce::verbs
