// Admin queue commands other than Fabrics ones: Identify, Get Log Page, Set/Get Features,
// Keep Alive, Abort. Data for the host goes into slot.buffer; slot.to_host_length says how much.
#include <algorithm>
#include <cstring>

#include "lib/nvmf/queue.hpp"

namespace roce::nvmf {

namespace nv = proto::nvme;
using nv::NvmeStatus;

namespace {

template <typename T>
void put(CommandSlot& s, const T& t, std::size_t off = 0) {
  std::memcpy(s.buffer.data() + off, static_cast<const void*>(&t), sizeof t);
}

NvmeStatus invalid_field() { return nv::generic_error(nv::sc::kInvalidField); }
NvmeStatus invalid_ns() { return nv::generic_error(nv::sc::kInvalidNamespace); }

// A stable NGUID per (subsystem, NSID): FNV-1a over the NQN, then the NSID.
std::array<std::uint8_t, 16> nguid_of(const Subsystem& sub, std::uint32_t nsid) {
  std::uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (char ch : sub.nqn()) {
    h1 = (h1 ^ static_cast<std::uint8_t>(ch)) * 0x100000001b3ull;
    h2 = (h2 ^ static_cast<std::uint8_t>(ch)) * 0x100000001b3ull + 7;
  }
  h1 ^= nsid;
  h2 = (h2 ^ nsid) * 0x100000001b3ull;
  std::array<std::uint8_t, 16> g{};
  for (int i = 0; i < 8; ++i) {
    g[i] = static_cast<std::uint8_t>(h1 >> (8 * i));
    g[8 + i] = static_cast<std::uint8_t>(h2 >> (8 * i));
  }
  return g;
}

void identify_controller(const Target& t, const Controller& c, CommandSlot& s) {
  const TargetConfig& cfg = t.config();
  nv::IdentifyController id;
  nv::set_fixed_string(id.sn, c.subsystem ? c.subsystem->serial() : "discovery", ' ');
  nv::set_fixed_string(id.mn, cfg.model, ' ');
  nv::set_fixed_string(id.fr, cfg.firmware, ' ');
  id.rab = 6;
  id.mdts = cfg.mdts;
  id.cntlid.set(c.cntlid);
  id.ver.set(reg::kVersion);
  id.cntrltype = c.discovery() ? 2 : 1;
  id.oaes.set(c.discovery() ? 0 : kAecNamespaceAttribute);
  id.acl = 3;
  id.aerl = cfg.aerl;
  id.lpa = 1u << 2;  // extended data for Get Log Page (NUMDU, LPO)
  id.elpe = kErrorLogEntries - 1;
  id.kas.set(static_cast<std::uint16_t>(cfg.kas_100ms));
  id.ctratt.set(kCtrattTbkas);
  id.sqes = 0x66;
  id.cqes = 0x44;
  id.maxcmd.set(cfg.max_queue_depth);
  id.nn.set(c.discovery() ? 0 : kMaxNamespaces);
  id.oncs.set(nv::kOncsDsm | nv::kOncsWriteZeroes);
  id.vwc = c.discovery() ? 0 : 1;
  id.sgls.set(nv::kSglsSupported | nv::kSglsKeyed | (cfg.inline_data_size ? nv::kSglsInCapsuleOffset : 0));
  nv::set_fixed_string(id.subnqn, c.subsystem ? c.subsystem->nqn() : std::string(nv::kDiscoveryNqn), '\0');
  id.ioccsz.set((nv::kSqeSize + cfg.inline_data_size) / 16);
  id.iorcsz.set(nv::kCqeSize / 16);
  id.icdoff.set(0);
  id.msdbd = 1;
  put(s, id);
}

NvmeStatus identify(const Target& t, const Controller& c, CommandSlot& s) {
  const auto cns = static_cast<nv::Cns>(s.sqe.cdw10.get() & 0xFF);
  const std::uint32_t nsid = s.sqe.nsid.get();
  std::memset(s.buffer.data(), 0, nv::kIdentifySize);
  s.to_host_length = nv::kIdentifySize;
  if (cns == nv::Cns::Controller) {
    identify_controller(t, c, s);
    return nv::kOk;
  }
  if (c.discovery()) return invalid_field();
  const Subsystem& sub = *c.subsystem;
  switch (cns) {
    case nv::Cns::Namespace: {
      if (nsid == 0 || nsid > kMaxNamespaces) return invalid_ns();
      const NamespaceStore* ns = sub.find_namespace(nsid);
      if (!ns) return nv::kOk;  // a valid, inactive NSID: all zeros
      nv::IdentifyNamespace id;
      id.nsze.set(ns->blocks());
      id.ncap.set(ns->blocks());
      id.nuse.set(ns->blocks());
      id.dlfeat = 1;
      id.nlbaf = 0;
      id.flbas = 0;
      id.lbaf[0].lbads = ns->block_shift();
      id.nguid = nguid_of(sub, nsid);
      put(s, id);
      return nv::kOk;
    }
    case nv::Cns::ActiveNsList: {
      if (nsid >= 0xFFFFFFFE) return invalid_ns();
      std::size_t n = 0;
      for (std::uint32_t id : sub.active_nsids()) {
        if (id <= nsid) continue;
        if (n == nv::kIdentifySize / 4) break;
        put(s, nv::Le32::of(id), 4 * n++);
      }
      return nv::kOk;
    }
    case nv::Cns::NsDescriptors: {
      if (!sub.find_namespace(nsid)) return invalid_ns();
      nv::NsIdDescriptorHeader h;
      h.nidt = static_cast<std::uint8_t>(nv::NidType::Nguid);
      h.nidl = 16;
      put(s, h);
      put(s, nguid_of(sub, nsid), sizeof h);
      return nv::kOk;
    }
    case nv::Cns::Controller: break;
  }
  return invalid_field();
}

void put_u128(std::array<nv::Le64, 2>& f, std::uint64_t v) { f[0].set(v); }

void put_le32(std::vector<std::byte>& page, std::size_t off, std::uint32_t v) {
  const nv::Le32 l = nv::Le32::of(v);
  std::memcpy(page.data() + off, l.bytes.data(), 4);
}

NvmeStatus get_log_page(const Target& t, Controller& c, CommandSlot& s) {
  const auto lid = static_cast<nv::LogPage>(s.sqe.cdw10.get() & 0xFF);
  const std::uint64_t offset = s.sqe.cdw12.get() | std::uint64_t{s.sqe.cdw13.get()} << 32;
  if (offset & 3) return invalid_field();
  std::vector<std::byte> page;
  switch (lid) {
    case nv::LogPage::Discovery:
      if (!c.discovery()) return nv::specific_error(nv::sc::kInvalidLogPage);
      page = t.discovery_log(c.hostnqn);
      break;
    case nv::LogPage::Error:
      if (c.discovery()) return nv::specific_error(nv::sc::kInvalidLogPage);
      page.resize(sizeof c.error_log);
      std::memcpy(page.data(), static_cast<const void*>(c.error_log.data()), page.size());
      break;
    case nv::LogPage::ChangedNamespaces: {
      if (c.discovery()) return nv::specific_error(nv::sc::kInvalidLogPage);
      page.assign(4096, std::byte{0});
      if (c.changed_nsids.size() > kChangedNsListMax) {
        put_le32(page, 0, 0xFFFFFFFF);
      } else {
        for (std::size_t i = 0; i < c.changed_nsids.size(); ++i) put_le32(page, 4 * i, c.changed_nsids[i]);
      }
      // Reading it (without RAE, CDW10 bit 15) clears the list and re-arms the notice.
      if (!(s.sqe.cdw10.get() & (1u << 15))) {
        c.changed_nsids.clear();
        c.ns_notice_masked = false;
      }
      break;
    }
    case nv::LogPage::Smart: {
      if (c.discovery()) return nv::specific_error(nv::sc::kInvalidLogPage);
      nv::SmartLog log;
      log.composite_temperature.set(273 + 35);
      log.available_spare = 100;
      log.available_spare_threshold = 10;
      put_u128(log.data_units_read, (c.health.read_bytes / 512 + 999) / 1000);
      put_u128(log.data_units_written, (c.health.written_bytes / 512 + 999) / 1000);
      put_u128(log.host_read_commands, c.health.host_reads);
      put_u128(log.host_write_commands, c.health.host_writes);
      put_u128(log.media_errors, c.health.media_errors);
      put_u128(log.error_log_entries, c.error_count);
      page.resize(sizeof log);
      std::memcpy(page.data(), static_cast<const void*>(&log), sizeof log);
      break;
    }
    default: return nv::specific_error(nv::sc::kInvalidLogPage);
  }
  if (offset > page.size()) return invalid_field();
  std::memset(s.buffer.data(), 0, s.length);
  const std::size_t n = std::min<std::size_t>(s.length, page.size() - offset);
  std::memcpy(s.buffer.data(), page.data() + offset, n);
  s.to_host_length = s.length;
  return nv::kOk;
}

NvmeStatus set_features(const Target& t, Controller& c, CommandSlot& s) {
  const std::uint32_t cdw10 = s.sqe.cdw10.get(), cdw11 = s.sqe.cdw11.get();
  if (cdw10 & 0x80000000u) return nv::specific_error(nv::sc::kFeatureNotSaveable);
  switch (static_cast<nv::FeatureId>(cdw10 & 0xFF)) {
    case nv::FeatureId::NumberOfQueues: {
      if (c.discovery()) return invalid_field();
      const std::uint32_t nsqr = cdw11 & 0xFFFF, ncqr = cdw11 >> 16;
      if (nsqr == 0xFFFF || ncqr == 0xFFFF) return invalid_field();
      for (std::size_t q = 1; q < c.queues.size(); ++q)
        if (c.queues[q]) return nv::generic_error(nv::sc::kCommandSequenceError);
      const std::uint32_t granted = std::min<std::uint32_t>(std::max(nsqr, ncqr) + 1, t.config().max_io_queues);
      c.io_queues = static_cast<std::uint16_t>(granted);
      c.io_queues_set = true;
      s.cqe.dw0.set((granted - 1) | (granted - 1) << 16);
      return nv::kOk;
    }
    case nv::FeatureId::KeepAliveTimer:
      c.kato_ms = cdw11;
      c.ka_deadline = 0;  // a new period, from this command
      return nv::kOk;
    case nv::FeatureId::AsyncEventConfig: c.async_event_config = cdw11; return nv::kOk;
    case nv::FeatureId::Arbitration: c.arbitration = cdw11; return nv::kOk;
    case nv::FeatureId::VolatileWriteCache:
      if (c.discovery()) return invalid_field();
      // Writes go through to the backing (pwrite) either way; a disabled cache makes each
      // write also fdatasync (io_commands.cpp).
      c.write_cache = (cdw11 & 1) != 0;
      return nv::kOk;
  }
  return invalid_field();
}

NvmeStatus get_features(const Target& t, const Controller& c, CommandSlot& s) {
  const std::uint32_t cdw10 = s.sqe.cdw10.get();
  // Select: 0 current, 1 default, 2 saved (nothing is saved: the default), 3 capabilities.
  const std::uint32_t sel = (cdw10 >> 8) & 7;
  if (sel > 3) return invalid_field();
  const auto fid = static_cast<nv::FeatureId>(cdw10 & 0xFF);
  std::uint32_t v = 0;
  switch (fid) {
    case nv::FeatureId::NumberOfQueues: {
      if (c.discovery()) return invalid_field();
      const std::uint32_t n = (sel == 0 && c.io_queues_set ? c.io_queues : t.config().max_io_queues) - 1u;
      v = n | n << 16;
      break;
    }
    case nv::FeatureId::KeepAliveTimer: v = sel == 0 ? c.kato_ms : 0; break;
    case nv::FeatureId::AsyncEventConfig: v = sel == 0 ? c.async_event_config : 0; break;
    case nv::FeatureId::Arbitration: v = sel == 0 ? c.arbitration : 0; break;
    case nv::FeatureId::VolatileWriteCache:
      if (c.discovery()) return invalid_field();
      v = sel == 0 ? (c.write_cache ? 1 : 0) : 1;
      break;
    default: return invalid_field();
  }
  // Capabilities: changeable, not saveable, not namespace specific.
  if (sel == 3) v = 1u << 2;
  s.cqe.dw0.set(v);
  return nv::kOk;
}

}  // namespace

NvmeStatus execute_admin(Target& t, Controller& c, CommandSlot& s, Nanos now) {
  switch (static_cast<nv::AdminOpcode>(s.sqe.opc)) {
    case nv::AdminOpcode::Identify: return identify(t, c, s);
    case nv::AdminOpcode::GetLogPage: return get_log_page(t, c, s);
    case nv::AdminOpcode::SetFeatures: return set_features(t, c, s);
    case nv::AdminOpcode::GetFeatures: return get_features(t, c, s);
    case nv::AdminOpcode::KeepAlive:
      c.last_keep_alive = now;
      c.ka_deadline = now + from_ms(c.kato_ms);  // the timer restarts (nvmet: mod_delayed_work)
      return nv::kOk;
    case nv::AdminOpcode::Abort:
      if (c.discovery()) break;
      s.cqe.dw0.set(1);  // bit 0: the command was not aborted (commands here run to completion)
      return nv::kOk;
    default: break;
  }
  return nv::generic_error(nv::sc::kInvalidOpcode);
}

}  // namespace roce::nvmf
