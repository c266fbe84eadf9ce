// The control socket's commands: one table gives each its fields (type and range, checked
// before it runs: an unknown field, a wrong type or a value out of range is refused with the
// reason) and its function. QPs and regions made here belong to the control client that made
// them and go when it disconnects, or earlier with destroy_qp / destroy_mr; exchange sessions
// can be listed and ended (disconnect).
#include <algorithm>
#include <array>
#include <optional>
#include <thread>

#include "apps/appliance/appliance.hpp"
#include "lib/util/json_writer.hpp"

namespace roce::client {

namespace {

constexpr int kCreatedAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint64_t k24Bits = 0xFFFFFF;
constexpr std::uint64_t kJsonIntegers = 9007199254740992ull;  // 2^53: what a JSON number holds exactly

constexpr std::array<JsonField, 0> kNoFields{};
constexpr std::array kCreateMr{JsonField{"size", JsonType::Uint, true, 1, kJsonIntegers, "bytes"}};
constexpr std::array kDestroyMr{JsonField{"rkey", JsonType::Uint, true, 1, 0xFFFFFFFF, "32 bits"}};
constexpr std::array kCreateQp{JsonField{"type", JsonType::String, false}};
constexpr std::array kConnectQp{
    JsonField{"qpn", JsonType::Uint, true, 0, k24Bits, "24 bits"},
    // QPs 0 and 1 are the subnet management and general services QPs, never an RC/UC peer.
    JsonField{"remote_qpn", JsonType::Uint, true, 2, k24Bits, "24 bits; 0 and 1 are special QPs"},
    JsonField{"remote_psn", JsonType::Uint, true, 0, k24Bits, "24 bits"},
    JsonField{"remote_ip", JsonType::String, true},
};
constexpr std::array kDestroyQp{JsonField{"qpn", JsonType::Uint, true, 0, k24Bits, "24 bits"}};
// "subsystem" left out: --nvmf-subsystem's.
constexpr std::array kNvmfNamespaces{JsonField{"subsystem", JsonType::String, false}};
constexpr std::array kNvmfAddNamespace{
    JsonField{"backing", JsonType::String, true},
    JsonField{"nsid", JsonType::Uint, false, 1, nvmf::kMaxNamespaces, "NSIDs 1..1024; left out: the lowest free one"},
    JsonField{"subsystem", JsonType::String, false},
};
constexpr std::array kNvmfRemoveNamespace{JsonField{"nsid", JsonType::Uint, true, 1, nvmf::kMaxNamespaces, "NSIDs 1..1024"},
                                          JsonField{"subsystem", JsonType::String, false}};
constexpr std::array kNvmfSubsystem{JsonField{"nqn", JsonType::String, true}};
constexpr std::array kNvmfHost{JsonField{"host", JsonType::String, true}, JsonField{"subsystem", JsonType::String, false}};
constexpr std::array kNvmfAnyHost{JsonField{"allow", JsonType::Bool, true}, JsonField{"subsystem", JsonType::String, false}};
constexpr std::array kDisconnect{JsonField{"session", JsonType::Uint, true, 1, kJsonIntegers, "see list_sessions"}};

const char* type_name(ibv_qp_type t) { return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD"; }

std::string access_text(int a) {
  std::string s;
  if (a & IBV_ACCESS_LOCAL_WRITE) s += "local_write ";
  if (a & IBV_ACCESS_REMOTE_WRITE) s += "remote_write ";
  if (a & IBV_ACCESS_REMOTE_READ) s += "remote_read ";
  if (a & IBV_ACCESS_REMOTE_ATOMIC) s += "remote_atomic ";
  if (!s.empty()) s.pop_back();
  return s;
}

std::string ok_object(const std::function<void(JsonWriter&)>& fields) {
  JsonWriter w;
  w.begin_object().field("ok", true);
  fields(w);
  w.end_object();
  return w.str();
}

}  // namespace

std::span<const Appliance::Command> Appliance::commands() {
  static const std::array<Command, 22> table{{
      {"status", kNoFields, &Appliance::cmd_report},
      {"counters", kNoFields, &Appliance::cmd_report},
      {"list_qps", kNoFields, &Appliance::cmd_list_qps},
      {"list_mrs", kNoFields, &Appliance::cmd_list_mrs},
      {"list_sessions", kNoFields, &Appliance::cmd_list_sessions},
      {"create_mr", kCreateMr, &Appliance::cmd_create_mr},
      {"destroy_mr", kDestroyMr, &Appliance::cmd_destroy_mr},
      {"create_qp", kCreateQp, &Appliance::cmd_create_qp},
      {"connect_qp", kConnectQp, &Appliance::cmd_connect_qp},
      {"destroy_qp", kDestroyQp, &Appliance::cmd_destroy_qp},
      {"disconnect", kDisconnect, &Appliance::cmd_disconnect},
      {"nvmf_namespaces", kNvmfNamespaces, &Appliance::cmd_nvmf_namespaces},
      {"nvmf_add_namespace", kNvmfAddNamespace, &Appliance::cmd_nvmf_add_namespace},
      {"nvmf_remove_namespace", kNvmfRemoveNamespace, &Appliance::cmd_nvmf_remove_namespace},
      {"nvmf_subsystems", kNoFields, &Appliance::cmd_nvmf_subsystems},
      {"nvmf_add_subsystem", kNvmfSubsystem, &Appliance::cmd_nvmf_add_subsystem},
      {"nvmf_remove_subsystem", kNvmfSubsystem, &Appliance::cmd_nvmf_remove_subsystem},
      {"nvmf_allow_host", kNvmfHost, &Appliance::cmd_nvmf_allow_host},
      {"nvmf_disallow_host", kNvmfHost, &Appliance::cmd_nvmf_disallow_host},
      {"nvmf_allow_any_host", kNvmfAnyHost, &Appliance::cmd_nvmf_allow_any_host},
      {"stop", kNoFields, &Appliance::cmd_stop},
      {"help", kNoFields, nullptr},
  }};
  return table;
}

std::string Appliance::handle(ControlSocket::ClientId client, const JsonValue& cmd) {
  std::string names;
  for (const Command& c : commands()) names += (names.empty() ? "" : ", ") + std::string(c.name);
  if (!cmd.object()) return control_error("a command is a JSON object such as {\"cmd\":\"status\"}, not " + json_type_phrase(cmd));
  const JsonValue* name = cmd.get("cmd");
  if (!name) return control_error("a command object needs \"cmd\": one of " + names);
  if (!name->string()) return control_error("\"cmd\" must be a string (one of " + names + "), not " + json_type_phrase(*name));
  for (const Command& c : commands()) {
    if (c.name != *name->string()) continue;
    if (Status s = check_fields(cmd, c.name, c.fields, "cmd"); !s) return control_error(s.error().message);
    if (c.run == nullptr) {
      JsonWriter w;
      w.begin_object().field("ok", true).key("commands").begin_object();
      for (const Command& d : commands()) {
        w.key(d.name).begin_array();
        for (const JsonField& f : d.fields) w.value(std::string(f.name) + (f.required ? "" : " (optional)"));
        w.end_array();
      }
      w.end_object().end_object();
      return w.str();
    }
    return (this->*c.run)(client, cmd);
  }
  return control_error("unknown command '" + *name->string() + "': " + names);
}

std::string Appliance::cmd_report(ControlSocket::ClientId, const JsonValue&) { return report_json(); }

std::string Appliance::cmd_stop(ControlSocket::ClientId, const JsonValue&) {
  stop_ = true;
  return ok_object([](JsonWriter& w) { w.field("stopping", true); });
}

std::string Appliance::cmd_list_qps(ControlSocket::ClientId, const JsonValue&) {
  std::vector<std::pair<std::uint32_t, ControlSocket::ClientId>> owners;
  {
    std::lock_guard lock(mutex_);
    for (const CreatedQp& q : created_qps_) owners.emplace_back(q.qp.qpn, q.owner);
  }
  JsonWriter w;
  w.begin_object().field("ok", true).key("qps").begin_array();
  for (unsigned wk = 0; wk < dp_.worker_count(); ++wk) {
    dp_.call(wk, [&](rdma::Engine& e) {
      e.for_each_qp([&](const rdma::QueuePair& q) {
        const rdma::Counters& c = q.counters();
        w.begin_object()
            .field("qpn", q.qpn())
            .field("worker", wk)
            .field("type", type_name(q.type()))
            .field("state", to_string(q.state()))
            .field("dest_qpn", q.config().dest_qpn)
            .field("sent_pkts", c.get(rdma::Counter::SentPkts))
            .field("rcvd_pkts", c.get(rdma::Counter::RcvdPkts))
            .field("retransmitted_pkts", c.get(rdma::Counter::RetransmittedPkts));
        for (const auto& [qpn, owner] : owners)
          if (qpn == q.qpn()) w.field("control_client", owner);
        w.end_object();
      });
      return 0;
    });
  }
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::cmd_list_mrs(ControlSocket::ClientId, const JsonValue&) {
  JsonWriter w;
  w.begin_object().field("ok", true).key("mrs").begin_array();
  auto one = [&w](const char* role, const rdma::MemoryRegion* m) -> JsonWriter& {
    return w.begin_object()
        .field("role", role)
        .field("rkey", m->rkey())
        .field("addr", m->iova)
        .field("length", m->length)
        .field("access", access_text(m->access));
  };
  one(o_.mr_file.empty() ? "exposed" : "exposed-file", exposed_mr_).end_object();
  one("receive", recv_mr_).end_object();
  std::lock_guard lock(mutex_);
  for (const CreatedMr& m : created_mrs_) one("created", m.mr).field("control_client", m.owner).end_object();
  w.end_array();
  w.field("quota_bytes", o_.mr_quota).field("bytes_in_use", mr_bytes_in_use_);
  w.end_object();
  return w.str();
}

std::string Appliance::cmd_list_sessions(ControlSocket::ClientId, const JsonValue&) {
  const auto now = std::chrono::steady_clock::now();
  JsonWriter w;
  w.begin_object().field("ok", true).key("sessions").begin_array();
  std::lock_guard lock(mutex_);
  for (const auto& s : sessions_)
    w.begin_object()
        .field("session", s->id)
        .field("peer", s->peer)
        .field("running_s", std::chrono::duration<double>(now - s->started).count())
        .field("ending", s->stop.load() || s->done.load())
        .end_object();
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::cmd_create_mr(ControlSocket::ClientId client, const JsonValue& cmd) {
  const std::uint64_t size = *cmd.get_uint("size");
  {
    // The quota is reserved first, so two clients cannot both take its last gigabytes.
    std::lock_guard lock(mutex_);
    if (size > o_.mr_quota - mr_bytes_in_use_)
      return control_error("create_mr: " + size_text(size) + " refused: the memory region quota is " + size_text(o_.mr_quota) +
                           " (--mr-quota) and " + size_text(mr_bytes_in_use_) + " of it is in use, " +
                           size_text(o_.mr_quota - mr_bytes_in_use_) + " left");
    mr_bytes_in_use_ += size;
  }
  auto give_back = [&] {
    std::lock_guard lock(mutex_);
    mr_bytes_in_use_ -= size;
  };
  auto mem = MappedBuffer::anonymous(size);
  if (!mem) {
    give_back();
    return control_error("create_mr: " + mem.error().message);
  }
  Result<const rdma::MemoryRegion*> mr = make_error(EINVAL, "not registered");
  {
    std::lock_guard lock(mr_mutex_);
    mr = conn_->register_memory(mem->data(), mem->size(), kCreatedAccess);
  }
  if (!mr) {
    give_back();
    return control_error("create_mr: " + mr.error().message);
  }
  const rdma::MemoryRegion* m = *mr;
  {
    std::lock_guard lock(mutex_);
    created_mrs_.push_back(CreatedMr{std::move(*mem), m, client});
  }
  return ok_object([m](JsonWriter& w) { w.field("rkey", m->rkey()).field("addr", m->iova).field("length", m->length); });
}

void Appliance::release_mr(CreatedMr& m) {
  std::lock_guard lock(mr_mutex_);
  (void)dp_.memory().deregister(m.mr->rkey());
  // A worker that found the key just before it went may still be copying into the region; once
  // every worker has run a command after the deregistration, none is, and the memory can go.
  for (unsigned w = 0; w < dp_.worker_count(); ++w) dp_.call(w, [](rdma::Engine&) { return 0; });
  m.memory = MappedBuffer{};
}

std::string Appliance::cmd_destroy_mr(ControlSocket::ClientId, const JsonValue& cmd) {
  const auto rkey = static_cast<std::uint32_t>(*cmd.get_uint("rkey"));
  std::list<CreatedMr> taken;
  {
    std::lock_guard lock(mutex_);
    for (auto it = created_mrs_.begin(); it != created_mrs_.end(); ++it)
      if (it->mr->rkey() == rkey) {
        taken.splice(taken.end(), created_mrs_, it);
        break;
      }
  }
  if (taken.empty()) {
    if (rkey == exposed_mr_->rkey() || rkey == recv_mr_->rkey())
      return control_error("destroy_mr: rkey " + std::to_string(rkey) + " is the appliance's own region; it stays");
    return control_error("destroy_mr: no region with rkey " + std::to_string(rkey) + " made by create_mr (see list_mrs)");
  }
  const std::uint64_t length = taken.front().memory.size();
  release_mr(taken.front());
  {
    std::lock_guard lock(mutex_);
    mr_bytes_in_use_ -= length;
  }
  return ok_object([rkey](JsonWriter& w) { w.field("rkey", rkey).field("destroyed", true); });
}

std::string Appliance::cmd_create_qp(ControlSocket::ClientId client, const JsonValue& cmd) {
  QpParams p = o_.qp;
  const std::string type = cmd.get_string("type").value_or("rc");
  if (type == "rc" || type == "RC") p.type = IBV_QPT_RC;
  else if (type == "uc" || type == "UC") p.type = IBV_QPT_UC;
  else if (type == "ud" || type == "UD") p.type = IBV_QPT_UD;
  else return control_error("create_qp: \"type\" '" + type + "' is not a QP type: rc, uc or ud");
  auto q = conn_->create(p);
  if (!q) return control_error("create_qp: " + q.error().message);
  // A UD QP has no peer to connect to: it is made ready to send and receive at once.
  if (p.type == IBV_QPT_UD)
    if (Status s = conn_->ready_datagram(*q); !s) {
      conn_->destroy(*q);
      return control_error("create_qp: " + s.error().message);
    }
  {
    std::lock_guard lock(mutex_);
    created_qps_.push_back(CreatedQp{*q, p.type, client, p.type == IBV_QPT_UD});
  }
  const bool ud = p.type == IBV_QPT_UD;
  return ok_object([&](JsonWriter& w) {
    w.field("qpn", q->qpn).field("type", type_name(p.type)).field("state", ud ? "RTS" : "INIT");
    if (ud) w.field("qkey", std::uint64_t{0x11111111});
    else w.field("psn", q->psn);
    w.field("gid", to_string(dp_.local().ip));
  });
}

std::string Appliance::cmd_connect_qp(ControlSocket::ClientId, const JsonValue& cmd) {
  const auto qpn = static_cast<std::uint32_t>(*cmd.get_uint("qpn"));
  const auto rqpn = static_cast<std::uint32_t>(*cmd.get_uint("remote_qpn"));
  const auto rpsn = static_cast<std::uint32_t>(*cmd.get_uint("remote_psn"));
  const std::string rip = *cmd.get_string("remote_ip");
  const auto ip = parse_ip(rip);
  if (!ip) return control_error("connect_qp: \"remote_ip\" '" + rip + "' is not an IPv4 or IPv6 address");
  LocalQp found;
  {
    std::lock_guard lock(mutex_);
    for (CreatedQp& q : created_qps_) {
      if (q.qp.qpn != qpn) continue;
      if (q.type == IBV_QPT_UD) return control_error("connect_qp: QP " + std::to_string(qpn) + " is UD: it has no peer and is ready already");
      if (q.connected || q.connecting)
        return control_error("connect_qp: QP " + std::to_string(qpn) + (q.connected ? " is connected already (destroy_qp and make another)" : " is being connected by another command"));
      q.connecting = true;
      found = q.qp;
    }
  }
  if (!found.qp) return control_error("connect_qp: no QP " + std::to_string(qpn) + " made by create_qp (see list_qps)");
  const Status s = conn_->connect(found, RemoteQp{rqpn, rpsn, rdma::gid_from_ip(*ip)}, o_.qp);
  {
    std::lock_guard lock(mutex_);
    for (CreatedQp& q : created_qps_)
      if (q.qp.qpn == qpn) {
        q.connecting = false;
        q.connected = s.ok();
      }
  }
  // On failure the QP stays in INIT (no ARP answer) and may be tried again.
  if (!s) return control_error("connect_qp: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("qpn", found.qpn).field("state", "RTS"); });
}

std::string Appliance::cmd_destroy_qp(ControlSocket::ClientId, const JsonValue& cmd) {
  const auto qpn = static_cast<std::uint32_t>(*cmd.get_uint("qpn"));
  std::optional<CreatedQp> taken;
  {
    std::lock_guard lock(mutex_);
    for (auto it = created_qps_.begin(); it != created_qps_.end(); ++it)
      if (it->qp.qpn == qpn) {
        if (it->connecting) return control_error("destroy_qp: QP " + std::to_string(qpn) + " is being connected; try again when connect_qp has answered");
        taken = *it;
        created_qps_.erase(it);
        break;
      }
  }
  if (!taken) return control_error("destroy_qp: no QP " + std::to_string(qpn) + " made by create_qp (see list_qps; a session's QPs go when the session ends, or with disconnect)");
  if (Status s = conn_->destroy(taken->qp); !s) return control_error("destroy_qp: " + s.error().message);
  return ok_object([qpn](JsonWriter& w) { w.field("qpn", qpn).field("destroyed", true); });
}

std::string Appliance::cmd_disconnect(ControlSocket::ClientId, const JsonValue& cmd) {
  const std::uint64_t id = *cmd.get_uint("session");
  std::lock_guard lock(mutex_);
  for (auto& s : sessions_)
    if (s->id == id) {
      s->stop = true;  // the session tears its QPs down and ends; reaped by the accept loop
      return ok_object([&](JsonWriter& w) { w.field("session", id).field("peer", s->peer).field("ending", true); });
    }
  return control_error("disconnect: no running session " + std::to_string(id) + " (see list_sessions)");
}

void Appliance::client_closed(ControlSocket::ClientId client) {
  std::vector<CreatedQp> qps;
  std::list<CreatedMr> mrs;
  for (;;) {
    std::unique_lock lock(mutex_);
    // Another client may be connecting one of this client's QPs (it answers within the ARP wait).
    const bool busy = std::any_of(created_qps_.begin(), created_qps_.end(),
                                  [client](const CreatedQp& q) { return q.owner == client && q.connecting; });
    if (busy) {
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (auto it = created_qps_.begin(); it != created_qps_.end();) {
      if (it->owner == client) {
        qps.push_back(*it);
        it = created_qps_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = created_mrs_.begin(); it != created_mrs_.end();) {
      auto next = std::next(it);
      if (it->owner == client) mrs.splice(mrs.end(), created_mrs_, it);
      it = next;
    }
    break;
  }
  for (const CreatedQp& q : qps) conn_->destroy(q.qp);
  std::uint64_t bytes = 0;
  for (CreatedMr& m : mrs) {
    bytes += m.memory.size();
    release_mr(m);
  }
  std::lock_guard lock(mutex_);
  mr_bytes_in_use_ -= bytes;
}

namespace {
constexpr const char* kNoNvmf = "no NVMe/RDMA target here (roce-appliance runs one with --nvmf-subsystem)";
}

std::string Appliance::cmd_nvmf_namespaces(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_namespaces: ") + kNoNvmf);
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  auto list = nvmf_->namespaces(sub);
  if (!list) return control_error("nvmf_namespaces: " + list.error().message);
  JsonWriter w;
  w.begin_object().field("ok", true).field("subsystem", sub).key("namespaces").begin_array();
  for (const NvmfService::NamespaceInfo& n : *list) {
    w.begin_object().field("nsid", n.nsid).field("backing", n.file ? "file" : "memory");
    if (n.file) w.field("path", n.path);
    w.field("blocks", n.blocks).field("block_size", n.block_size).field("bytes", n.blocks * n.block_size).end_object();
  }
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::cmd_nvmf_add_namespace(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_add_namespace: ") + kNoNvmf);
  auto spec = parse_nvmf_namespace(*cmd.get_string("backing"));
  if (!spec) return control_error("nvmf_add_namespace: \"backing\": " + spec.error().message);
  const auto nsid = cmd.get_uint("nsid");
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  auto added = nvmf_->add_namespace(*spec, nsid ? static_cast<std::uint32_t>(*nsid) : 0, sub);
  if (!added) return control_error("nvmf_add_namespace: " + added.error().message);
  const std::uint32_t id = *added;
  return ok_object([&](JsonWriter& w) { w.field("subsystem", sub).field("nsid", id).field("added", true); });
}

std::string Appliance::cmd_nvmf_remove_namespace(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_remove_namespace: ") + kNoNvmf);
  const auto nsid = static_cast<std::uint32_t>(*cmd.get_uint("nsid"));
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  if (Status s = nvmf_->remove_namespace(nsid, sub); !s) return control_error("nvmf_remove_namespace: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("subsystem", sub).field("nsid", nsid).field("removed", true); });
}

std::string Appliance::cmd_nvmf_subsystems(ControlSocket::ClientId, const JsonValue&) {
  if (!nvmf_) return control_error(std::string("nvmf_subsystems: ") + kNoNvmf);
  auto list = nvmf_->subsystems();
  if (!list) return control_error("nvmf_subsystems: " + list.error().message);
  JsonWriter w;
  w.begin_object().field("ok", true).key("subsystems").begin_array();
  for (const NvmfService::SubsystemInfo& s : *list) {
    w.begin_object().field("nqn", s.nqn).field("serial", s.serial).field("allow_any_host", s.allow_any_host);
    w.key("hosts").begin_array();
    for (const std::string& h : s.hosts) w.value(h);
    w.end_array();
    w.field("namespaces", static_cast<std::uint64_t>(s.namespaces)).field("controllers", static_cast<std::uint64_t>(s.controllers));
    w.end_object();
  }
  w.end_array().end_object();
  return w.str();
}

std::string Appliance::cmd_nvmf_add_subsystem(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_add_subsystem: ") + kNoNvmf);
  const std::string nqn = *cmd.get_string("nqn");
  if (Status s = nvmf_->add_subsystem(nqn); !s) return control_error("nvmf_add_subsystem: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("nqn", nqn).field("added", true); });
}

std::string Appliance::cmd_nvmf_remove_subsystem(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_remove_subsystem: ") + kNoNvmf);
  const std::string nqn = *cmd.get_string("nqn");
  if (Status s = nvmf_->remove_subsystem(nqn); !s) return control_error("nvmf_remove_subsystem: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("nqn", nqn).field("removed", true); });
}

std::string Appliance::cmd_nvmf_allow_host(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_allow_host: ") + kNoNvmf);
  const std::string host = *cmd.get_string("host");
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  if (Status s = nvmf_->allow_host(host, sub); !s) return control_error("nvmf_allow_host: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("subsystem", sub).field("host", host).field("allowed", true); });
}

std::string Appliance::cmd_nvmf_disallow_host(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_disallow_host: ") + kNoNvmf);
  const std::string host = *cmd.get_string("host");
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  if (Status s = nvmf_->disallow_host(host, sub); !s) return control_error("nvmf_disallow_host: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("subsystem", sub).field("host", host).field("allowed", false); });
}

std::string Appliance::cmd_nvmf_allow_any_host(ControlSocket::ClientId, const JsonValue& cmd) {
  if (!nvmf_) return control_error(std::string("nvmf_allow_any_host: ") + kNoNvmf);
  const bool any = *cmd.get("allow")->boolean();
  const std::string sub = cmd.get_string("subsystem").value_or(o_.nvmf.subsystem);
  if (Status s = nvmf_->allow_any_host(any, sub); !s) return control_error("nvmf_allow_any_host: " + s.error().message);
  return ok_object([&](JsonWriter& w) { w.field("subsystem", sub).field("allow_any_host", any); });
}

}  // namespace roce::client
