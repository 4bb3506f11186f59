#include "scheduler/fit_index.h"

namespace weft::scheduler {

Resource FitIndex::Blocked() {
  Resource r;
  for (int i = 0; i < kMaxResourceTypes; ++i) r[i] = -1;
  return r;
}

void FitIndex::Grow() {
  int new_cap = cap_ == 0 ? 1 : cap_ * 2;
  std::vector<Resource> tree(2 * static_cast<size_t>(new_cap), Blocked());
  for (int i = 0; i < size_; ++i) tree[new_cap + i] = tree_[cap_ + i];
  for (int i = new_cap - 1; i >= 1; --i) tree[i] = weft::Max(tree[2 * i], tree[2 * i + 1]);
  tree_ = std::move(tree);
  cap_ = new_cap;
}

int FitIndex::AddSlot() {
  if (size_ == cap_) Grow();
  return size_++;
}

void FitIndex::Set(int slot, const Resource& free) {
  int i = cap_ + slot;
  tree_[i] = free;
  for (i /= 2; i >= 1; i /= 2) {
    Resource m = weft::Max(tree_[2 * i], tree_[2 * i + 1]);
    if (m == tree_[i]) break;  // ancestors above are unchanged too
    tree_[i] = m;
  }
}

int FitIndex::FindIn(const Resource& request, int node, int lo, int hi, int from) const {
  if (hi <= from || !request.FitsIn(tree_[node])) return -1;
  if (hi - lo == 1) return lo;
  int mid = (lo + hi) / 2;
  int found = FindIn(request, 2 * node, lo, mid, from);
  if (found >= 0) return found;
  return FindIn(request, 2 * node + 1, mid, hi, from);
}

int FitIndex::FindFrom(const Resource& request, int from) const {
  if (size_ == 0 || !request.FitsIn(tree_[1])) return -1;
  if (from < 0 || from >= size_) from = 0;
  int found = FindIn(request, 1, 0, cap_, from);
  if (found >= 0 || from == 0) return found;
  return FindIn(request, 1, 0, cap_, 0);  // wrap around; finds a slot < from or nothing
}

}  // namespace weft::scheduler
