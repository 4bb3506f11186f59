// Copyright Weft authors.
#include "history/open_history_store.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "history/memory_history_store.h"
#include "history/postgres_history_store.h"
#include "history/sqlite_history_store.h"

namespace weft::history {
namespace {

template <typename Store>
absl::StatusOr<std::unique_ptr<HistoryStore>> Upcast(absl::StatusOr<std::unique_ptr<Store>> store) {
  if (!store.ok()) return store.status();
  return std::unique_ptr<HistoryStore>(*std::move(store));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HistoryStore>> OpenHistoryStore(absl::string_view url) {
  if (url == "memory") return std::make_unique<MemoryHistoryStore>();
  if (absl::StartsWith(url, "postgresql://") || absl::StartsWith(url, "postgres://")) {
    return Upcast(PostgresHistoryStore::Open(url));
  }
  absl::string_view path = url;
  absl::ConsumePrefix(&path, "sqlite:");
  if (absl::StartsWith(path, "/") && path.size() > 1 && !absl::EndsWith(path, "/")) {
    return Upcast(SqliteHistoryStore::Open(std::string(path)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("history store URL '", url,
                   "': expected \"memory\", \"sqlite:/absolute/path.db\" (or an absolute path), or "
                   "\"postgresql://user@host:port/db?passfile=...\""));
}

}  // namespace weft::history
