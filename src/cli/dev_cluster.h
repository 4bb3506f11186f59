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

namespace weft::cli {

class DevCluster {
 public:
  // Starts the RM. With `use_cgroups` but not root, cgroups are turned off with a warning on
  // stderr naming `who` ("weft dev").
  static absl::StatusOr<std::unique_ptr<DevCluster>> Start(rm::RmServerOptions rm_options,
                                                           bool use_cgroups, std::string data_dir,
                                                           std::string who);
  ~DevCluster();  // Shutdown()

  // Starts one more NodeManager offering `node_resources` ("" = detect). If the NM refuses
  // cgroups, they are turned off for it and the following nodes, with a warning (not when
  // `network` asks for bandwidth isolation, which needs them: then it fails).
  // `network`: only its network_* fields are used; null = bandwidth not enforced.
  absl::StatusOr<nm::NodeManager*> AddNode(const std::string& node_resources,
                                           const NmFlags* network = nullptr);

  rm::RmServer& rm() { return *rm_; }
  const std::vector<std::unique_ptr<nm::NodeManager>>& nodes() const { return nms_; }
  bool use_cgroups() const { return use_cgroups_; }
  // Stops the NMs (and their containers), their loops, then the RM. Idempotent.
  void Shutdown();

 private:
  DevCluster() = default;

  std::string data_dir_;
  std::string who_;
  bool use_cgroups_ = true;
  std::unique_ptr<rm::RmServer> rm_;
  std::vector<std::unique_ptr<ThreadEventLoop>> loops_;
  std::vector<std::unique_ptr<nm::NodeManager>> nms_;
};

}  // namespace weft::cli

#endif  // WEFT_CLI_DEV_CLUSTER_H_
