// Copyright Weft authors. An RM and NodeManagers in this process, on 127.0.0.1: what
// `weft dev` and `weft demo` run.
#ifndef WEFT_CLI_DEV_CLUSTER_H_
#define WEFT_CLI_DEV_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "cli/nm_command.h"
#include "nm/node_manager.h"
#include "rm/rm_server.h"
#include "security/tls.h"
#include "web/nm_web_server.h"
#include "web/rm_web_server.h"

namespace weft::cli {

class DevCluster {
 public:
  // Starts the RM. With `use_cgroups` but not root, cgroups are turned off with a warning on
  // stderr naming `who` ("weft dev"). The cluster speaks mutual TLS: a CA and the daemons'
  // certificates are made in <data_dir>/tls (security/tls.h EnsureDevTls; an existing CA is
  // reused) unless rm_options.tls is already set. `tls_dir`: where the CA and the certificates
  // are ("" = <data_dir>/tls); the sub-clusters of a federation share one.
  static absl::StatusOr<std::unique_ptr<DevCluster>> Start(rm::RmServerOptions rm_options,
                                                           bool use_cgroups, std::string data_dir,
                                                           std::string who,
                                                           std::string tls_dir = "");
  ~DevCluster();  // Shutdown()

  // Starts one more NodeManager offering `node_resources` ("" = detect). If the NM refuses
  // cgroups, they are turned off for it and the following nodes, with a warning (not when
  // `network` asks for bandwidth isolation, which needs them: then it fails).
  // `network`: only its network_*, container-user, AMRMProxy (amrmproxy, interceptors,
  // federation store, sub-cluster id) and GPU (gpus, nvidia_smi, gpu_*) fields are used; null = bandwidth not enforced,
  // containers as the app user with the default policy, no AMRMProxy. `node_label`: the NM's
  // node label ("" = none); the RM's scheduler config must declare it (node-labels), or the
  // RM refuses the NM's registration.
  absl::StatusOr<nm::NodeManager*> AddNode(const std::string& node_resources,
                                           const NmFlags* network = nullptr,
                                           const std::string& node_label = "");

  // Starts the RM's web server (UI, REST API, /metrics). At most once.
  absl::Status StartWeb(web::RmWebOptions options);
  // Null until StartWeb succeeded.
  web::RmWebServer* web() { return web_.get(); }

  rm::RmServer& rm() { return *rm_; }
  // The cluster CA's certificate file, and credentials for a client of the RM (verifying it
  // against that CA, presenting no certificate).
  const std::string& ca_path() const { return tls_.ca_path; }
  std::shared_ptr<grpc::ChannelCredentials> ClientCredentials() const;
  const std::vector<std::unique_ptr<nm::NodeManager>>& nodes() const { return nms_; }
  // Where a dev cluster's NMs aggregate container logs and its RM serves them from:
  // <data_dir>/aggregated-logs (unless an NM's flags name another).
  static std::string LogAggregationDir(const std::string& data_dir);
  // host:port of each node's web server (/metrics, container logs), in nodes() order.
  std::vector<std::string> node_web_addresses() const;
  bool use_cgroups() const { return use_cgroups_; }
  // Stops the NMs (and their containers), their web servers and loops, then the RM's web server
  // and the RM. Idempotent.
  void Shutdown();

 private:
  DevCluster() = default;

  std::string data_dir_;
  std::string who_;
  std::string tls_dir_;
  security::DevTlsLayout tls_;
  std::string ca_pem_;
  bool use_cgroups_ = true;
  std::unique_ptr<rm::RmServer> rm_;
  std::unique_ptr<web::RmWebServer> web_;
  std::vector<std::unique_ptr<ThreadEventLoop>> loops_;
  // Per node, in nodes() order: its metrics (outlive the NM) and its web server.
  std::vector<std::unique_ptr<metrics::Registry>> nm_metrics_;
  std::vector<std::unique_ptr<web::NmWebServer>> nm_webs_;
  std::vector<std::unique_ptr<nm::NodeManager>> nms_;
};

}  // namespace weft::cli

#endif  // WEFT_CLI_DEV_CLUSTER_H_
