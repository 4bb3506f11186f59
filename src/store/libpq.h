// Copyright Weft authors. libpq, PostgreSQL's client library, opened with dlopen the first time a
// PostgreSQL store is used instead of linked into every program. libpq brings 20 shared
// libraries (Kerberos, LDAP, GnuTLS, ...) that the dynamic loader would otherwise map and
// relocate at every start of `weft`, a third of the start-up of a client or an AM that never
// talks to PostgreSQL (docs/building.md, "Start-up").
//
// This library defines the PQ* functions that Weft calls (those declared in <libpq-fe.h>), each
// forwarding to the loaded libpq, so code keeps calling libpq's API as it is. Before the first
// PQ* call a program calls LoadLibpq() and reports its error: a PQ* call without a loadable
// libpq ends the program with that error (PQfinish, PQclear and PQfreemem of nullptr do
// nothing, as in libpq). A PQ* function Weft starts to use must be added to libpq.cc's list.
#ifndef WEFT_STORE_LIBPQ_H_
#define WEFT_STORE_LIBPQ_H_

#include <string>

#include "absl/status/status.h"

namespace weft::store {

// The library opened: $WEFT_LIBPQ when set (a path or a file name for dlopen), else libpq's
// soname, libpq.so.5 (Debian's package libpq5).
std::string LibpqPath();

// Opens libpq once per process (thread-safe) and resolves every PQ* function Weft uses.
// FailedPrecondition naming the library, dlopen's reason and the package to install, or the
// function the library lacks; the same answer on every later call.
absl::Status LoadLibpq();

// What LoadLibpq() does, for `path`, without keeping it: for tests of the error messages.
absl::Status CheckLibpq(const std::string& path);

}  // namespace weft::store

#endif  // WEFT_STORE_LIBPQ_H_
