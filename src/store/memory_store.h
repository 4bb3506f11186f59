// Copyright Weft authors. A StateStore that keeps everything in memory, for tests.
#ifndef WEFT_STORE_MEMORY_STORE_H_
#define WEFT_STORE_MEMORY_STORE_H_

#include <memory>

#include "store/state_store.h"

namespace weft::store {

// Returns an empty in-memory store with the semantics of every StateStore (validation,
// NotFound cases, atomicity, sorting of Load()) except durability: the state lives exactly as
// long as the returned object. Thread-compatible.
std::unique_ptr<StateStore> NewMemoryStore();

}  // namespace weft::store

#endif  // WEFT_STORE_MEMORY_STORE_H_
