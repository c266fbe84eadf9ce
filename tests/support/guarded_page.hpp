// One read-write page between two PROT_NONE pages: a kernel's masked loads at a buffer's first
// or last byte must stay within the buffer (a stray byte read faults).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace roce::test {

class GuardedPage {
 public:
  GuardedPage() {
    void* m = mmap(nullptr, 3 * size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    base_ = static_cast<std::byte*>(m);
    if (mprotect(base_, size_, PROT_NONE) != 0 || mprotect(base_ + 2 * size_, size_, PROT_NONE) != 0) {
      munmap(base_, 3 * size_);
      base_ = nullptr;
    }
  }
  ~GuardedPage() {
    if (base_ != nullptr) munmap(base_, 3 * size_);
  }
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;

  bool ok() const { return base_ != nullptr; }
  std::byte* data() const { return base_ + size_; }  // the readable page
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::byte* base_ = nullptr;
};

}  // namespace roce::test
