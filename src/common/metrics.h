// Copyright Weft authors. A small registry of Prometheus metrics (counters, gauges,
// histograms) and the text exposition format (version 0.0.4) that `GET /metrics` serves.
#ifndef WEFT_COMMON_METRICS_H_
#define WEFT_COMMON_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace weft::metrics {

// Label pairs of one series, in the order given (names must be valid Prometheus label names,
// values any UTF-8 text; the text format escapes them).
using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing value. Thread-safe, lock-free.
class Counter {
 public:
  // `delta` must be >= 0 (negative deltas are ignored: a counter never goes down).
  void Increment(double delta = 1);
  // Raises the value to `total` if that is larger: mirrors a counter kept elsewhere (e.g. the
  // kernel's byte counters) without ever going down.
  void IncrementTo(double total);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down. Thread-safe, lock-free.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into cumulative buckets by upper bound, plus their sum and count.
// Thread-safe (a short lock per observation).
class Histogram {
 public:
  // `bounds` are the buckets' upper bounds, strictly increasing; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);

  struct Data {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket (not cumulative); size bounds + 1 (+Inf last)
    double sum = 0;
    uint64_t count = 0;
  };
  Data data() const;

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Bucket bounds for durations in seconds, 100 us to 10 s.
std::vector<double> LatencyBuckets();

// Writes the text exposition format: one family (HELP and TYPE lines, then its samples) at a
// time. Families must not repeat within one output; Registry and every collector that appends
// to its output share one namespace.
class TextWriter {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  // Starts a family. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* (CHECKed: names are code).
  void Family(absl::string_view name, absl::string_view help, Type type);
  // One sample line `name{labels} value`; `name` is the family's or, for histograms, its
  // _bucket/_sum/_count series.
  void Sample(absl::string_view name, const Labels& labels, double value);
  void Histogram(absl::string_view name, const Labels& labels, const Histogram::Data& data);
  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// A number as the text format writes it: integers exactly (below 2^53), others with 17
// significant digits, NaN and +Inf/-Inf by name.
std::string FormatValue(double value);

// Owns metric families by name, each with series by label set. Get* returns the series,
// creating it on first use; pointers stay valid for the registry's life (until Remove).
// Asking for an existing name with another type or label names is a programming error
// (CHECK). Thread-safe.
class Registry {
 public:
  Counter* GetCounter(absl::string_view name, absl::string_view help, const Labels& labels = {});
  Gauge* GetGauge(absl::string_view name, absl::string_view help, const Labels& labels = {});
  Histogram* GetHistogram(absl::string_view name, absl::string_view help,
                          const std::vector<double>& bounds, const Labels& labels = {});
  // Drops one series (e.g. a finished container's); no-op when absent.
  void Remove(absl::string_view name, const Labels& labels);
  // Every family, sorted by name, series in label order.
  std::string Render() const;
  void RenderTo(TextWriter* out) const;

 private:
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<metrics::Histogram> histogram;
  };
  struct Family {
    std::string help;
    TextWriter::Type type;
    std::vector<std::string> label_names;
    std::map<std::string, Series> series;  // by encoded labels
  };
  Series* GetSeries(absl::string_view name, absl::string_view help, TextWriter::Type type,
                    const Labels& labels) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::metrics

#endif  // WEFT_COMMON_METRICS_H_
