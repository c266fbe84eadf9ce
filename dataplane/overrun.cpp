#include "dataplane/overrun.hpp"

namespace roce::dp {

std::optional<proto::EcnLocation> markable(const rte_mbuf* m) {
  if (m->nb_segs != 1) return std::nullopt;
  const proto::ByteSpan frame{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
  const auto at = proto::locate_ecn(frame);
  if (!at) return std::nullopt;
  const proto::Ecn e = proto::read_ecn(frame, *at);
  if (e != proto::Ecn::Ect0 && e != proto::Ecn::Ect1) return std::nullopt;
  return at;
}

void OverrunMarking::check(Nanos now) {
  if (const std::optional<std::uint64_t> dropped = read_()) marker_.on_port_drops(now, *dropped);
  else marker_.skip(now);  // unreadable this time: the last good reading stays the baseline
}

void OverrunMarking::mark(rte_mbuf* const* rx, unsigned n) {
  std::uint32_t done = 0;
  for (unsigned i = 0; i < n && done < marker_.owed(); ++i) {
    if (const auto at = markable(rx[i])) {
      set_ce(rx[i], *at);
      ++done;
    }
  }
  marker_.marked(done);
}

}  // namespace roce::dp
