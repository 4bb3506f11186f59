// Copyright Weft authors.
#include "federation/store/memory_federation_store.h"

#include <utility>

namespace weft::federation {

absl::Status MemoryFederationStore::PutRecord(Table table, const Row& row) {
  absl::MutexLock lock(&mu_);
  tables_[table][row.key] = row;
  return absl::OkStatus();
}

absl::StatusOr<MemoryFederationStore::InsertResult> MemoryFederationStore::InsertRecord(
    Table table, const Row& row) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = tables_[table].try_emplace(row.key, row);
  return InsertResult{it->second.record, inserted};
}

absl::StatusOr<bool> MemoryFederationStore::ModifyRecord(Table table, absl::string_view key,
                                                         Updater update) {
  absl::MutexLock lock(&mu_);
  Rows& rows = tables_[table];
  auto it = rows.find(key);
  if (it == rows.end()) return false;
  absl::StatusOr<Row> row = update(it->second.record);
  if (!row.ok()) return row.status();
  it->second = *std::move(row);
  return true;
}

absl::StatusOr<std::optional<std::string>> MemoryFederationStore::GetRecord(Table table,
                                                                            absl::string_view key) {
  absl::MutexLock lock(&mu_);
  const Rows& rows = tables_[table];
  auto it = rows.find(key);
  if (it == rows.end()) return std::nullopt;
  return it->second.record;
}

absl::StatusOr<std::vector<std::string>> MemoryFederationStore::ListRecords(
    Table table, absl::string_view home) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> records;
  for (const auto& [key, row] : tables_[table]) {
    if (home.empty() || row.home == home) records.push_back(row.record);
  }
  return records;
}

absl::StatusOr<bool> MemoryFederationStore::DeleteRecord(Table table, absl::string_view key) {
  absl::MutexLock lock(&mu_);
  Rows& rows = tables_[table];
  auto it = rows.find(key);
  if (it == rows.end()) return false;
  rows.erase(it);
  return true;
}

}  // namespace weft::federation
