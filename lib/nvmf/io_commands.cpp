// NVM command set on I/O queues: Read, Write, Flush, Write Zeroes, Dataset Management.
// plan_data (queue.cpp) has already checked the namespace and LBA range of Read and Write and
// fetched their data (a zero-copy Write: into the blocks themselves); the store checks bounds
// once more. A Read on a memory namespace leaves its data where it is: the transport sends it
// from the blocks (slot.zero_copy), unless an overlapping transfer makes it copy.
#include <cstring>
#include <vector>

#include "lib/nvmf/queue.hpp"

namespace roce::nvmf {

namespace nv = proto::nvme;
using nv::NvmeStatus;

namespace {

NvmeStatus media_status(MediaResult r, bool writing) {
  switch (r) {
    case MediaResult::Ok: return nv::kOk;
    case MediaResult::OutOfRange: return nv::generic_error(nv::sc::kLbaOutOfRange);
    case MediaResult::IoError: return {nv::StatusType::MediaError, static_cast<std::uint8_t>(writing ? 0x80 : 0x81), false};
  }
  return nv::generic_error(nv::sc::kInternalError);
}

bool in_range(const NamespaceStore& ns, std::uint64_t slba, std::uint64_t nlb) {
  return slba < ns.blocks() && nlb <= ns.blocks() - slba;
}

// Blocks a command reads (writing false) or changes, for the overlap checks.
template <typename Fn>
void for_each_range(const nv::Sqe& sqe, const CommandSlot& s, Fn&& fn) {
  const std::uint64_t slba = std::uint64_t{sqe.cdw11.get()} << 32 | sqe.cdw10.get();
  const std::uint64_t nlb = (sqe.cdw12.get() & 0xFFFF) + 1u;
  switch (static_cast<nv::IoOpcode>(sqe.opc)) {
    case nv::IoOpcode::Read: fn(slba, nlb, false); break;
    case nv::IoOpcode::Write:
    case nv::IoOpcode::WriteZeroes: fn(slba, nlb, true); break;
    case nv::IoOpcode::DatasetManagement: {
      if ((sqe.cdw11.get() & (1u << 2)) == 0) break;  // no deallocation: nothing changes
      const std::size_t nr = (sqe.cdw10.get() & 0xFF) + 1u;
      for (std::size_t i = 0; i < nr && (i + 1) * sizeof(nv::DsmRange) <= s.buffer.size(); ++i) {
        nv::DsmRange r;
        std::memcpy(static_cast<void*>(&r), s.buffer.data() + i * sizeof r, sizeof r);
        fn(r.slba.get(), std::uint64_t{r.nlb.get()}, true);
      }
      break;
    }
    default: break;
  }
}

}  // namespace

NamespaceStore* io_conflict(const Controller& c, const CommandSlot& s) {
  if (s.zero_copy || !c.subsystem) return nullptr;  // a zero-copy Write's data is already in place
  NamespaceStore* ns = c.subsystem->find_namespace(s.sqe.nsid.get());
  if (!ns || ns->transfers() == 0) return nullptr;
  bool conflict = false;
  for_each_range(s.sqe, s, [&](std::uint64_t lba, std::uint64_t n, bool writing) {
    conflict = conflict || ns->conflicts(lba, n, writing);
  });
  return conflict ? ns : nullptr;
}

NvmeStatus execute_io(Controller& c, CommandSlot& s) {
  const nv::Sqe& sqe = s.sqe;
  const std::uint32_t nsid = sqe.nsid.get();
  const auto op = static_cast<nv::IoOpcode>(sqe.opc);
  Subsystem* sub = c.subsystem;
  if (!sub) return nv::generic_error(nv::sc::kInvalidOpcode);
  if (op == nv::IoOpcode::Flush && nsid == 0xFFFFFFFF) {
    for (std::uint32_t id : sub->active_nsids())
      if (auto st = media_status(sub->find_namespace(id)->flush(), true); !st.ok()) return st;
    return nv::kOk;
  }
  NamespaceStore* ns = sub->find_namespace(nsid);
  const std::uint64_t slba = std::uint64_t{sqe.cdw11.get()} << 32 | sqe.cdw10.get();
  const std::uint64_t nlb = (sqe.cdw12.get() & 0xFFFF) + 1u;
  switch (op) {
    case nv::IoOpcode::Read: {
      if (!ns) return nv::generic_error(nv::sc::kInvalidNamespace);
      if (!ns->memory().empty() && ns->begin_transfer(&s, slba, nlb, false)) {
        s.zero_copy = ns->weak_from_this().lock();
        if (s.zero_copy) {
          s.data = ns->blocks_at(slba, nlb);
          ++c.health.host_reads;
          c.health.read_bytes += s.length;
          s.to_host_length = s.length;
          return nv::kOk;
        }
        ns->end_transfer(&s);
      }
      const MediaResult r = ns->read(slba, s.buffer.first(s.length));
      if (r == MediaResult::IoError) ++c.health.media_errors;
      if (r != MediaResult::Ok) return media_status(r, false);
      ++c.health.host_reads;
      c.health.read_bytes += s.length;
      s.to_host_length = s.length;
      return nv::kOk;
    }
    case nv::IoOpcode::Write: {
      // A zero-copy Write's RDMA READ put the data in place; its transfer ends here.
      std::shared_ptr<NamespaceStore> landed = std::move(s.zero_copy);
      if (landed) {
        landed->end_transfer(&s);
        s.data = s.buffer;
      }
      // Removed (and maybe replaced) while the data came: the command did not reach this namespace.
      if (!ns || (landed && landed.get() != ns)) return nv::generic_error(nv::sc::kInvalidNamespace);
      MediaResult r = landed ? MediaResult::Ok
                             : ns->write(slba, s.capsule_data.empty() ? std::span<const std::byte>(s.buffer.first(s.length))
                                                                      : s.capsule_data);
      const bool fua = (sqe.cdw12.get() & (1u << 30)) != 0;
      if (r == MediaResult::Ok && (fua || !c.write_cache)) r = ns->flush();
      if (r == MediaResult::IoError) ++c.health.media_errors;
      if (r != MediaResult::Ok) return media_status(r, true);
      ++c.health.host_writes;
      c.health.written_bytes += s.length;
      return nv::kOk;
    }
    case nv::IoOpcode::Flush:
      if (!ns) return nv::generic_error(nv::sc::kInvalidNamespace);
      return media_status(ns->flush(), true);
    case nv::IoOpcode::WriteZeroes: {
      if (!ns) return nv::generic_error(nv::sc::kInvalidNamespace);
      if (!in_range(*ns, slba, nlb)) return nv::generic_error(nv::sc::kLbaOutOfRange);
      return media_status(ns->zero(slba, nlb), true);
    }
    case nv::IoOpcode::DatasetManagement: {
      if (!ns) return nv::generic_error(nv::sc::kInvalidNamespace);
      const std::size_t nr = (sqe.cdw10.get() & 0xFF) + 1u;
      const bool deallocate = (sqe.cdw11.get() & (1u << 2)) != 0;
      // Every range is checked before any is deallocated: all or nothing.
      for (std::size_t i = 0; i < nr; ++i) {
        nv::DsmRange r;
        std::memcpy(static_cast<void*>(&r), s.buffer.data() + i * sizeof r, sizeof r);
        if (r.nlb.get() != 0 && !in_range(*ns, r.slba.get(), r.nlb.get()))
          return nv::generic_error(nv::sc::kLbaOutOfRange);
      }
      if (!deallocate) return nv::kOk;  // attributes only: advisory
      for (std::size_t i = 0; i < nr; ++i) {
        nv::DsmRange r;
        std::memcpy(static_cast<void*>(&r), s.buffer.data() + i * sizeof r, sizeof r);
        if (r.nlb.get() == 0) continue;
        // Identify Namespace DLFEAT = 1: deallocated blocks read as zeros.
        if (auto st = media_status(ns->zero(r.slba.get(), r.nlb.get()), true); !st.ok()) return st;
      }
      return nv::kOk;
    }
    case nv::IoOpcode::Fabrics: break;
  }
  return nv::generic_error(nv::sc::kInvalidOpcode);
}

}  // namespace roce::nvmf
