// Copyright Weft authors. Prometheus metrics (counters, gauges, histograms) and the text
// exposition format (version 0.0.4) that `GET /metrics` serves: a thin facade over
// prometheus-cpp. The series live in a prometheus::Registry, every output is a list of
// prometheus::MetricFamily, and the text comes from prometheus::TextSerializer (histogram
// families excepted, see Serialize in metrics.cc). prometheus-cpp stays out of this header so
// that callers need not link it.
#ifndef WEFT_COMMON_METRICS_H_
#define WEFT_COMMON_METRICS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace weft::metrics {

// Label pairs of one series, in the order given (names must be valid Prometheus label names,
// values any UTF-8 text; the text format escapes them). The output keeps this order.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Registry;

// A monotonically increasing value (a prometheus::Counter). Thread-safe; Increment is
// lock-free.
class Counter {
 public:
  // `delta` must be >= 0 (negative deltas and NaN are ignored: a counter never goes down).
  void Increment(double delta = 1);
  // Raises the value to `total` if that is larger: mirrors a counter kept elsewhere (e.g. the
  // kernel's byte counters) without ever going down. Concurrent IncrementTo calls are
  // serialized; mixing them with concurrent Increment calls on one series is not meaningful.
  void IncrementTo(double total);
  double value() const;

 private:
  friend class Registry;
  explicit Counter(prometheus::Counter* counter) : counter_(counter) {}

  prometheus::Counter* const counter_;  // owned by the registry's family
  absl::Mutex mirror_mu_;               // serializes IncrementTo
};

// A value that goes up and down (a prometheus::Gauge). Thread-safe, lock-free.
class Gauge {
 public:
  void Set(double value);
  void Add(double delta);
  double value() const;

 private:
  friend class Registry;
  explicit Gauge(prometheus::Gauge* gauge) : gauge_(gauge) {}

  prometheus::Gauge* const gauge_;  // owned by the registry's family
};

// Observations counted into cumulative buckets by upper bound (inclusive), plus their sum and
// count (a prometheus::Histogram). Thread-safe (a short lock per observation).
class Histogram {
 public:
  void Observe(double value);

  struct Data {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket (not cumulative); size bounds + 1 (+Inf last)
    double sum = 0;
    uint64_t count = 0;
  };
  Data data() const;

 private:
  friend class Registry;
  explicit Histogram(prometheus::Histogram* histogram) : histogram_(histogram) {}

  prometheus::Histogram* const histogram_;  // owned by the registry's family
};

// Bucket bounds for durations in seconds, 100 us to 10 s.
std::vector<double> LatencyBuckets();

// Builds one exposition: families (HELP and TYPE, then their samples) are collected as
// prometheus::MetricFamily and serialized when the text is asked for. Families must not
// repeat within one output; Registry and every collector that appends to its output share one
// namespace. Not thread-safe (one writer per request).
class TextWriter {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  TextWriter();
  ~TextWriter();
  TextWriter(TextWriter&&) noexcept;
  TextWriter& operator=(TextWriter&&) noexcept;

  // Starts a family. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* (CHECKed: names are code).
  void Family(absl::string_view name, absl::string_view help, Type type);
  // One series `name{labels} value` of the current counter or gauge family; `name` must be the
  // family's (CHECKed).
  void Sample(absl::string_view name, const Labels& labels, double value);
  // One series of the current histogram family (its _bucket, _sum and _count lines); `name`
  // must be the family's (CHECKed).
  void Histogram(absl::string_view name, const Labels& labels, const Histogram::Data& data);
  // The text of everything written so far; valid until the next call on this writer.
  const std::string& text() const;
  // The text; leaves the writer empty.
  std::string Take();

 private:
  friend class Registry;
  struct State;  // the families, as prometheus::MetricFamily
  std::unique_ptr<State> state_;
};

// A number as Weft writes it where prometheus-cpp does not (histogram families' bounds, sums
// and counts): integers exactly (below 2^53), others with the fewest of 15 to 17 significant
// digits that read back as the same double, NaN and +Inf/-Inf by name.
std::string FormatValue(double value);

// Owns metric families by name (prometheus::Family in a prometheus::Registry), each with
// series by label set. Get* returns the series, creating it on first use; pointers stay valid
// for the registry's life (until Remove). Asking for an existing name with another type or
// label names is a programming error (CHECK). Thread-safe.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Counter* GetCounter(absl::string_view name, absl::string_view help, const Labels& labels = {});
  Gauge* GetGauge(absl::string_view name, absl::string_view help, const Labels& labels = {});
  // `bounds` must increase strictly (CHECKed); a series keeps the bounds it was created with.
  Histogram* GetHistogram(absl::string_view name, absl::string_view help,
                          const std::vector<double>& bounds, const Labels& labels = {});
  // Drops one series (e.g. a finished container's); no-op when absent.
  void Remove(absl::string_view name, const Labels& labels);
  // Every family, sorted by name, series sorted by label values (labels in the order given).
  std::string Render() const;
  void RenderTo(TextWriter* out) const;

 private:
  struct Series {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<metrics::Histogram> histogram;
  };
  struct Family {
    std::string help;  // escaped for the text format
    TextWriter::Type type;
    std::vector<std::string> label_names;  // in the order callers give them
    prometheus::Family<prometheus::Counter>* counters = nullptr;  // the one matching `type`
    prometheus::Family<prometheus::Gauge>* gauges = nullptr;
    prometheus::Family<prometheus::Histogram>* histograms = nullptr;
    std::map<std::string, Series> series;  // by encoded labels
  };
  Family* GetFamily(absl::string_view name, absl::string_view help, TextWriter::Type type,
                    const Labels& labels) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  const std::unique_ptr<prometheus::Registry> registry_;
  std::map<std::string, Family, std::less<>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::metrics

#endif  // WEFT_COMMON_METRICS_H_
