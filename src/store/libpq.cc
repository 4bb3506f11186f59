// Copyright Weft authors.
#include "store/libpq.h"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

// Every PQ* function Weft calls, as X(return type, name, (parameters), (arguments)); the
// compiler checks each line against <libpq-fe.h>'s declaration.
#define WEFT_LIBPQ_FORWARDED(X)                                                                    \
  X(PGconn*, PQconnectdb, (const char* conninfo), (conninfo))                                      \
  X(PGconn*, PQconnectdbParams,                                                                    \
    (const char* const* keywords, const char* const* values, int expand_dbname),                   \
    (keywords, values, expand_dbname))                                                             \
  X(PGPing, PQping, (const char* conninfo), (conninfo))                                            \
  X(void, PQreset, (PGconn * conn), (conn))                                                        \
  X(ConnStatusType, PQstatus, (const PGconn* conn), (conn))                                        \
  X(PGTransactionStatusType, PQtransactionStatus, (const PGconn* conn), (conn))                    \
  X(char*, PQerrorMessage, (const PGconn* conn), (conn))                                           \
  X(char*, PQhost, (const PGconn* conn), (conn))                                                   \
  X(int, PQconnectionUsedPassword, (const PGconn* conn), (conn))                                   \
  X(int, PQsslInUse, (PGconn * conn), (conn))                                                      \
  X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * conn, PQnoticeProcessor proc, void* arg),   \
    (conn, proc, arg))                                                                             \
  X(PQconninfoOption*, PQconninfoParse, (const char* conninfo, char** errmsg), (conninfo, errmsg)) \
  X(void, PQconninfoFree, (PQconninfoOption * options), (options))                                 \
  X(PGresult*, PQexec, (PGconn * conn, const char* query), (conn, query))                          \
  X(PGresult*, PQexecParams,                                                                       \
    (PGconn * conn, const char* command, int nParams, const Oid* paramTypes,                       \
     const char* const* paramValues, const int* paramLengths, const int* paramFormats,             \
     int resultFormat),                                                                            \
    (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat))   \
  X(ExecStatusType, PQresultStatus, (const PGresult* res), (res))                                  \
  X(char*, PQresultErrorMessage, (const PGresult* res), (res))                                     \
  X(char*, PQresultErrorField, (const PGresult* res, int fieldcode), (res, fieldcode))             \
  X(int, PQntuples, (const PGresult* res), (res))                                                  \
  X(char*, PQgetvalue, (const PGresult* res, int tup_num, int field_num),                          \
    (res, tup_num, field_num))                                                                     \
  X(int, PQgetlength, (const PGresult* res, int tup_num, int field_num),                           \
    (res, tup_num, field_num))                                                                     \
  X(char*, PQcmdTuples, (PGresult * res), (res))

// The ones that free: nullptr is a no-op, as in libpq, that needs no library (a store's
// destructor after its libpq failed to load).
#define WEFT_LIBPQ_FREEING(X)                \
  X(void, PQfinish, (PGconn * conn), (conn)) \
  X(void, PQclear, (PGresult * res), (res))  \
  X(void, PQfreemem, (void* ptr), (ptr))

namespace weft::store {
namespace {

struct Libpq {
  void* handle = nullptr;
#define WEFT_LIBPQ_POINTER(ret, name, params, args) decltype(&::name) name = nullptr;
  WEFT_LIBPQ_FORWARDED(WEFT_LIBPQ_POINTER)
  WEFT_LIBPQ_FREEING(WEFT_LIBPQ_POINTER)
#undef WEFT_LIBPQ_POINTER
};

absl::Status Open(const std::string& path, Libpq& lib) {
  lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "PostgreSQL's client library '", path, "' cannot be loaded (",
        why != nullptr ? why : "no reason given",
        "); install the Debian package libpq5 (scripts/install-deps.sh does), or set WEFT_LIBPQ "
        "to the library's path"));
  }
#define WEFT_LIBPQ_RESOLVE(ret, name, params, args)                                       \
  if (void* symbol = dlsym(lib.handle, #name); symbol != nullptr) {                       \
    lib.name = reinterpret_cast<decltype(lib.name)>(symbol);                              \
  } else {                                                                                \
    dlclose(lib.handle);                                                                  \
    lib = Libpq{};                                                                        \
    return absl::FailedPreconditionError(absl::StrCat(                                    \
        "'", path, "' is not PostgreSQL's client library libpq: it has no " #name "()")); \
  }
  WEFT_LIBPQ_FORWARDED(WEFT_LIBPQ_RESOLVE)
  WEFT_LIBPQ_FREEING(WEFT_LIBPQ_RESOLVE)
#undef WEFT_LIBPQ_RESOLVE
  return absl::OkStatus();
}

struct Loaded {
  Libpq lib;
  absl::Status status;
};

const Loaded& Global() {
  static const Loaded loaded = [] {
    Loaded l;
    l.status = Open(LibpqPath(), l.lib);
    return l;
  }();
  return loaded;
}

// For the forwarders below: the loaded library, or the end of the program with the reason.
const Libpq& LoadedLibpqOrDie() {
  const Loaded& loaded = Global();
  if (!loaded.status.ok()) {
    std::fprintf(stderr, "weft: %s\n", std::string(loaded.status.message()).c_str());
    std::abort();
  }
  return loaded.lib;
}

}  // namespace

std::string LibpqPath() {
  const char* path = std::getenv("WEFT_LIBPQ");
  return path != nullptr && *path != '\0' ? path : "libpq.so.5";
}

absl::Status LoadLibpq() { return Global().status; }

absl::Status CheckLibpq(const std::string& path) {
  Libpq lib;
  absl::Status status = Open(path, lib);
  if (status.ok()) dlclose(lib.handle);
  return status;
}

}  // namespace weft::store

extern "C" {
#define WEFT_LIBPQ_FORWARD(ret, name, params, args) \
  ret name params { return weft::store::LoadedLibpqOrDie().name args; }
WEFT_LIBPQ_FORWARDED(WEFT_LIBPQ_FORWARD)
#undef WEFT_LIBPQ_FORWARD

#define WEFT_LIBPQ_FORWARD_FREE(ret, name, params, args)            \
  ret name params {                                                 \
    if (args != nullptr) weft::store::LoadedLibpqOrDie().name args; \
  }
WEFT_LIBPQ_FREEING(WEFT_LIBPQ_FORWARD_FREE)
#undef WEFT_LIBPQ_FORWARD_FREE
}
