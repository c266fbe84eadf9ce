#include "client/buffers.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace roce::client {

MappedBuffer::~MappedBuffer() {
  if (data_) ::munmap(data_, size_);
}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Result<MappedBuffer> MappedBuffer::anonymous(std::size_t bytes) {
  if (bytes == 0) return make_error(EINVAL, "a buffer of 0 bytes");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return make_error(errno, "cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  MappedBuffer b;
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

Result<MappedBuffer> MappedBuffer::file(const std::string& path, std::size_t bytes) {
  if (bytes == 0) return make_error(EINVAL, "a region of 0 bytes");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(errno, "cannot open " + path + ": " + std::strerror(errno));
  // Grow a short file; never cut a longer one (it may be someone's data, served as remote memory).
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(EINVAL, path + " is not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) < bytes && ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error(err, "cannot size " + path + " to " + std::to_string(bytes) + " bytes: " + std::strerror(err));
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return make_error(err, "cannot map " + path + ": " + std::strerror(err));
  MappedBuffer b;
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

}  // namespace roce::client
