#include "apps/inspect/inspect.hpp"

#include "apps/capture/capture_reader.hpp"
#include "apps/capture/frame_decoder.hpp"
#include "apps/inspect/frame_view.hpp"
#include "apps/inspect/json_output.hpp"
#include "apps/inspect/summary.hpp"
#include "apps/inspect/table_output.hpp"

namespace roce::inspect {

int run_inspect(const InspectOptions& opts, std::ostream& out, std::ostream& err) {
  capture::CaptureReader reader;
  if (!reader.open(opts.path)) {
    err << "roce-inspect: " << opts.path << ": " << reader.error() << '\n';
    return kExitUsage;
  }
  proto::ParseOptions parse = opts.parse;
  // Records cut by the snap length still show their headers; their ICRC is not checkable.
  parse.allow_snap_truncation = true;

  const bool per_frame = !opts.summary;
  if (per_frame && !opts.json) out << table_header() << '\n';
  Summary summary;
  capture::CaptureRecord rec;
  capture::DecodedFrame frame;
  capture::ReadStatus status;
  while ((status = reader.next(rec)) == capture::ReadStatus::Record) {
    capture::decode_frame(reader.link_type(), rec.data, parse, frame);
    const FrameView view = make_frame_view(rec, frame);
    summary.add(view);
    if (per_frame) out << (opts.json ? frame_json(view) : table_row(view)) << '\n';
  }
  const bool complete = status == capture::ReadStatus::End;
  if (opts.summary) out << (opts.json ? summary.json(complete) + "\n" : summary.human(complete));
  out.flush();
  if (!complete) {
    err << "roce-inspect: " << opts.path << ": " << reader.error() << " (after " << reader.records_read()
        << " complete frames)\n";
    return kExitCut;
  }
  return kExitOk;
}

}  // namespace roce::inspect
