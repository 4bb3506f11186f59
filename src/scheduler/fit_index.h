// Copyright Weft authors. Finds a slot whose free resource fits a request, in O(log n) typically.
#ifndef WEFT_SCHEDULER_FIT_INDEX_H_
#define WEFT_SCHEDULER_FIT_INDEX_H_

#include <vector>

#include "common/resource.h"

namespace weft::scheduler {

// A segment tree over slots 0..size()-1. Each leaf holds a slot's free resource; each inner
// node the componentwise maximum of its children. A subtree whose maximum does not fit a
// request is skipped whole, so a search visits O(log n) nodes when free space is where the
// maxima say, and never misses a fitting slot (the maximum only over-approximates).
// Worst case (many slots that fit one dimension each but none fits all) is O(n).
//
// Thread-compatible.
class FitIndex {
 public:
  // A value no request fits: used for empty, removed and unschedulable slots.
  static Resource Blocked();

  int size() const { return size_; }
  // Appends a slot (free = Blocked()) and returns its index. Amortised O(log n).
  int AddSlot();
  void Set(int slot, const Resource& free);
  const Resource& Get(int slot) const { return tree_[cap_ + slot]; }
  // The componentwise maximum over all slots.
  const Resource& Max() const { return tree_[1]; }

  // The first slot >= `from` (wrapping around to 0..from-1) whose free resource fits
  // `request`; -1 when none does.
  int FindFrom(const Resource& request, int from) const;

 private:
  int FindIn(const Resource& request, int node, int lo, int hi, int from) const;
  void Grow();

  int size_ = 0;
  int cap_ = 0;                 // number of leaves, a power of two (0 before the first slot)
  std::vector<Resource> tree_;  // 1-based heap layout; leaves at cap_ + slot
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_FIT_INDEX_H_
