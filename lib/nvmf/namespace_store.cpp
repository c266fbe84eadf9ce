#include "lib/nvmf/namespace_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

namespace roce::nvmf {

namespace {
Status check_geometry(std::uint64_t blocks, std::uint32_t block_size) {
  if (block_size < 512 || block_size > 65536 || !std::has_single_bit(block_size))
    return make_error(EINVAL, "namespace block size " + std::to_string(block_size) +
                                  " is not a power of two in 512..65536");
  if (blocks == 0) return make_error(EINVAL, "namespace has no blocks");
  if (blocks > (std::uint64_t{1} << 48) / block_size) return make_error(EINVAL, "namespace larger than 256 TiB");
  return {};
}

std::uint64_t next_id() {
  static std::atomic<std::uint64_t> ids{0};
  return ++ids;
}
}  // namespace

NamespaceStore::NamespaceStore(std::uint64_t blocks, std::uint32_t block_size)
    : id_(next_id()), blocks_(blocks), block_size_(block_size),
      block_shift_(static_cast<std::uint8_t>(std::countr_zero(block_size))) {
  transfers_.reserve(kMaxTransfers);
}

NamespaceStore::~NamespaceStore() {
  if (fd_ >= 0) ::close(fd_);
  if (map_) ::munmap(map_, map_bytes_);
}

Result<std::unique_ptr<NamespaceStore>> NamespaceStore::memory(std::uint64_t blocks, std::uint32_t block_size) {
  if (auto s = check_geometry(blocks, block_size); !s) return s.error();
  std::unique_ptr<NamespaceStore> ns(new NamespaceStore(blocks, block_size));
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  constexpr std::size_t kPage = 4096;
  const std::size_t bytes = static_cast<std::size_t>(blocks) * block_size;
  ns->map_bytes_ = bytes + kHugePage;
  void* m = ::mmap(nullptr, ns->map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return make_error(ENOMEM, "cannot map " + std::to_string(bytes) + " bytes for a memory namespace: " + std::strerror(errno));
  ns->map_ = m;
  const auto base = (reinterpret_cast<std::uintptr_t>(m) + kHugePage - 1) & ~(kHugePage - 1);
  ns->mem_ = reinterpret_cast<std::byte*>(base);
  // Without transparent huge pages (or with them off) this fails and 4 KiB pages serve as before.
  (void)::madvise(ns->mem_, (bytes + kHugePage - 1) & ~(kHugePage - 1), MADV_HUGEPAGE);
  // The mapping reads as zeros; one write per page makes the kernel back it now rather than at
  // the first I/O to each block.
  volatile std::byte* touch = ns->mem_;
  for (std::size_t off = 0; off < bytes; off += kPage) touch[off] = std::byte{0};
  return ns;
}

Result<std::unique_ptr<NamespaceStore>> NamespaceStore::file(const std::string& path, std::uint64_t blocks,
                                                             std::uint32_t block_size) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(errno, "cannot open namespace file " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(e, "cannot stat " + path + ": " + std::strerror(e));
  }
  if (blocks == 0) blocks = static_cast<std::uint64_t>(st.st_size) / std::max<std::uint32_t>(block_size, 1);
  if (auto s = check_geometry(blocks, block_size); !s) {
    ::close(fd);
    return make_error(EINVAL, path + ": " + s.error().message);
  }
  if (static_cast<std::uint64_t>(st.st_size) < blocks * block_size &&
      ::ftruncate(fd, static_cast<off_t>(blocks * block_size)) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(e, "cannot size " + path + ": " + std::strerror(e));
  }
  std::unique_ptr<NamespaceStore> ns(new NamespaceStore(blocks, block_size));
  ns->fd_ = fd;
  ns->path_ = path;
  return ns;
}

bool NamespaceStore::in_range(std::uint64_t lba, std::uint64_t nbytes) const {
  const std::uint64_t size = blocks_ << block_shift_;
  return lba < blocks_ && nbytes <= size - (lba << block_shift_);
}

std::span<std::byte> NamespaceStore::blocks_at(std::uint64_t lba, std::uint64_t nblocks) const {
  if (fd_ >= 0 || nblocks > blocks_ || !in_range(lba, nblocks << block_shift_)) return {};
  return {mem_ + (lba << block_shift_), static_cast<std::size_t>(nblocks << block_shift_)};
}

bool NamespaceStore::conflicts(std::uint64_t lba, std::uint64_t nblocks, bool writing) const {
  const std::uint64_t end = lba + nblocks;
  for (const Transfer& t : transfers_)
    if (t.first < end && lba < t.end && (writing || t.into)) return true;
  return false;
}

bool NamespaceStore::begin_transfer(const void* owner, std::uint64_t lba, std::uint64_t nblocks, bool into) {
  if (waiters_ > 0 || blocks_at(lba, nblocks).empty() || transfers_.size() >= kMaxTransfers ||
      conflicts(lba, nblocks, into))
    return false;
  transfers_.push_back(Transfer{owner, lba, lba + nblocks, into});
  return true;
}

void NamespaceStore::end_transfer(const void* owner) {
  for (std::size_t i = 0; i < transfers_.size(); ++i)
    if (transfers_[i].owner == owner) {
      transfers_[i] = transfers_.back();
      transfers_.pop_back();
      return;
    }
}

MediaResult NamespaceStore::read(std::uint64_t lba, std::span<std::byte> out) const {
  if (!in_range(lba, out.size())) return MediaResult::OutOfRange;
  const std::uint64_t off = lba << block_shift_;
  if (fd_ < 0) {
    std::memcpy(out.data(), mem_ + off, out.size());
    return MediaResult::Ok;
  }
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MediaResult::IoError;
    done += static_cast<std::size_t>(n);
  }
  return MediaResult::Ok;
}

MediaResult NamespaceStore::write(std::uint64_t lba, std::span<const std::byte> in) {
  if (!in_range(lba, in.size())) return MediaResult::OutOfRange;
  const std::uint64_t off = lba << block_shift_;
  if (fd_ < 0) {
    std::memcpy(mem_ + off, in.data(), in.size());
    return MediaResult::Ok;
  }
  std::size_t done = 0;
  while (done < in.size()) {
    const ssize_t n = ::pwrite(fd_, in.data() + done, in.size() - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MediaResult::IoError;
    done += static_cast<std::size_t>(n);
  }
  return MediaResult::Ok;
}

MediaResult NamespaceStore::zero(std::uint64_t lba, std::uint64_t nblocks) {
  if (nblocks > blocks_ || !in_range(lba, nblocks << block_shift_)) return MediaResult::OutOfRange;
  const std::uint64_t off = lba << block_shift_;
  const std::uint64_t len = nblocks << block_shift_;
  if (fd_ < 0) {
    std::memset(mem_ + off, 0, len);
    return MediaResult::Ok;
  }
  static const std::byte zeros[65536]{};
  for (std::uint64_t done = 0; done < len;) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(sizeof zeros, len - done));
    const ssize_t n = ::pwrite(fd_, zeros, chunk, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MediaResult::IoError;
    done += static_cast<std::uint64_t>(n);
  }
  return MediaResult::Ok;
}

MediaResult NamespaceStore::flush() {
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) return MediaResult::IoError;
  return MediaResult::Ok;
}

}  // namespace roce::nvmf
