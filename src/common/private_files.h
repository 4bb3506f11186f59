// Copyright Weft authors. Secrets at rest: the directories and files in which a daemon keeps
// keys, tokens, submissions or state are its own. Every daemon sets a private umask at start
// (SetDaemonUmask); every store checks its directory and file when it opens them.
//
// "Private" here: a directory has no read or write bit for group or others (a search bit is
// allowed, so that a data directory can hold NodeManager work roots that container users must
// traverse: 0700 or 0711); a file has no bit at all for group or others (0600). Both belong to
// the daemon's effective uid.
#ifndef WEFT_COMMON_PRIVATE_FILES_H_
#define WEFT_COMMON_PRIVATE_FILES_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// The umask every daemon runs with: files 0600 and directories 0700 unless a mode is chosen
// explicitly (container work dirs and logs set theirs). Returns the previous umask.
mode_t SetDaemonUmask();

// Whether `mode` (st_mode) lets group or others read or write a directory.
bool DirectoryModeIsOpen(mode_t mode);

// Creates `dir` and its missing parents, each mode 0700 (the umask may narrow, never widen);
// existing ones are left as they are. The error names the directory that could not be made.
absl::Status MakePrivateDirectories(const std::string& dir);

// Creates `dir` (and missing parents) if it does not exist: the parents 0700, `dir` itself
// `create_mode` (0700, or 0711 for a data directory that holds NodeManager work roots, whatever
// the umask). An existing `dir`
// must be a directory (not a symbolic link) owned by this process's effective uid with no
// read or write bit for group or others; otherwise FailedPrecondition naming the path, its
// owner or mode, and the command that fixes it (the directory is left unchanged: a daemon
// refuses to start on a state directory others can read). `what` names the directory's role,
// e.g. "state store directory".
absl::Status EnsurePrivateDirectory(const std::string& dir, absl::string_view what,
                                    mode_t create_mode = 0700);

// Checks the directory that holds `file` (see EnsurePrivateDirectory; it must exist), then
// makes `file` private: creates it empty with mode 0600 if missing (O_EXCL, no symbolic link
// followed); narrows an existing regular file of ours to 0600 (files an older Weft wrote
// 0644). FailedPrecondition, naming the path, when it is not a regular file or not ours.
absl::Status EnsurePrivateFile(const std::string& file, absl::string_view what);

// EnsurePrivateFile for an SQLite database, and 0600 for its -wal, -shm and -journal files if
// they exist (SQLite creates them with the database file's mode).
absl::Status EnsurePrivateSqliteFile(const std::string& file, absl::string_view what);

// Reads a secret from `path`: the file must be a regular file owned by this process's
// effective uid (or root) that group and others cannot read (0600 or 0400); its content,
// without a trailing newline, must not be empty. FailedPrecondition naming the path and the
// fix otherwise; the secret itself is never in an error.
absl::StatusOr<std::string> ReadPrivateSecretFile(const std::string& path, absl::string_view what);

}  // namespace weft

#endif  // WEFT_COMMON_PRIVATE_FILES_H_
