// Copyright Weft authors. A set of small non-negative integer ids kept as a bitmap.
#ifndef WEFT_COMMON_DENSE_ID_SET_H_
#define WEFT_COMMON_DENSE_ID_SET_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft {

// A set of ids in [0, 2^31) as one bit per id up to the largest inserted: an insert writes one
// word (the vector grows only when a larger id arrives) and never rehashes, so its cost does not
// depend on how many ids the set holds. It takes (largest id + 1) / 8 bytes: meant for ids
// handed out densely from 0, such as the scheduler's node ids (an app's nodes at 50,000 NMs fit
// in 6.1 KiB, where a hash set of them grows to ~230 KiB and rehashes on the way).
class DenseIdSet {
 public:
  // Adds `id` (>= 0); returns whether it was absent.
  bool insert(int32_t id) {
    const size_t word = static_cast<size_t>(id) >> 6;
    if (word >= words_.size()) words_.resize(word + 1, 0);
    const uint64_t bit = uint64_t{1} << (static_cast<uint32_t>(id) & 63);
    if ((words_[word] & bit) != 0) return false;
    words_[word] |= bit;
    ++size_;
    return true;
  }
  bool contains(int32_t id) const {
    const size_t word = static_cast<size_t>(id) >> 6;
    return id >= 0 && word < words_.size() &&
           (words_[word] >> (static_cast<uint32_t>(id) & 63) & 1) != 0;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Forgets every id and frees the bitmap.
  void clear() {
    std::vector<uint64_t>().swap(words_);
    size_ = 0;
  }
  // Calls `f(id)` for every id, in increasing order.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t w = 0; w < words_.size(); ++w) {
      for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1)
        f(static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
    }
  }

 private:
  std::vector<uint64_t> words_;
  size_t size_ = 0;
};

}  // namespace weft

#endif  // WEFT_COMMON_DENSE_ID_SET_H_
