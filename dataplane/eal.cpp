#include "dataplane/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>

namespace roce::dp {

std::string with_default_af_packet_ring(const std::string& vdev) {
  if (vdev.rfind("net_af_packet", 0) != 0) return vdev;
  // Devargs are comma-separated key=value pairs after the device name.
  for (std::size_t at = vdev.find(','); at != std::string::npos; at = vdev.find(',', at + 1)) {
    const std::string_view arg = std::string_view(vdev).substr(at + 1);
    for (const std::string_view key : {"blocksz=", "framesz=", "framecnt="})
      if (arg.substr(0, key.size()) == key) return vdev;
  }
  constexpr unsigned kFrameBytes = 4608, kFramesPerBlock = 8;
  return vdev + ",blocksz=" + std::to_string(kFrameBytes * kFramesPerBlock) + ",framesz=" + std::to_string(kFrameBytes) +
         ",framecnt=" + std::to_string(kAfPacketRingFrames);
}

namespace {
std::atomic<bool> g_initialised{false};

// Where DPDK 22.11 puts runtime folders (eal_get_runtime_dir: root, XDG, /tmp).
std::vector<std::filesystem::path> runtime_bases() {
  std::vector<std::filesystem::path> b{"/var/run/dpdk", "/tmp/dpdk"};
  if (const char* x = std::getenv("XDG_RUNTIME_DIR")) b.push_back(std::filesystem::path(x) / "dpdk");
  return b;
}

// While DPDK parses its arguments, what it prints (its whole usage text for one bad option,
// each log line) goes to a memory file instead of the terminal, so the caller can say what
// went wrong in one line.
class OutputCapture {
 public:
  OutputCapture() {
    std::fflush(stdout);
    std::fflush(stderr);
    fd_ = ::memfd_create("rte_eal_init", MFD_CLOEXEC);
    if (fd_ < 0) return;
    saved_out_ = ::dup(STDOUT_FILENO);
    saved_err_ = ::dup(STDERR_FILENO);
    ::dup2(fd_, STDOUT_FILENO);
    ::dup2(fd_, STDERR_FILENO);
  }
  ~OutputCapture() {
    if (fd_ < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out_, STDOUT_FILENO);
    ::dup2(saved_err_, STDERR_FILENO);
    ::close(saved_out_);
    ::close(saved_err_);
    ::close(fd_);
  }
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  std::string text() const {
    if (fd_ < 0) return {};
    std::fflush(stdout);
    std::fflush(stderr);
    std::string out;
    char buf[4096];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    return out;
  }

 private:
  int fd_ = -1;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string l = text.substr(start, nl - start);
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty()) out.push_back(l);
    start = nl + 1;
  }
  return out;
}

// The one line that says why rte_eal_init refused: getopt's complaint about an option, else
// the first EAL error that is not its generic "invalid arguments" summary.
std::string eal_failure_reason(const std::string& said, const std::string& fallback) {
  const auto ls = lines_of(said);
  for (const std::string& l : ls)
    for (const char* what : {"unrecognized option", "invalid option", "requires an argument", "doesn't allow an argument"})
      if (const auto at = l.find(what); at != std::string::npos) {
        // "prog: unrecognized option '--x'": without the program name, given by the caller.
        const auto colon = l.find(": ");
        return colon != std::string::npos && colon < at ? l.substr(colon + 2) : l;
      }
  for (const std::string& l : ls) {
    if (l.rfind("EAL: ", 0) != 0) continue;
    if (l.find("Detected") != std::string::npos || l.find("Invalid 'command line' arguments") != std::string::npos ||
        l.find("Error - exiting") != std::string::npos)
      continue;
    return l.substr(5);
  }
  return fallback;
}

// "" when every --vdev came up; else what its driver said about it.
std::string vdev_probe_failure(const std::string& said) {
  const auto ls = lines_of(said);
  const bool failed = std::any_of(ls.begin(), ls.end(), [](const std::string& l) { return l.find("probe failed") != std::string::npos; });
  if (!failed) return {};
  std::string why;
  for (const std::string& l : ls) {
    if (l.rfind("EAL: ", 0) == 0 || l.find("probe failed") != std::string::npos) continue;
    why += (why.empty() ? "" : "; ") + l;
  }
  return "a --vdev device could not be created" + (why.empty() ? std::string() : ": " + why);
}

std::set<std::filesystem::path> existing_runtime_dirs() {
  std::set<std::filesystem::path> out;
  for (const auto& base : runtime_bases()) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec))
      out.insert(it->path());
  }
  return out;
}
}  // namespace

SplitArgs split_args(int argc, char** argv, const std::vector<std::string>& defaults) {
  SplitArgs s;
  const std::string prog = argc > 0 ? argv[0] : "rocev2-dp";
  s.eal.push_back(prog);
  s.app.push_back(prog);
  int dash = -1;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      dash = i;
      break;
    }
  if (dash < 0) {
    s.eal.insert(s.eal.end(), defaults.begin(), defaults.end());
    for (int i = 1; i < argc; ++i) s.app.emplace_back(argv[i]);
    return s;
  }
  for (int i = 1; i < dash; ++i) s.eal.emplace_back(argv[i]);
  for (int i = dash + 1; i < argc; ++i) s.app.emplace_back(argv[i]);
  return s;
}

Status Eal::init(const std::vector<std::string>& eal_args) {
  if (g_initialised.exchange(true)) return make_error(EALREADY, "the DPDK EAL is already initialised in this process");
  std::vector<std::string> copy = eal_args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto before = existing_runtime_dirs();
  std::string said;
  int rc = 0;
  {
    const OutputCapture capture;
    rc = rte_eal_init(static_cast<int>(copy.size()), argv.data());
    said = capture.text();
  }
  std::string line;
  for (std::size_t i = 1; i < eal_args.size(); ++i) line += (i > 1 ? " " : "") + eal_args[i];
  const std::filesystem::path dir = rte_eal_get_runtime_dir();
  // A --vdev whose driver could not start it (a pcap file that cannot be written, a TAP device
  // that cannot be made) leaves the EAL up without the port: as much a failure as a bad option.
  const std::string probe = vdev_probe_failure(said);
  if (rc >= 0 && probe.empty()) {
    // Up: what DPDK said at the log level asked for goes where it would have gone.
    if (!said.empty()) (void)!::write(STDERR_FILENO, said.data(), said.size());
    return {};
  }
  const int err = rc < 0 ? rte_errno : ENODEV;
  if (rc >= 0) {
    rte_eal_cleanup();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } else if (!dir.empty() && !before.count(dir)) {
    // A failed init (a bad --vdev, say) leaves the runtime folder it made; remove it unless it
    // was there before, where it may belong to a running process with the same prefix.
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  g_initialised = false;
  const std::string why = rc >= 0 ? probe : eal_failure_reason(said, err ? rte_strerror(err) : "invalid arguments");
  return make_error(err ? err : EINVAL, "DPDK EAL initialisation failed: " + why + " (EAL arguments: " + line + ")");
}

void Eal::cleanup() {
  if (!g_initialised.exchange(false)) return;
  // DPDK 22.11 leaves its runtime folder (config, fbarrays, sockets: megabytes of tmpfs under
  // /var/run/dpdk) behind; a primary process that is done removes it.
  const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
  const std::string dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  if (primary && !dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

bool Eal::initialised() { return g_initialised; }

}  // namespace roce::dp
