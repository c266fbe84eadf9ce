#include "dataplane/report.hpp"

namespace roce::dp {

EngineStats DataplaneSnapshot::engine_total() const {
  EngineStats t;
  for (const WorkerSnapshot& w : workers) t.add(w.engine);
  return t;
}

const QpStats* DataplaneSnapshot::find_qp(std::uint32_t qpn) const {
  for (const WorkerSnapshot& w : workers)
    for (const QpStats& q : w.qps)
      if (q.qpn == qpn) return &q;
  return nullptr;
}

void write_json(JsonWriter& w, const DataplaneSnapshot& d) {
  JsonSink s(w);
  w.begin_object();
  schema::dataplane_info(s, d);
  s.open("port");
  schema::port(s, d);
  s.close();
  if (d.io) {
    s.open("io");
    schema::io(s, *d.io);
    s.close();
  }
  s.open("workers");
  for (const WorkerSnapshot& ws : d.workers) {
    s.open(std::to_string(ws.worker));
    schema::worker(s, ws);
    s.close();
  }
  s.close();
  s.open("engine");
  schema::engine(s, d.engine_total());
  s.close();
  s.open("engines");
  for (const WorkerSnapshot& ws : d.workers) {
    s.open(std::to_string(ws.worker));
    schema::engine(s, ws.engine);
    s.close();
  }
  s.close();
  s.open("qps");
  for (const WorkerSnapshot& ws : d.workers)
    for (const QpStats& q : ws.qps) {
      s.open(std::to_string(q.qpn));
      schema::qp(s, q);
      s.close();
    }
  s.close();
  w.end_object();
}

std::string report_json(const DataplaneSnapshot& d) {
  JsonWriter w;
  write_json(w, d);
  return w.str();
}

}  // namespace roce::dp
