// Copyright Weft authors. The federation state store in this process's memory, for tests and
// the simulator.
#ifndef WEFT_FEDERATION_STORE_MEMORY_FEDERATION_STORE_H_
#define WEFT_FEDERATION_STORE_MEMORY_FEDERATION_STORE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "federation/store/record_store.h"

namespace weft::federation {

// The FederationStateStore contract except durability: the state lives exactly as long as the
// object. Thread-safe (one mutex).
class MemoryFederationStore final : public RecordFederationStore {
 public:
  MemoryFederationStore() = default;

  std::string Describe() const override { return "memory:"; }

 protected:
  absl::Status PutRecord(Table table, const Row& row) override;
  absl::StatusOr<InsertResult> InsertRecord(Table table, const Row& row) override;
  absl::StatusOr<bool> ModifyRecord(Table table, absl::string_view key, Updater update) override;
  absl::StatusOr<std::optional<std::string>> GetRecord(Table table, absl::string_view key) override;
  absl::StatusOr<std::vector<std::string>> ListRecords(Table table,
                                                       absl::string_view home) override;
  absl::StatusOr<bool> DeleteRecord(Table table, absl::string_view key) override;

 private:
  using Rows = std::map<std::string, Row, std::less<>>;

  absl::Mutex mu_;
  std::map<Table, Rows> tables_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_MEMORY_FEDERATION_STORE_H_
