#include "verbs/config.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "protocol/mtu.hpp"

namespace roce::verbs {
namespace {

std::optional<std::uint64_t> parse_uint(const std::string& s, std::uint64_t max) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19) return std::nullopt;
  const std::uint64_t v = std::stoull(s);
  if (v > max) return std::nullopt;
  return v;
}

Error bad(const std::string& key, const std::string& value, const std::string& why) {
  return make_error(EINVAL, "bad --" + key + " '" + value + "': " + why);
}

Status read_config_file(const std::string& path, std::vector<std::string>& out) {
  std::ifstream in(path);
  if (!in) return make_error(ENOENT, "cannot read config file '" + path + "'");
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    auto words = split_words(line);
    if (!words) return make_error(EINVAL, path + ":" + std::to_string(lineno) + ": " + words.error().message);
    if (words->empty()) continue;
    std::vector<std::string>& w = *words;
    if (w.size() >= 2 && w[1] == "=") w.erase(w.begin() + 1);
    std::string key = w[0];
    if (const auto eq = key.find('='); eq != std::string::npos && w.size() == 1) {
      w.push_back(key.substr(eq + 1));
      key.resize(eq);
    }
    if (key.rfind("--", 0) != 0) key = "--" + key;
    if (key == "--config") return make_error(EINVAL, path + ":" + std::to_string(lineno) + ": a config file cannot name another");
    if (w.size() < 2) return make_error(EINVAL, path + ":" + std::to_string(lineno) + ": '" + w[0] + "' needs a value");
    // "eal" takes the rest of the line as EAL words; other keys take one value.
    if (key == "--eal") {
      std::vector<std::string> rest(w.begin() + 1, w.end());
      out.push_back(key);
      out.push_back(join_words(rest));
      continue;
    }
    if (w.size() > 2) return make_error(EINVAL, path + ":" + std::to_string(lineno) + ": '" + w[0] + "' takes one value");
    out.push_back(key);
    out.push_back(w[1]);
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) cur += text[++i];
      else cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) return make_error(EINVAL, std::string("unterminated ") + quote + " quote");
  if (in_word) out.push_back(cur);
  return out;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    if (!w.empty() && w.find_first_of(" \t\n\r'\"\\") == std::string::npos) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) {
      if (c == '\'') out += "'\"'\"'";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

Result<DeviceConfig> parse_config(const std::vector<std::string>& words) {
  DeviceConfig c;
  std::vector<std::string> todo = words;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    std::string key = todo[i];
    std::string value;
    if (key.rfind("--", 0) != 0) return make_error(EINVAL, "unexpected word '" + key + "' (options start with --)");
    key = key.substr(2);
    if (const auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else {
      if (i + 1 >= todo.size()) return make_error(EINVAL, "--" + key + " needs a value");
      value = todo[++i];
    }
    if (key == "config") {
      std::vector<std::string> from_file;
      if (Status s = read_config_file(value, from_file); !s) return s.error();
      todo.insert(todo.begin() + static_cast<std::ptrdiff_t>(i) + 1, from_file.begin(), from_file.end());
    } else if (key == "ip") {
      in_addr a4{};
      in6_addr a6{};
      if (::inet_pton(AF_INET, value.c_str(), &a4) == 1) {
        proto::Ipv4Addr v4;
        std::memcpy(v4.data(), &a4, 4);
        c.ip = rdma::IpAddress::ipv4(v4);
      } else if (::inet_pton(AF_INET6, value.c_str(), &a6) == 1) {
        proto::Ipv6Addr v6;
        std::memcpy(v6.data(), &a6, 16);
        c.ip = rdma::IpAddress::ipv6(v6);
      } else {
        return bad(key, value, "not an IPv4 or IPv6 address");
      }
    } else if (key == "service") {
      if (value.empty() || value.size() >= 108) return bad(key, value, "a UNIX socket path of 1..107 bytes");
      c.service = value;
    } else if (key == "vdev") {
      if (value.empty()) return bad(key, value, "empty");
      c.vdevs.push_back(value);
    } else if (key == "dev") {
      if (value.empty()) return bad(key, value, "empty");
      c.port = value;
    } else if (key == "name") {
      if (value.empty() || value.size() >= 64 ||
          value.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
        return bad(key, value, "1..63 letters, digits, '_' or '-'");
      c.name = value;
    } else if (key == "mtu") {
      const auto v = parse_uint(value, 4096);
      if (!v || !proto::mtu_from_bytes(static_cast<std::uint32_t>(*v))) return bad(key, value, "256, 512, 1024, 2048 or 4096");
      c.max_mtu = static_cast<std::uint32_t>(*v);
    } else if (key == "eal") {
      auto w = split_words(value);
      if (!w) return bad(key, value, w.error().message);
      c.eal_extra.insert(c.eal_extra.end(), w->begin(), w->end());
    } else if (key == "cpu") {
      const auto v = parse_uint(value, 1023);
      if (!v) return bad(key, value, "a CPU number");
      c.cpu = static_cast<unsigned>(*v);
    } else if (key == "memory") {
      const auto v = parse_uint(value, 1u << 20);
      if (!v || *v < 64) return bad(key, value, "megabytes, at least 64");
      c.memory_mb = static_cast<std::uint32_t>(*v);
    } else if (key == "mbufs") {
      const auto v = parse_uint(value, 1u << 22);
      if (!v || *v < 1024) return bad(key, value, "at least 1024");
      c.mbufs = static_cast<std::uint32_t>(*v);
    } else if (key == "poll") {
      if (value == "busy") c.poll = PollMode::Busy;
      else if (value == "adaptive") c.poll = PollMode::Adaptive;
      else return bad(key, value, "busy or adaptive");
    } else if (key == "idle-nap-us") {
      const auto v = parse_uint(value, 100000);
      if (!v || *v == 0) return bad(key, value, "1..100000 microseconds");
      c.idle_nap_us = static_cast<std::uint32_t>(*v);
    } else if (key == "linger-us") {
      const auto v = parse_uint(value, 1000);
      if (!v) return bad(key, value, "0..1000 microseconds");
      c.linger_us = static_cast<std::uint32_t>(*v);
    } else if (key == "max-qps") {
      const auto v = parse_uint(value, 65536);
      if (!v || *v == 0) return bad(key, value, "1..65536");
      c.max_qps = static_cast<std::uint32_t>(*v);
    } else if (key == "max-rd-atomic") {
      const auto v = parse_uint(value, 255);
      if (!v || *v == 0) return bad(key, value, "1..255");
      c.max_rd_atomic = static_cast<std::uint8_t>(*v);
    } else if (key == "max-mrs") {
      const auto v = parse_uint(value, 1u << 20);
      if (!v || *v == 0) return bad(key, value, "1..1048576");
      c.max_mrs = static_cast<std::uint32_t>(*v);
    } else {
      return make_error(EINVAL, "unknown option --" + key + " (" + config_usage() + ")");
    }
  }
  if (!c.service.empty()) {
    // The service owns the port, its address and its EAL: nothing of it is chosen by a program.
    if (c.ip || !c.vdevs.empty() || !c.port.empty() || !c.eal_extra.empty() || c.cpu)
      return make_error(EINVAL, "--service excludes the port options (--ip, --vdev, --dev, --eal, --cpu): the service owns the port");
    return c;
  }
  if (!c.ip) return make_error(EINVAL, "no --ip: the device needs an IPv4 or IPv6 address (its GID)");
  if (c.port.empty() && c.vdevs.empty()) return make_error(EINVAL, "no port: give --vdev (and --dev) or --dev");
  return c;
}

Result<std::vector<std::string>> config_words_from_environment() {
  std::vector<std::string> words;
  if (const char* f = std::getenv("ROCE_VERBS_CONFIG"); f && *f) {
    words.push_back("--config");
    words.push_back(f);
  }
  if (const char* a = std::getenv("ROCE_VERBS_ARGS"); a && *a) {
    auto w = split_words(a);
    if (!w) return make_error(EINVAL, std::string("ROCE_VERBS_ARGS: ") + w.error().message);
    words.insert(words.end(), w->begin(), w->end());
  }
  if (const char* s = std::getenv("ROCE_VERBS_SERVICE"); s && *s) {
    words.push_back("--service");
    words.push_back(s);
  }
  return words;
}

std::string config_usage() {
  return "options: --service SOCKET | --ip ADDR --vdev SPEC --dev NAME --mtu BYTES --name NAME --eal 'ARGS' --cpu N --memory MB "
         "--mbufs N --poll busy|adaptive --idle-nap-us N --linger-us N --max-qps N --max-mrs N --max-rd-atomic N --config FILE";
}

std::string port_name(const DeviceConfig& c) {
  if (!c.port.empty()) return c.port;
  const std::string& v = c.vdevs.front();
  return v.substr(0, v.find(','));
}

std::vector<std::string> eal_arguments(const DeviceConfig& c, long pid, unsigned online_cpus) {
  std::vector<std::string> a{"roce-verbs", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                             "-m", std::to_string(c.memory_mb), "--log-level=error",
                             "--file-prefix=roce_verbs_" + std::to_string(pid)};
  // One lcore (the dataplane thread). Unpinned by default: two programs on one machine would
  // otherwise both sit on CPU 0.
  if (c.cpu) a.push_back("--lcores=0@" + std::to_string(*c.cpu));
  else a.push_back("--lcores=0@(0-" + std::to_string(online_cpus ? online_cpus - 1 : 0) + ")");
  for (const auto& v : c.vdevs) a.push_back("--vdev=" + v);
  a.insert(a.end(), c.eal_extra.begin(), c.eal_extra.end());
  return a;
}

}  // namespace roce::verbs
