// A namespace's blocks, in memory or in a file. File-backed namespaces write through with
// pwrite, so what the host wrote is in the file when the command completes; Flush adds fsync.
// Every access is bounds-checked here again, so a command that slipped past the controller's
// LBA checks still cannot touch bytes outside the namespace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/status.hpp"

namespace roce::nvmf {

enum class MediaResult : std::uint8_t { Ok, OutOfRange, IoError };

// Held by its subsystem and, while a zero-copy transfer moves data between a host and its
// memory, by the command doing it (shared_from_this): a namespace removed meanwhile keeps its
// memory until the last such transfer ended.
class NamespaceStore : public std::enable_shared_from_this<NamespaceStore> {
 public:
  static Result<std::unique_ptr<NamespaceStore>> memory(std::uint64_t blocks, std::uint32_t block_size);
  // Opens (creating if absent) `path`; an existing file's size gives the block count, rounded
  // down, unless `blocks` is non-zero, in which case the file is sized to it.
  static Result<std::unique_ptr<NamespaceStore>> file(const std::string& path, std::uint64_t blocks,
                                                      std::uint32_t block_size);
  ~NamespaceStore();
  NamespaceStore(const NamespaceStore&) = delete;
  NamespaceStore& operator=(const NamespaceStore&) = delete;

  std::uint64_t blocks() const { return blocks_; }
  std::uint32_t block_size() const { return block_size_; }
  std::uint8_t block_shift() const { return block_shift_; }
  bool file_backed() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Never reused by another namespace of this process: what a transport keys its memory
  // registration of `memory()` by.
  std::uint64_t id() const { return id_; }
  // The blocks themselves, for zero-copy transfers (empty for a file namespace).
  std::span<std::byte> memory() const { return {mem_, fd_ < 0 ? blocks_ << block_shift_ : 0}; }
  // Blocks [lba, lba + nblocks) of memory(); empty when out of range or file-backed.
  std::span<std::byte> blocks_at(std::uint64_t lba, std::uint64_t nblocks) const;

  // Zero-copy transfers (RDMA straight from or into memory()) register their blocks while the
  // data moves, so that overlapping commands keep NVMe's single-block atomicity: a transfer
  // into the blocks excludes any other access to them, one out of them excludes writes.
  // begin_transfer fails on such an overlap (or with kMaxTransfers in flight): the command then
  // takes the copy path. conflicts() says whether a copy-path access must wait.
  static constexpr std::size_t kMaxTransfers = 1024;
  bool begin_transfer(const void* owner, std::uint64_t lba, std::uint64_t nblocks, bool into);
  void end_transfer(const void* owner);
  bool conflicts(std::uint64_t lba, std::uint64_t nblocks, bool writing) const;
  std::size_t transfers() const { return transfers_.size(); }
  // Commands waiting for a transfer to end: while there are any, no new transfer begins (new
  // commands copy), so a stream of zero-copy reads cannot starve a waiting write.
  void add_waiter() { ++waiters_; }
  void remove_waiter() { --waiters_; }

  MediaResult read(std::uint64_t lba, std::span<std::byte> out) const;
  MediaResult write(std::uint64_t lba, std::span<const std::byte> in);
  MediaResult zero(std::uint64_t lba, std::uint64_t nblocks);
  MediaResult flush();

 private:
  NamespaceStore(std::uint64_t blocks, std::uint32_t block_size);
  bool in_range(std::uint64_t lba, std::uint64_t nbytes) const;

  struct Transfer {
    const void* owner;
    std::uint64_t first, end;  // blocks [first, end)
    bool into;
  };

  std::uint64_t id_;
  std::uint64_t blocks_;
  std::uint32_t block_size_;
  std::uint8_t block_shift_ = 0;
  // A memory namespace: an anonymous mapping, 2 MiB aligned and advised for transparent huge
  // pages (random 4 KiB I/O over 4 KiB pages spends most of its copy on TLB misses, twice as
  // dear in a VM's nested paging), faulted in at creation.
  std::byte* mem_ = nullptr;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  int fd_ = -1;
  std::string path_;
  std::vector<Transfer> transfers_;  // capacity kMaxTransfers, reserved at creation
  std::size_t waiters_ = 0;
};

}  // namespace roce::nvmf
