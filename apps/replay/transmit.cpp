#include "apps/replay/transmit.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "dataplane/eal.hpp"
#include "dataplane/port.hpp"
#include "dataplane/tsc_clock.hpp"
#include "protocol/opcode.hpp"
#include "protocol/psn.hpp"

namespace roce::replay {
namespace {

constexpr std::uint32_t kPoolMbufs = 4095;
constexpr std::uint16_t kFrameRoom = 9216;  // jumbo frames fit
constexpr std::uint16_t kBurst = 32;
constexpr Nanos kGiveUp = kSecond;          // the port takes nothing for this long: count the rest as failed
constexpr Nanos kSleepAbove = 2 * kMilli;   // longer waits sleep (less the last bit), shorter ones spin

std::vector<std::string> eal_args_for(const TransmitOptions& o) {
  if (o.eal_args.size() > 1) return o.eal_args;
  std::vector<std::string> a{o.eal_args.empty() ? "roce-replay" : o.eal_args.front()};
  for (const char* s : {"--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--log-level=error", "--no-telemetry"}) a.emplace_back(s);
  a.push_back("--file-prefix=roce_replay_tx_" + std::to_string(getpid()));
  return a;
}

// Sends in bursts; a port that takes only part of a burst gets the rest again.
class BurstSender {
 public:
  BurstSender(std::uint16_t port, TransmitReport& r) : port_(port), r_(r) {}
  ~BurstSender() { drop(); }

  void add(rte_mbuf* m) {
    burst_[n_++] = m;
    if (n_ == kBurst) flush();
  }

  void flush() {
    std::uint16_t done = 0;
    Nanos stalled_since = -1;
    while (done < n_) {
      const std::uint16_t took = rte_eth_tx_burst(port_, 0, burst_.data() + done, static_cast<std::uint16_t>(n_ - done));
      for (std::uint16_t i = done; i < done + took; ++i) {
        ++r_.sent;
        r_.bytes += bytes_[i];
      }
      done = static_cast<std::uint16_t>(done + took);
      if (done == n_) break;
      ++r_.retried;
      const Nanos now = clock_.now();
      if (took) stalled_since = -1;
      else if (stalled_since < 0) stalled_since = now;
      else if (now - stalled_since > kGiveUp) break;
    }
    for (std::uint16_t i = done; i < n_; ++i) {
      rte_pktmbuf_free(burst_[i]);
      ++r_.failed;
    }
    n_ = 0;
  }

  void note_bytes(std::uint32_t b) { bytes_[n_] = b; }

 private:
  void drop() {
    for (std::uint16_t i = 0; i < n_; ++i) rte_pktmbuf_free(burst_[i]);
    n_ = 0;
  }
  std::uint16_t port_;
  TransmitReport& r_;
  std::array<rte_mbuf*, kBurst> burst_{};
  std::array<std::uint32_t, kBurst> bytes_{};
  std::uint16_t n_ = 0;
  dp::TscClock clock_;
};

void wait_until(const dp::TscClock& clock, Nanos when, const std::atomic<bool>& stop) {
  for (Nanos now = clock.now(); now < when && !stop.load(std::memory_order_relaxed); now = clock.now()) {
    if (when - now > kSleepAbove) {
      const Nanos nap = std::min<Nanos>(when - now - kSleepAbove / 2, 100 * kMilli);
      timespec ts{static_cast<time_t>(nap / kSecond), static_cast<long>(nap % kSecond)};
      nanosleep(&ts, nullptr);
    }
  }
}

// The EtherType a cooked or raw-IP record carries, to put an Ethernet header in front of it.
std::optional<std::uint16_t> ether_type_of(capture::LinkType link, proto::ByteSpan rec, std::size_t& skip) {
  switch (link) {
    case capture::LinkType::Ethernet: skip = 0; return std::nullopt;
    case capture::LinkType::LinuxSll:
      if (rec.size() < sizeof(capture::SllHeader)) return std::nullopt;
      skip = sizeof(capture::SllHeader);
      return proto::load_header<capture::SllHeader>(rec, 0).protocol.get();
    case capture::LinkType::LinuxSll2:
      if (rec.size() < sizeof(capture::Sll2Header)) return std::nullopt;
      skip = sizeof(capture::Sll2Header);
      return proto::load_header<capture::Sll2Header>(rec, 0).protocol.get();
    case capture::LinkType::RawIp:
      if (rec.empty()) return std::nullopt;
      skip = 0;
      return (std::to_integer<std::uint8_t>(rec[0]) >> 4) == 6 ? proto::kEtherTypeIpv6 : proto::kEtherTypeIpv4;
  }
  return std::nullopt;
}

class Transmitter {
 public:
  Transmitter(const TransmitOptions& o, std::uint16_t port, rte_mempool* pool, TransmitReport& r, const std::atomic<bool>& stop)
      : o_(o), pool_(pool), r_(r), stop_(stop), sender_(port, r) {}

  Status run() {
    for (std::uint64_t loop = 0; o_.loops == 0 || loop < o_.loops; ++loop) {
      capture::CaptureReader reader;
      if (!reader.open(o_.input)) return make_error(EIO, o_.input + ": " + reader.error());
      r_.link = reader.link_type();
      capture::CaptureRecord rec;
      capture::ReadStatus st;
      std::int64_t loop_first = -1, loop_last = 0;
      while ((st = reader.next(rec)) == capture::ReadStatus::Record) {
        if (stopped()) break;
        ++r_.frames_read;
        const std::int64_t ts = rec.ts_sec * kSecond + rec.ts_nsec;
        if (loop_first < 0) loop_first = ts;
        loop_last = ts;
        send_record(rec, reader.link_type(), ts - loop_first);
      }
      if (st == capture::ReadStatus::Error) {
        sender_.flush();
        return make_error(EIO, o_.input + ": " + reader.error() + " (after " + std::to_string(reader.records_read()) + " frames)");
      }
      if (stopped()) break;
      ++r_.loops_done;
      if (loop_first >= 0) capture_base_ += static_cast<Nanos>(static_cast<double>(loop_last - loop_first) / o_.multiplier);
    }
    sender_.flush();
    if (started_) r_.seconds = static_cast<double>(clock_.now() - start_) / 1e9;
    r_.interrupted = stop_.load();
    return {};
  }

 private:
  bool stopped() const { return stop_.load(std::memory_order_relaxed) || (o_.limit && frames_queued_ >= o_.limit); }

  Nanos departure(std::int64_t since_loop_start) const {
    switch (o_.pace) {
      case Pace::Capture: return capture_base_ + static_cast<Nanos>(static_cast<double>(since_loop_start) / o_.multiplier);
      case Pace::Pps: return static_cast<Nanos>(static_cast<double>(frames_queued_) * 1e9 / o_.pps);
      case Pace::Mbps: return static_cast<Nanos>(static_cast<double>(bytes_queued_) * 8e3 / o_.mbps);
      case Pace::Topspeed: break;
    }
    return 0;
  }

  void send_record(const capture::CaptureRecord& rec, capture::LinkType link, std::int64_t since_loop_start) {
    if (rec.snap_truncated()) {
      ++r_.skipped_cut;
      return;
    }
    std::size_t skip = 0;
    const auto type = ether_type_of(link, rec.data, skip);
    if (link != capture::LinkType::Ethernet && (!type || !o_.rewrite.src_mac || !o_.rewrite.dst_mac)) {
      ++r_.skipped_link;
      return;
    }
    const std::size_t len = (link == capture::LinkType::Ethernet ? 0 : sizeof(proto::EthernetHeader)) + rec.data.size() - skip;
    if (len > kFrameRoom) {
      ++r_.skipped_too_big;
      return;
    }
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    while (!m && !stop_.load()) {  // every mbuf is with the PMD: hand it what is queued and wait
      sender_.flush();
      m = rte_pktmbuf_alloc(pool_);
    }
    if (!m) return;
    auto* data = reinterpret_cast<std::byte*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(len)));
    std::size_t at = 0;
    if (link != capture::LinkType::Ethernet) {
      proto::EthernetHeader e{};
      e.dst = *o_.rewrite.dst_mac;
      e.src = *o_.rewrite.src_mac;
      e.ether_type.set(*type);
      std::memcpy(data, &e, sizeof e);
      at = sizeof e;
    }
    std::memcpy(data + at, rec.data.data() + skip, rec.data.size() - skip);
    rewrite_frame(proto::MutableByteSpan(data, len), o_.rewrite, r_.rewrite);

    const Nanos due = departure(since_loop_start);
    if (!started_) {
      started_ = true;
      start_ = clock_.now();
    }
    if (start_ + due > clock_.now()) {
      sender_.flush();  // nothing waits in the burst while we wait
      wait_until(clock_, start_ + due, stop_);
    }
    sender_.note_bytes(static_cast<std::uint32_t>(len));
    sender_.add(m);
    ++frames_queued_;
    bytes_queued_ += len;
  }

  const TransmitOptions& o_;
  rte_mempool* pool_;
  TransmitReport& r_;
  const std::atomic<bool>& stop_;
  BurstSender sender_;
  dp::TscClock clock_;
  bool started_ = false;
  Nanos start_ = 0;
  Nanos capture_base_ = 0;
  std::uint64_t frames_queued_ = 0, bytes_queued_ = 0;  // handed to the sender
};

}  // namespace

Result<std::string> resolve_psn_base(TransmitOptions& o) {
  if (!o.psn_base) return std::string();
  capture::CaptureReader reader;
  if (!reader.open(o.input)) return make_error(EIO, o.input + ": " + reader.error());
  capture::CaptureRecord rec;
  capture::DecodedFrame d;
  while (reader.next(rec) == capture::ReadStatus::Record) {
    capture::decode_frame(reader.link_type(), rec.data, {}, d);
    if (!capture::bth_decoded(d.error) || d.packet.bth.opcode == proto::raw(proto::Opcode::Cnp)) continue;
    const std::uint32_t first = d.packet.psn();
    o.rewrite.psn_offset = (*o.psn_base - first) & proto::kPsnMask;
    char buf[160];
    std::snprintf(buf, sizeof buf, "PSN base: frame %llu's PSN %u becomes %u; every PSN moves by %u (mod 2^24)",
                  static_cast<unsigned long long>(rec.index), first, *o.psn_base, o.rewrite.psn_offset);
    return std::string(buf);
  }
  return make_error(EINVAL, o.input + " holds no RoCEv2 frame with a PSN: --psn-base has nothing to start from (leave it out)");
}

Status check_transmit_options(const TransmitOptions& o) {
  if (o.dev.empty()) return make_error(EINVAL, "--dev PORT names the port to send on");
  if (o.pace == Pace::Capture && !(o.multiplier > 0)) return make_error(EINVAL, "--multiplier must be above 0 (e.g. 2 for twice as fast)");
  if (o.pace == Pace::Pps && !(o.pps > 0)) return make_error(EINVAL, "--pps must be above 0");
  if (o.pace == Pace::Mbps && !(o.mbps > 0)) return make_error(EINVAL, "--mbps must be above 0");
  capture::CaptureReader reader;
  if (!reader.open(o.input)) return make_error(EIO, o.input + ": " + reader.error());
  if (reader.link_type() != capture::LinkType::Ethernet && (!o.rewrite.src_mac || !o.rewrite.dst_mac))
    return make_error(EINVAL, o.input + " is a " + capture::to_string(reader.link_type()) +
                                  " capture with no Ethernet header to send: give --srcmac and --dstmac and one is put in front of each frame");
  return {};
}

Result<TransmitReport> transmit(const TransmitOptions& o, const std::atomic<bool>& stop) {
  if (Status st = check_transmit_options(o); !st) return st.error();
  const bool own_prefix = o.eal_args.size() <= 1;
  if (Status st = dp::Eal::init(eal_args_for(o)); !st) return st.error();
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  TransmitReport r;
  Status outcome;
  rte_mempool* pool = rte_pktmbuf_pool_create("replay_tx", kPoolMbufs, 256, 0, kFrameRoom + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  if (!pool) {
    outcome = make_error(ENOMEM, std::string("cannot make an mbuf pool: ") + rte_strerror(rte_errno) + " (give DPDK more memory, e.g. -m 512)");
  } else {
    dp::PortOptions po;
    po.name = o.dev;
    auto port = dp::open_port(po, pool);
    if (!port) {
      outcome = make_error(ENODEV, port.error().message +
                                       (own_prefix ? "; give the port with EAL arguments, e.g. roce-replay --vdev=net_af_packet0,iface=eth1 -- -i "
                                                     "FILE --dev net_af_packet0"
                                                   : ""));
    } else {
      r.port_name = port->name;
      r.driver = port->driver;
      Transmitter t(o, port->id, pool, r, stop);
      outcome = t.run();
      dp::close_port(port->id);
    }
    rte_mempool_free(pool);
  }
  dp::Eal::cleanup();
  std::error_code ec;
  if (own_prefix) std::filesystem::remove_all(runtime_dir, ec);
  if (!outcome) return outcome.error();
  return r;
}

std::string format_report(const TransmitReport& r, const TransmitOptions& o) {
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "sent %s out of %s (%s): %llu of %llu frames read, %llu loop%s%s\n", o.input.c_str(),
                r.port_name.c_str(), r.driver.c_str(), static_cast<unsigned long long>(r.sent),
                static_cast<unsigned long long>(r.frames_read), static_cast<unsigned long long>(r.loops_done),
                r.loops_done == 1 ? "" : "s", r.interrupted ? " (interrupted)" : "");
  s += buf;
  std::snprintf(buf, sizeof buf, "Actual: %llu packets (%llu bytes) sent in %.6f seconds\n", static_cast<unsigned long long>(r.sent),
                static_cast<unsigned long long>(r.bytes), r.seconds);
  s += buf;
  const double secs = r.seconds > 0 ? r.seconds : 0;
  std::snprintf(buf, sizeof buf, "Rated: %.1f Bps, %.3f Mbps, %.1f pps\n", secs ? r.bytes / secs : 0.0, secs ? r.bytes * 8 / secs / 1e6 : 0.0,
                secs ? r.sent / secs : 0.0);
  s += buf;
  if (!o.rewrite.empty()) s += "Rewrite: " + summary(r.rewrite) + "\n";
  std::snprintf(buf, sizeof buf, "Not sent: %llu cut by the snap length, %llu without an Ethernet header, %llu larger than %u bytes, %llu refused by the port\n",
                static_cast<unsigned long long>(r.skipped_cut), static_cast<unsigned long long>(r.skipped_link),
                static_cast<unsigned long long>(r.skipped_too_big), kFrameRoom, static_cast<unsigned long long>(r.failed));
  s += buf;
  std::snprintf(buf, sizeof buf, "Port: %llu bursts taken in part and sent again\n", static_cast<unsigned long long>(r.retried));
  s += buf;
  return s;
}

}  // namespace roce::replay
