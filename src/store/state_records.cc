// Copyright Weft authors.
#include "store/state_records.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace weft::store {
namespace {

template <typename Proto>
absl::StatusOr<Proto> Parse(absl::string_view data, absl::string_view kind) {
  Proto proto;
  if (!proto.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return absl::DataLossError(
        absl::StrCat(kind, " record: not a valid serialized proto (", data.size(), " bytes)"));
  }
  return proto;
}

}  // namespace

v1::StoredApplication ToProto(const ApplicationRecord& app) {
  v1::StoredApplication p;
  p.set_app_id(app.app_id);
  p.set_name(app.name);
  p.set_queue(app.queue);
  p.set_user(app.user);
  p.set_priority(app.priority);
  p.set_state(app.state);
  p.set_final_status(app.final_status);
  p.set_diagnostics(app.diagnostics);
  p.set_submit_ms(app.submit_ms);
  p.set_start_ms(app.start_ms);
  p.set_finish_ms(app.finish_ms);
  p.set_max_attempts(app.max_attempts);
  p.set_submission(app.submission);
  return p;
}

v1::StoredAttempt ToProto(const AttemptRecord& attempt) {
  v1::StoredAttempt p;
  p.set_app_id(attempt.app_id);
  p.set_attempt_id(attempt.attempt_id);
  p.set_state(attempt.state);
  p.set_am_container_id(attempt.am_container_id);
  p.set_node(attempt.node);
  p.set_exit_status(attempt.exit_status);
  p.set_diagnostics(attempt.diagnostics);
  p.set_start_ms(attempt.start_ms);
  p.set_finish_ms(attempt.finish_ms);
  return p;
}

v1::StoredMasterKey ToProto(const MasterKeyRecord& key) {
  v1::StoredMasterKey p;
  p.set_purpose(key.purpose);
  p.set_key_id(key.key_id);
  p.set_secret(key.secret);
  p.set_created_ms(key.created_ms);
  p.set_expires_ms(key.expires_ms);
  return p;
}

v1::StoredNodeAdmin ToProto(const NodeAdminRecord& node) {
  v1::StoredNodeAdmin p;
  p.set_node(node.node);
  p.set_decommissioned(node.decommissioned);
  for (const auto& [k, v] : node.attributes) (*p.mutable_attributes())[k] = v;
  return p;
}

ApplicationRecord FromProto(const v1::StoredApplication& p) {
  ApplicationRecord app;
  app.app_id = p.app_id();
  app.name = p.name();
  app.queue = p.queue();
  app.user = p.user();
  app.priority = p.priority();
  app.state = p.state();
  app.final_status = p.final_status();
  app.diagnostics = p.diagnostics();
  app.submit_ms = p.submit_ms();
  app.start_ms = p.start_ms();
  app.finish_ms = p.finish_ms();
  app.max_attempts = p.max_attempts();
  app.submission = p.submission();
  return app;
}

AttemptRecord FromProto(const v1::StoredAttempt& p) {
  AttemptRecord attempt;
  attempt.app_id = p.app_id();
  attempt.attempt_id = p.attempt_id();
  attempt.state = p.state();
  attempt.am_container_id = p.am_container_id();
  attempt.node = p.node();
  attempt.exit_status = p.exit_status();
  attempt.diagnostics = p.diagnostics();
  attempt.start_ms = p.start_ms();
  attempt.finish_ms = p.finish_ms();
  return attempt;
}

MasterKeyRecord FromProto(const v1::StoredMasterKey& p) {
  MasterKeyRecord key;
  key.purpose = p.purpose();
  key.key_id = p.key_id();
  key.secret = p.secret();
  key.created_ms = p.created_ms();
  key.expires_ms = p.expires_ms();
  return key;
}

NodeAdminRecord FromProto(const v1::StoredNodeAdmin& p) {
  NodeAdminRecord node;
  node.node = p.node();
  node.decommissioned = p.decommissioned();
  for (const auto& [k, v] : p.attributes()) node.attributes[k] = v;
  return node;
}

std::string EncodeApplication(const ApplicationRecord& app) {
  return ToProto(app).SerializeAsString();
}
std::string EncodeAttempt(const AttemptRecord& attempt) {
  return ToProto(attempt).SerializeAsString();
}
std::string EncodeMasterKey(const MasterKeyRecord& key) { return ToProto(key).SerializeAsString(); }
std::string EncodeNodeAdmin(const NodeAdminRecord& node) {
  // Deterministic: map entries sorted by key, so that equal records give equal bytes.
  const v1::StoredNodeAdmin p = ToProto(node);
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    p.SerializeToCodedStream(&coded);
  }
  return out;
}
std::string EncodeEpoch(int64_t epoch) {
  v1::StoredEpoch p;
  p.set_epoch(epoch);
  return p.SerializeAsString();
}

absl::StatusOr<ApplicationRecord> DecodeApplication(absl::string_view data) {
  absl::StatusOr<v1::StoredApplication> p = Parse<v1::StoredApplication>(data, "application");
  if (!p.ok()) return p.status();
  return FromProto(*p);
}

absl::StatusOr<AttemptRecord> DecodeAttempt(absl::string_view data) {
  absl::StatusOr<v1::StoredAttempt> p = Parse<v1::StoredAttempt>(data, "attempt");
  if (!p.ok()) return p.status();
  return FromProto(*p);
}

absl::StatusOr<MasterKeyRecord> DecodeMasterKey(absl::string_view data) {
  absl::StatusOr<v1::StoredMasterKey> p = Parse<v1::StoredMasterKey>(data, "master key");
  if (!p.ok()) return p.status();
  return FromProto(*p);
}

absl::StatusOr<NodeAdminRecord> DecodeNodeAdmin(absl::string_view data) {
  absl::StatusOr<v1::StoredNodeAdmin> p = Parse<v1::StoredNodeAdmin>(data, "node admin");
  if (!p.ok()) return p.status();
  return FromProto(*p);
}

absl::StatusOr<int64_t> DecodeEpoch(absl::string_view data) {
  absl::StatusOr<v1::StoredEpoch> p = Parse<v1::StoredEpoch>(data, "epoch");
  if (!p.ok()) return p.status();
  if (p->epoch() < 0) {
    return absl::DataLossError(absl::StrCat("epoch record: epoch ", p->epoch(), " is negative"));
  }
  return p->epoch();
}

}  // namespace weft::store
