#include "lib/rdma/qp_context.hpp"

#include <algorithm>
#include <cstring>

#include "protocol/psn.hpp"

namespace roce::rdma {

const RecvWqe* QpContext::next_receive() const {
  if (srq == nullptr) return rq.empty() ? nullptr : &rq.at(rq.head());
  if (srq_holding) return &srq_held;
  return srq->empty() ? nullptr : &srq->head();
}

void QpContext::hold_receive() {
  if (srq == nullptr || srq_holding || srq->empty()) return;
  srq->take(&srq_held, srq_held_segs.data());
  srq_holding = true;
}

void QpContext::pop_receive() {
  if (srq == nullptr) {
    rq.pop();
  } else if (srq_holding) {
    srq_holding = false;
  } else {
    srq->take(nullptr, nullptr);
  }
}

namespace {

template <typename Fn>
void walk_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, std::uint32_t len, Fn&& fn) {
  std::uint32_t i = 0;
  while (i < nseg && offset >= segs[i].length) {
    offset -= segs[i].length;
    ++i;
  }
  std::uint32_t done = 0;
  for (; i < nseg && done < len; ++i) {
    const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(segs[i].length - offset, len - done));
    fn(segs[i].ptr + offset, done, n);
    done += n;
    offset = 0;
  }
}

}  // namespace

void copy_from_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, std::byte* dst,
                        std::uint32_t len) noexcept {
  walk_segments(segs, nseg, offset, len, [dst](std::byte* p, std::uint32_t at, std::uint32_t n) { std::memcpy(dst + at, p, n); });
}

void copy_to_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset, const std::byte* src,
                      std::uint32_t len) noexcept {
  walk_segments(segs, nseg, offset, len, [src](std::byte* p, std::uint32_t at, std::uint32_t n) { std::memcpy(p, src + at, n); });
}

std::byte* contiguous_in_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset,
                                  std::uint32_t len) noexcept {
  for (std::uint32_t i = 0; i < nseg; ++i) {
    if (offset < segs[i].length) return len <= segs[i].length - offset ? segs[i].ptr + offset : nullptr;
    offset -= segs[i].length;
  }
  return nullptr;
}

proto::WriteAhead write_ahead_in_segments(const LocalSegment* segs, std::uint32_t nseg, std::uint64_t offset,
                                          std::uint64_t len) noexcept {
  for (std::uint32_t i = 0; i < nseg; ++i) {
    if (offset < segs[i].length) return {segs[i].ptr + offset, std::min(len, segs[i].length - offset)};
    offset -= segs[i].length;
  }
  return {};
}

}  // namespace roce::rdma
