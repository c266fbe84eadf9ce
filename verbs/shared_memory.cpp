#include "verbs/shared_memory.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>

namespace roce::verbs {
namespace {

struct Moved {
  std::uintptr_t end = 0;
  int fd = -1;
  std::uint64_t fd_offset = 0;
  ino_t inode = 0;
};

// A pthread mutex, not std::mutex: the fork handlers below hold it across fork() and the child
// initialises its copy afresh.
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
std::map<std::uintptr_t, Moved> g_moved;  // by first address; runs do not overlap

struct Locked {
  Locked() { pthread_mutex_lock(&g_mutex); }
  ~Locked() { pthread_mutex_unlock(&g_mutex); }
};

struct MapLine {
  std::uintptr_t start, end;
  std::uint64_t offset;
  ino_t inode;
};

std::uintptr_t page_size() {
  static const std::uintptr_t p = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

std::vector<MapLine> read_maps() {
  std::vector<MapLine> out;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long start, end, offset, inode;
    char perms[8];
    unsigned dev_major, dev_minor;
    if (std::sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &start, &end, perms, &offset, &dev_major, &dev_minor, &inode) == 7)
      out.push_back({start, end, offset, static_cast<ino_t>(inode)});
  }
  std::fclose(f);
  return out;
}

// Whether [start, m.end) is still mapped from m's memfd at m's offsets (the program may have
// unmapped the buffer, or mapped something else there, since it was moved).
bool still_shared(const std::vector<MapLine>& maps, std::uintptr_t start, const Moved& m) {
  for (std::uintptr_t x = start; x < m.end;) {
    const MapLine* hit = nullptr;
    for (const auto& l : maps)
      if (l.start <= x && x < l.end) hit = &l;
    if (hit == nullptr || hit->inode != m.inode || hit->offset + (x - hit->start) != m.fd_offset + (x - start)) return false;
    x = hit->end;
  }
  return true;
}

// fork(): MAP_SHARED pages stay shared with the child, so a moved heap page would be written by
// both processes' allocators. The child gets what fork promises instead, a private copy, as the
// kernel copies a registered (pinned) page for the child: the forking thread snapshots every
// moved run into private memory just before fork() (the copy must be taken before the parent
// runs on: copying in the child raced with the parent's own malloc right after fork and handed
// the child a torn heap), the child moves the snapshots over the runs (mremap), the parent drops
// its copies. Its registrations stay the parent's. The cost: a copy of every moved page per fork.
struct Snapshot {
  std::uintptr_t start;
  std::size_t size;
  void* copy;
};
// Static, not on the heap: the heap's own pages may be among those snapshotted, and the child
// reads this list while it moves the snapshots in.
constexpr std::size_t kMaxSnapshots = 4096;
Snapshot g_snapshots[kMaxSnapshots];
std::size_t g_snapshot_count = 0;  // only between prepare and after

// Every mapping of one of our memfds is snapshotted, found in /proc/self/maps rather than from
// the runs: the heap's own trimming can unmap part of a run and leave the rest shared.
void before_fork() {
  pthread_mutex_lock(&g_mutex);
  g_snapshot_count = 0;
  if (g_moved.empty()) return;
  // Which mappings to copy, found first; the lists that found them are freed before the first
  // copy: nothing may allocate or free between the first snapshot and fork(), or a moved heap
  // page copied before it would not match the rest of the child's heap.
  static MapLine lines[kMaxSnapshots];
  std::size_t n = 0;
  {
    const auto maps = read_maps();
    std::vector<ino_t> ours;
    ours.reserve(g_moved.size());
    for (const auto& [start, m] : g_moved) ours.push_back(m.inode);
    for (const MapLine& l : maps)
      if (n < kMaxSnapshots && std::find(ours.begin(), ours.end(), l.inode) != ours.end()) lines[n++] = l;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t size = lines[i].end - lines[i].start;
    void* copy = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) continue;
    std::memcpy(copy, reinterpret_cast<void*>(lines[i].start), size);
    g_snapshots[g_snapshot_count++] = {lines[i].start, size, copy};
  }
}
void after_fork_parent() {
  for (std::size_t i = 0; i < g_snapshot_count; ++i) ::munmap(g_snapshots[i].copy, g_snapshots[i].size);
  g_snapshot_count = 0;
  pthread_mutex_unlock(&g_mutex);
}
void after_fork_child() {
  // The snapshots first: until they are in, the heap may still be the parent's, changing.
  for (std::size_t i = 0; i < g_snapshot_count; ++i) {
    const Snapshot& s = g_snapshots[i];
    ::mremap(s.copy, s.size, s.size, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(s.start));
  }
  g_snapshot_count = 0;
  for (auto& [start, m] : g_moved) ::close(m.fd);
  g_moved.clear();
  pthread_mutex_init(&g_mutex, nullptr);
}

// Moves [start, end) (whole pages) into a new sealed memfd mapped over the same range.
Result<Moved> move_pages(std::uintptr_t start, std::uintptr_t end) {
  const std::size_t size = end - start;
  const int fd = ::memfd_create("roce-verbs-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return make_error(errno, "memfd_create");
  auto fail = [fd](int e, const char* what) {
    ::close(fd);
    return make_error(e, what);
  };
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return fail(errno, "ftruncate");
  // Sealed at its size: the service maps it, and a file that shrank under its mapping would
  // fault the service's dataplane (SIGBUS) instead of the program.
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return fail(errno, "memfd seals");
  void* view = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (view == MAP_FAILED) return fail(errno, "mmap");
  // The current contents, read through the kernel: unmapped or unreadable memory is EFAULT
  // here instead of a fault in the program.
  iovec local{view, size};
  iovec remote{reinterpret_cast<void*>(start), size};
  const ssize_t got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  if (got != static_cast<ssize_t>(size)) {
    const int e = got < 0 ? errno : EFAULT;
    ::munmap(view, size);
    return fail(e == ESRCH || e == EPERM ? EFAULT : e, "buffer not readable");
  }
  void* at = ::mmap(reinterpret_cast<void*>(start), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  ::munmap(view, size);
  if (at == MAP_FAILED) return fail(errno, "mmap over the buffer");
  struct stat st {};
  ::fstat(fd, &st);
  return Moved{end, fd, 0, st.st_ino};
}

}  // namespace

std::uintptr_t page_floor(std::uintptr_t addr) { return addr & ~(page_size() - 1); }
std::uintptr_t page_ceil(std::uintptr_t addr) { return page_floor(addr + page_size() - 1); }

Result<std::vector<SharedSegment>> share_pages(const void* addr, std::size_t length) {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (length == 0 || a + length < a) return make_error(EINVAL, "empty or wrapping range");
  const std::uintptr_t start = page_floor(a), end = page_ceil(a + length);
  static const int registered = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  (void)registered;
  Locked g;
  const auto maps = read_maps();
  // Forget runs in the range that the program unmapped or replaced since they were moved.
  for (auto it = g_moved.begin(); it != g_moved.end();) {
    if (it->second.end > start && it->first < end && !still_shared(maps, it->first, it->second)) {
      ::close(it->second.fd);
      it = g_moved.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<SharedSegment> out;
  for (std::uintptr_t x = start; x < end;) {
    auto next = g_moved.upper_bound(x);
    if (next != g_moved.begin()) {
      const auto cur = std::prev(next);
      if (cur->first <= x && x < cur->second.end) {
        const std::uintptr_t stop = std::min(cur->second.end, end);
        out.push_back({cur->second.fd, cur->second.fd_offset + (x - cur->first), stop - x});
        x = stop;
        continue;
      }
    }
    const std::uintptr_t stop = next == g_moved.end() ? end : std::min<std::uintptr_t>(next->first, end);
    auto moved = move_pages(x, stop);
    if (!moved) return moved.error();
    g_moved.emplace(x, *moved);
    out.push_back({moved->fd, 0, stop - x});
    x = stop;
  }
  return out;
}

}  // namespace roce::verbs
