// Page-aligned memory for test buffers and appliance regions, optionally backed by a file
// (MAP_SHARED) so remote memory outlives the process.
#pragma once

#include <cstddef>
#include <string>

#include "lib/status.hpp"

namespace roce::client {

class MappedBuffer {
 public:
  MappedBuffer() = default;
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& o) noexcept { *this = std::move(o); }
  MappedBuffer& operator=(MappedBuffer&& o) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  // Anonymous, zero-filled.
  static Result<MappedBuffer> anonymous(std::size_t bytes);
  // A file of exactly `bytes` (created or extended; existing contents kept).
  static Result<MappedBuffer> file(const std::string& path, std::size_t bytes);

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace roce::client
