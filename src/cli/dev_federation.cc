// Copyright Weft authors.
#include "cli/dev_federation.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/private_files.h"
#include "security/tls.h"

namespace weft::cli {
namespace {

absl::StatusOr<security::TlsFiles> DaemonFiles(const std::string& tls_dir, const std::string& ca,
                                               security::DaemonRole role, const std::string& name) {
  absl::StatusOr<security::CertKeyPaths> cert = security::IssueCertificate(
      tls_dir, tls_dir, role, name, {}, security::kDefaultCertDays, /*overwrite=*/true);
  if (!cert.ok()) return cert.status();
  return security::LoadTlsFiles(ca, cert->cert_path, cert->key_path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DevFederation>> DevFederation::Start(DevFederationOptions o) {
  if (o.subclusters < 2 || o.subclusters > 20)
    return absl::InvalidArgumentError(
        absl::StrCat("--subclusters ", o.subclusters, " must be between 2 and 20"));
  std::unique_ptr<DevFederation> f(new DevFederation());
  f->options_ = o;
  const std::filesystem::path root(o.data_dir);
  if (absl::Status s = EnsurePrivateDirectory(root.string(), "--data-dir", 0711); !s.ok()) return s;

  // One CA for the whole federation: every daemon trusts every other's certificate.
  const std::string tls_dir = (root / "tls").string();
  absl::StatusOr<security::DevTlsLayout> tls = security::EnsureDevTls(tls_dir, {});
  if (!tls.ok())
    return absl::Status(tls.status().code(), absl::StrCat("making the federation's certificates in ",
                                                          tls_dir, ": ", tls.status().message()));
  f->ca_path_ = tls->ca_path;

  f->store_uri_ = absl::StrCat("sqlite:", (root / "federation.db").string());
  auto store = federation::OpenFederationStore(f->store_uri_);
  if (!store.ok()) return store.status();
  f->store_ = *std::move(store);

  const int64_t started_ms = absl::ToUnixMillis(absl::Now());
  rm::ClientAuthOptions auth;  // the RMs' way of authenticating users, for the router too
  for (int i = 0; i < o.subclusters; ++i) {
    const std::string id = SubClusterId(i);
    const std::filesystem::path dir = root / id;
    // Its RM's store and its NMs' work roots: 0711, as weft dev's data directory.
    if (absl::Status s = EnsurePrivateDirectory(dir.string(), "sub-cluster directory", 0711);
        !s.ok())
      return s;
    RmFlags r = o.rm;
    r.port = 0;
    r.http_port = 0;
    r.state_store = (dir / "rm-state.db").string();
    r.sub_cluster_id = id;
    r.federation_store = f->store_uri_;
    r.log_aggregation_dir = DevCluster::LogAggregationDir(dir.string());  // its NMs' (AddNode)
    auto rm_options = MakeRmServerOptions(r);
    if (!rm_options.ok())
      return absl::Status(rm_options.status().code(),
                          absl::StrCat("sub-cluster ", id, ": ", rm_options.status().message()));
    // Claimed in the store, as `weft rm` does: application ids never collide across
    // sub-clusters (or with a federation.db's earlier runs), whatever the RMs' clocks say.
    const int64_t wanted = o.cluster_timestamp_ms > 0 ? o.cluster_timestamp_ms : started_ms;
    absl::StatusOr<int64_t> claimed = f->store_->ClaimClusterTimestamp(id, wanted);
    if (!claimed.ok())
      return absl::Status(claimed.status().code(),
                          absl::StrCat("sub-cluster ", id, ": ", claimed.status().message()));
    rm_options->rm.cluster_timestamp_ms = *claimed;
    rm_options->rm.federation_fence_ms = 2 * o.heartbeat_ms;  // its heartbeater's interval
    // Where the RM checks what NMs (AMRMProxies) and the GPG claim about an app (its home).
    rm_options->federation_store = f->store_.get();
    // The RMs' counterpart of the NMs' `--allowed-system-users root`: their AMRMProxies may
    // then act for root's apps (their unmanaged AMs in the other sub-clusters).
    for (const std::string& u : o.nm.allowed_system_users)
      if (u == "root") rm_options->auth.federation_root_apps = true;
    auth = rm_options->auth;
    auto web_options = MakeRmWebOptions(r);
    if (!web_options.ok()) return web_options.status();
    web_options->limits = o.http_limits;
    auto cluster = DevCluster::Start(*std::move(rm_options), o.use_cgroups, dir.string(),
                                     "weft dev", tls_dir);
    if (!cluster.ok())
      return absl::Status(cluster.status().code(),
                          absl::StrCat("sub-cluster ", id, ": ", cluster.status().message()));
    if (absl::Status s = (*cluster)->StartWeb(*web_options); !s.ok())
      return absl::Status(s.code(), absl::StrCat("sub-cluster ", id, " web server: ", s.message()));
    NmFlags nm = o.nm;
    nm.amrmproxy = true;
    nm.federation_store = f->store_uri_;
    nm.sub_cluster_id = id;
    for (int n = 0; n < o.nodes_per_subcluster; ++n) {
      if (auto added = (*cluster)->AddNode(o.node_resources, &nm); !added.ok())
        return absl::Status(added.status().code(),
                            absl::StrCat("sub-cluster ", id, ": ", added.status().message()));
    }
    rm::RmServer* rm = &(*cluster)->rm();
    federation::HeartbeaterOptions h;
    h.sub_cluster_id = id;
    h.rm_address = rm->address();
    h.rm_http_address = (*cluster)->web()->address();
    h.heartbeat_interval_ms = o.heartbeat_ms;
    auto heartbeater = federation::SubClusterHeartbeater::Start(
        h, f->store_.get(), federation::FiguresFromRmServer(rm), [rm] { return rm->NowMs(); });
    if (!heartbeater.ok()) return heartbeater.status();
    f->heartbeaters_.push_back(*std::move(heartbeater));
    f->clusters_.push_back(*std::move(cluster));
  }

  // The router on the CLI's default RM port, with the RMs' way of authenticating users.
  auto router_tls = DaemonFiles(tls_dir, f->ca_path_, security::DaemonRole::kRouter, "router");
  if (!router_tls.ok()) return router_tls.status();
  federation::RouterServerOptions ro;
  ro.router.router_id = "router";
  ro.router.membership_expiry_ms = o.membership_expiry_ms;
  ro.router.cache_ttl_ms = 1000;
  ro.port = o.router_port;
  ro.auth = auth;
  ro.tls = *router_tls;
  auto router = federation::RouterServer::Start(std::move(ro), f->store_.get());
  if (!router.ok())
    return absl::Status(router.status().code(),
                        absl::StrCat("starting the router: ", router.status().message()));
  f->router_ = *std::move(router);
  federation::RouterServer* rs = f->router_.get();
  federation::RouterWebOptions wo;
  wo.port = o.router_http_port;
  wo.limits = o.http_limits;
  auto web = federation::RouterWebServer::Start(
      &rs->router(), [rs](const rm::Presented& p) { return rs->Authenticate(p); }, wo);
  if (!web.ok() && o.router_http_port != 0) {
    std::cerr << "weft dev: HTTP port " << o.router_http_port
              << " is taken; serving the router's web UI on a free port instead" << std::endl;
    wo.port = 0;
    web = federation::RouterWebServer::Start(
        &rs->router(), [rs](const rm::Presented& p) { return rs->Authenticate(p); }, wo);
  }
  if (!web.ok())
    return absl::Status(web.status().code(),
                        absl::StrCat("starting the router's web server: ", web.status().message()));
  f->router_web_ = *std::move(web);

  // The GPG: one round now (it writes the "*" policy: weighted-random homes and
  // locality-multicast asks by headroom), then one every gpg_interval_ms.
  auto gpg_tls = DaemonFiles(tls_dir, f->ca_path_, security::DaemonRole::kGpg, "gpg");
  if (!gpg_tls.ok()) return gpg_tls.status();
  f->gpg_rms_ = std::make_unique<federation::GrpcSubClusterRms>(*gpg_tls);
  federation::GpgOptions go;
  go.gpg_id = "gpg";
  go.membership_expiry_ms = o.membership_expiry_ms;
  f->gpg_ = std::make_unique<federation::GlobalPolicyGenerator>(go, f->store_.get(),
                                                                 f->gpg_rms_.get());
  for (const std::string& e : f->gpg_->RunOnce(absl::ToUnixMillis(absl::Now())).errors)
    log::Warn("gpg_round_error", {{"error", e}});
  DevFederation* self = f.get();
  f->gpg_thread_ = std::thread([self] {
    while (!self->gpg_stop_.WaitForNotificationWithTimeout(
        absl::Milliseconds(self->options_.gpg_interval_ms))) {
      for (const std::string& e : self->gpg_->RunOnce(absl::ToUnixMillis(absl::Now())).errors)
        log::Warn("gpg_round_error", {{"error", e}});
    }
  });
  return f;
}

DevFederation::~DevFederation() { Shutdown(); }

void DevFederation::Shutdown() {
  if (gpg_thread_.joinable()) {
    gpg_stop_.Notify();
    gpg_thread_.join();
  }
  if (router_web_) router_web_->Stop();
  if (router_) router_->Shutdown();
  for (auto& h : heartbeaters_) h->Stop();
  heartbeaters_.clear();
  for (auto& c : clusters_) c->Shutdown();
}

}  // namespace weft::cli
