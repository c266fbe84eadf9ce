#include "apps/inspect/inspect.hpp"

#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include "capture/capture_reader.hpp"
#include "capture/frame_decoder.hpp"
#include "apps/inspect/analysis.hpp"
#include "apps/inspect/frame_view.hpp"
#include "apps/inspect/json_output.hpp"
#include "apps/inspect/mad_hook.hpp"
#include "apps/inspect/nvme_hook.hpp"
#include "apps/inspect/psn_plot.hpp"

namespace roce::inspect {
namespace {

// Records are copied out of libpcap's buffer into a batch, decoded in parallel (the ICRC is
// most of the work), then analysed and printed in order on this thread.
constexpr std::size_t kBatch = 2048;
constexpr std::size_t kParallelGrain = 64;

struct Slot {
  capture::CaptureRecord rec;
  std::vector<std::byte> bytes;
  FrameView view;
  bool shown = false;
  std::string text;  // its line of output
};

// Runs f(i) for i in [0, n): on this thread, or spread over TBB's workers.
template <typename F>
void for_each_slot(std::size_t n, bool parallel, F&& f) {
  if (!parallel || n < kParallelGrain) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, kParallelGrain), [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) f(i);
  });
}

std::string format_frame(const FrameView& v, const InspectOptions& opts, const FieldContext& ctx) {
  switch (opts.output) {
    case Output::Table: return table_row(v, opts.table) + '\n';
    case Output::Fields: return fields_row(v, ctx, opts.fields) + '\n';
    case Output::Json: return frame_json(v, ctx) + '\n';
    case Output::None: break;
  }
  return {};
}

void decode_slot(Slot& s, capture::LinkType link, const proto::ParseOptions& parse, std::uint32_t file) {
  capture::DecodedFrame d;
  s.rec.data = proto::ByteSpan(s.bytes.data(), s.bytes.size());
  capture::decode_frame_all(link, s.rec.data, parse, d);
  s.view = make_frame_view(s.rec, d);
  s.view.file = file;
  if (s.view.flag(FrameFlag::Gsi))
    if (const MadDescriber describe = mad_describer()) s.view.mad = describe(d.packet.payload);
  if (s.view.has_bth && s.view.error == proto::ParseError::None && !s.view.dc) {
    const std::uint8_t op = s.view.bth.opcode;
    // RC SEND FIRST (0x00), ONLY (0x04), ONLY WITH INVALIDATE (0x17): where a capsule starts.
    if (op == 0x00 || op == 0x04 || op == 0x17)
      if (const NvmeDescriber describe = nvme_describer()) s.view.nvme = describe(d.packet.payload, op != 0x00);
  }
}

std::int64_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : -1;
}

class Progress {
 public:
  Progress(bool on, std::ostream& err, std::int64_t total) : on_(on), err_(err), total_(total) {}
  ~Progress() { clear(); }
  void update(std::uint64_t frames, std::int64_t bytes) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    char buf[160];
    if (total_ > 0 && bytes >= 0)
      std::snprintf(buf, sizeof buf, "\rroce-inspect: %llu frames, %.0f of %.0f MB (%.0f %%), %.0f MB/s   ",
                    static_cast<unsigned long long>(frames), bytes / 1e6, total_ / 1e6, 100.0 * bytes / total_,
                    secs > 0 ? bytes / 1e6 / secs : 0.0);
    else
      std::snprintf(buf, sizeof buf, "\rroce-inspect: %llu frames   ", static_cast<unsigned long long>(frames));
    err_ << buf << std::flush;
    shown_ = true;
  }
  void clear() {
    if (!shown_) return;
    err_ << "\r" << std::string(78, ' ') << "\r" << std::flush;
    shown_ = false;
  }

 private:
  bool on_;
  std::ostream& err_;
  std::int64_t total_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

struct FileResult {
  bool complete = true;
  bool stop = false;  // -c reached
};

}  // namespace

int run_inspect(const InspectOptions& opts, std::ostream& out, std::ostream& err) {
  proto::ParseOptions parse = opts.parse;
  // Records cut by the snap length still show their headers; their ICRC is not checkable.
  parse.allow_snap_truncation = true;
  std::unique_ptr<tbb::global_control> limit;
  if (opts.threads > 0)
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(opts.threads));

  std::int64_t total_bytes = 0;
  for (const auto& p : opts.paths) total_bytes += std::max<std::int64_t>(file_size(p), 0);
  Progress progress(opts.progress, err, total_bytes);
  std::int64_t done_bytes = 0;
  std::uint64_t frames_read = 0, shown = 0;

  const bool several = opts.paths.size() > 1;
  const FieldContext ctx{&opts.paths};
  bool header_written = false;  // before the first file that opens: a failed run prints nothing

  int exit_code = kExitOk;
  std::vector<Slot> batch(kBatch);
  std::string text;
  for (std::uint32_t file = 0; file < opts.paths.size(); ++file) {
    const std::string& path = opts.paths[file];
    capture::CaptureReader reader;
    if (!reader.open(path)) {
      progress.clear();
      err << "roce-inspect: " << path << ": " << reader.error() << '\n';
      exit_code = kExitUsage;
      continue;
    }
    if (!header_written) {
      header_written = true;
      if (opts.output == Output::Table) out << table_header(opts.table) << '\n';
      if (opts.output == Output::Fields && opts.fields.header) out << fields_header(opts.fields, opts.field_names) << '\n';
    }
    if (several && opts.output == Output::Table) out << "==> " << path << " <==\n";
    AnalysisOptions ao;
    ao.keep_points = !opts.plot_path.empty();
    Analysis analysis(ao);
    Summary summary;
    FileResult result;
    std::int64_t first_ns = 0;
    bool have_first = false;
    capture::ReadStatus status = capture::ReadStatus::Record;
    while (status == capture::ReadStatus::Record && !result.stop) {
      std::size_t n = 0;
      for (; n < kBatch; ++n) {
        status = reader.next(batch[n].rec);
        if (status != capture::ReadStatus::Record) break;
        const proto::ByteSpan d = batch[n].rec.data;
        batch[n].bytes.assign(d.begin(), d.end());
      }
      // Decoding (the ICRC) and formatting run in parallel; the analysis, which follows each
      // flow's sequence, and the display filter, which may test what it found, run in order.
      const bool parallel = opts.threads != 1;
      for_each_slot(n, parallel, [&](std::size_t i) { decode_slot(batch[i], reader.link_type(), parse, file); });
      std::size_t used = n;
      for (std::size_t i = 0; i < n; ++i) {
        Slot& slot = batch[i];
        FrameView& v = slot.view;
        if (!have_first) {
          have_first = true;
          first_ns = v.ts_ns;
        }
        v.rel_ns = v.ts_ns - first_ns;
        slot.shown = analysis.observe(v, [&](const FrameView& f) { return !opts.filter || opts.filter->matches(f, ctx); });
        if (!slot.shown) continue;
        summary.add(v);
        if (opts.count && ++shown >= *opts.count) {
          result.stop = true;
          used = i + 1;
          break;
        }
      }
      if (opts.output != Output::None) {
        for_each_slot(used, parallel, [&](std::size_t i) {
          if (batch[i].shown) batch[i].text = format_frame(batch[i].view, opts, ctx);
        });
        text.clear();
        for (std::size_t i = 0; i < used; ++i)
          if (batch[i].shown) text += batch[i].text;
      }
      if (opts.output != Output::None) out << text;
      frames_read += n;
      progress.update(frames_read, done_bytes + reader.file_position());
    }
    done_bytes += std::max<std::int64_t>(file_size(path), 0);
    result.complete = status != capture::ReadStatus::Error;
    progress.clear();
    if (opts.summary) {
      if (several && !opts.json) out << "==> " << path << " <==\n";
      out << (opts.json ? summary.json(result.complete, analysis, opts.summary_options) + "\n"
                        : summary.human(result.complete, analysis, opts.summary_options));
    }
    if (!opts.plot_path.empty()) {
      PlotOptions po;
      po.title = "roce-inspect: request PSN over time, " + path;
      const std::string svg = psn_plot_svg(analysis, po);
      if (svg.empty()) {
        err << "roce-inspect: " << path << ": no RC or DC request to draw; " << opts.plot_path << " not written\n";
      } else {
        std::ofstream f(opts.plot_path);
        f << svg;
        if (!f) {
          err << "roce-inspect: " << opts.plot_path << ": cannot write the picture\n";
          exit_code = kExitUsage;
        }
      }
    }
    out.flush();
    if (!result.complete) {
      err << "roce-inspect: " << path << ": " << reader.error() << " (after " << reader.records_read() << " complete frames)\n";
      exit_code = std::max(exit_code, kExitCut);
    }
    if (result.stop) break;
  }
  return exit_code;
}

}  // namespace roce::inspect
