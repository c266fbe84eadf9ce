#include "apps/gen/raw/raw_main.hpp"

#include <rte_errno.h>

#include <chrono>
#include <iostream>

#include "apps/gen/raw/pcap_output.hpp"
#include "apps/gen/raw/port_sender.hpp"
#include "client/runtime.hpp"
#include "dataplane/port.hpp"
#include "dataplane/signals.hpp"

namespace roce::gen {

namespace {

constexpr std::uint32_t kPoolMbufs = 8191;

}  // namespace

int run_pcap(const RawCommand& cmd, std::ostream& out, std::ostream& err, const std::string& prog) {
  auto gen = RawFrameGenerator::create(cmd.spec);
  if (!gen) {
    err << prog << ": " << gen.error().message << '\n';
    return kExitUsage;
  }
  PcapOutput o;
  o.path = cmd.pcap_path;
  o.count = cmd.count;
  o.rate = cmd.rate.value_or(Rate::pps(1e6));
  o.start_ns = cmd.start_ns.value_or(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
  auto stats = write_pcap(*gen, o);
  if (!stats) {
    err << prog << ": " << stats.error().message << '\n';
    // A file that cannot be made is the command line's fault; one that fails half-way is not.
    return stats.error().code == EIO ? kExitFailed : kExitUsage;
  }
  out << cmd.pcap_path << ": " << summary(*stats);
  return kExitOk;
}

int run_port(const RawCommand& cmd, const std::vector<std::string>& eal_args, std::ostream& out, std::ostream& err,
             const std::string& prog) {
  auto gen = RawFrameGenerator::create(cmd.spec);
  if (!gen) {
    err << prog << ": " << gen.error().message << '\n';
    return kExitUsage;
  }
  client::ToolEal eal;
  if (int rc = eal.start(eal_args, {}, [&](const std::string& why, int code) {
        err << prog << ": " << why << '\n';
        return code;
      }))
    return rc;
  int rc = kExitFailed;
  // The pool holds whole frames: a stream never needs chained mbufs.
  const auto room = static_cast<std::uint16_t>(std::max<std::size_t>(gen->max_frame_bytes(), 2048) + RTE_PKTMBUF_HEADROOM);
  rte_mempool* pool = rte_pktmbuf_pool_create("craft_pool", kPoolMbufs, 256, 0, room, SOCKET_ID_ANY);
  if (!pool) {
    err << prog << ": cannot create an mbuf pool: " << rte_strerror(rte_errno) << " (give DPDK more memory with -m)\n";
  } else {
    dp::PortOptions po;
    po.name = cmd.dev;
    auto port = dp::open_port(po, pool);
    if (!port) {
      err << prog << ": " << port.error().message << '\n';
      if (port.error().code == ENODEV) rc = kExitUsage;
    } else {
      PortSenderOptions so;
      so.port = port->id;
      so.pool = pool;
      so.rate = cmd.rate.value_or(Rate{});
      so.count = cmd.count;
      auto sender = RawPortSender::create(std::move(*gen), so);
      if (!sender) {
        err << prog << ": " << sender.error().message << '\n';
      } else {
        const Nanos limit = cmd.duration_s > 0 ? static_cast<Nanos>(cmd.duration_s * 1e9) : kNever;
        const Nanos ran = sender->run(dp::StopSignals::flag(), limit);
        const auto& st = sender->stats();
        out << cmd.dev << ": " << summary(st.crafted);
        out << "  ran " << static_cast<double>(ran) / 1e6 << " ms; port busy " << st.tx_busy << " times; mbuf shortages "
            << st.mbuf_alloc_failures << '\n';
        rc = kExitOk;
      }
      dp::close_port(port->id);
    }
    rte_mempool_free(pool);
  }
  return rc;
}

int raw_main(const std::string& prog, const std::vector<std::string>& eal, const std::vector<std::string>& app) {
  const RawUsage u = parse_raw_args(app);
  if (u.help) {
    // The help says "roce-gen raw"; under the old name it says "roce-craft".
    const std::string own = "roce-gen raw";
    std::string text = u.help_text;
    for (std::size_t at = 0; (at = text.find(own, at)) != std::string::npos; at += prog.size())
      text.replace(at, own.size(), prog);
    std::cout << text;
    return kExitOk;
  }
  if (u.list_opcodes) {
    std::cout << opcode_list();
    return kExitOk;
  }
  if (!u.error.empty()) {
    std::cerr << prog << ": " << u.error << '\n';
    return kExitUsage;
  }
  if (!u.cmd.pcap_path.empty()) return run_pcap(u.cmd, std::cout, std::cerr, prog);
  return run_port(u.cmd, eal, std::cout, std::cerr, prog);
}

}  // namespace roce::gen
