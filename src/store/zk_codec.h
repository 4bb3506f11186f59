// Copyright Weft authors. Transitional: the ZooKeeper record codec is gone (records are protos,
// store/state_records.h; the pre-proto format is only read, store/zk_legacy_format.h). This
// header only forwards the node-name escaping, now in store/zk_names.h, for the files that still
// include it (src/federation/store); include store/zk_names.h instead. Delete once unused.
#ifndef WEFT_STORE_ZK_CODEC_H_
#define WEFT_STORE_ZK_CODEC_H_

#include "store/zk_names.h"  // IWYU pragma: export

#endif  // WEFT_STORE_ZK_CODEC_H_
