#include "dataplane/overrun.hpp"

#include "protocol/ecn_mark.hpp"

namespace roce::dp {

void OverrunMarking::check(Nanos now) {
  if (const std::optional<std::uint64_t> dropped = read_()) marker_.on_port_drops(now, *dropped);
  else marker_.skip(now);  // unreadable this time: the last good reading stays the baseline
}

void OverrunMarking::mark(rte_mbuf* const* rx, unsigned n) {
  std::uint32_t done = 0;
  for (unsigned i = 0; i < n && done < marker_.owed(); ++i) {
    rte_mbuf* m = rx[i];
    if (m->nb_segs != 1) continue;
    const proto::MutableByteSpan frame{rte_pktmbuf_mtod(m, std::byte*), m->data_len};
    const auto at = proto::locate_ecn(frame);
    if (!at) continue;
    const proto::Ecn e = proto::read_ecn(frame, *at);
    if (e != proto::Ecn::Ect0 && e != proto::Ecn::Ect1) continue;  // not ECN-capable, or already CE
    proto::set_ce(frame, *at);
    ++done;
  }
  marker_.marked(done);
}

}  // namespace roce::dp
