// The lock that makes one Engine usable from a program's threads and the dataplane thread:
// a ticket lock, so that a program thread waiting to post or poll gets the engine after the
// iteration in progress instead of losing every race to the dataplane thread that re-locks at
// once. Held for one verb or one dataplane iteration (microseconds), so waiters spin; after a
// while they yield, in case the holder was descheduled (more runnable threads than CPUs).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace roce::verbs {

class EngineLock {
 public:
  void lock() noexcept {
    const std::uint32_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    unsigned spins = 0;
    while (serving_.load(std::memory_order_acquire) != ticket) {
      if (++spins < kSpinsBeforeYield) pause();
      else sched_yield();
    }
  }
  // Takes the lock only if nobody holds it or waits for it.
  bool try_lock() noexcept {
    std::uint32_t serving = serving_.load(std::memory_order_acquire);
    std::uint32_t expected = serving;
    return next_.compare_exchange_strong(expected, serving + 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept { serving_.store(serving_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  // Someone waits for the lock (or holds it).
  bool contended() const noexcept {
    return next_.load(std::memory_order_relaxed) != serving_.load(std::memory_order_relaxed) + 1;
  }

 private:
  static constexpr unsigned kSpinsBeforeYield = 4096;
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  alignas(64) std::atomic<std::uint32_t> next_{0};
  alignas(64) std::atomic<std::uint32_t> serving_{0};
};

class EngineGuard {
 public:
  explicit EngineGuard(EngineLock& l) noexcept : l_(l) { l_.lock(); }
  ~EngineGuard() { l_.unlock(); }
  EngineGuard(const EngineGuard&) = delete;
  EngineGuard& operator=(const EngineGuard&) = delete;

 private:
  EngineLock& l_;
};

}  // namespace roce::verbs
