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

#include "lib/status.hpp"

namespace roce::nvmf {

enum class MediaResult : std::uint8_t { Ok, OutOfRange, IoError };

class NamespaceStore {
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

  MediaResult read(std::uint64_t lba, std::span<std::byte> out) const;
  MediaResult write(std::uint64_t lba, std::span<const std::byte> in);
  MediaResult zero(std::uint64_t lba, std::uint64_t nblocks);
  MediaResult flush();

 private:
  NamespaceStore(std::uint64_t blocks, std::uint32_t block_size);
  bool in_range(std::uint64_t lba, std::uint64_t nbytes) const;

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
};

}  // namespace roce::nvmf
