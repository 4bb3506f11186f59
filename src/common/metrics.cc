#include "common/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::metrics {
namespace {

void CheckOrDie(bool condition, absl::string_view message) {
  if (!condition) {
    std::fprintf(stderr, "weft/common/metrics: check failed: %.*s\n",
                 static_cast<int>(message.size()), message.data());
    std::abort();
  }
}

bool ValidName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || (allow_colon && c == ':') ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes backslash and newline; label values also escape the double quote.
std::string Escape(absl::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

const char* TypeName(TextWriter::Type t) {
  switch (t) {
    case TextWriter::Type::kCounter:
      return "counter";
    case TextWriter::Type::kGauge:
      return "gauge";
    case TextWriter::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void AtomicAdd(std::atomic<double>* a, double delta) {
  double old = a->load(std::memory_order_relaxed);
  while (!a->compare_exchange_weak(old, old + delta, std::memory_order_relaxed)) {
  }
}

// The registry's key of a label set: values joined by a separator that cannot appear in a
// label name (the names are fixed per family).
std::string Key(const Labels& labels) {
  std::string key;
  for (const auto& [name, value] : labels) absl::StrAppend(&key, name, "\x01", value, "\x02");
  return key;
}

}  // namespace

void Counter::Increment(double delta) {
  if (!(delta >= 0)) return;
  AtomicAdd(&value_, delta);
}

void Counter::IncrementTo(double total) {
  double old = value_.load(std::memory_order_relaxed);
  while (total > old && !value_.compare_exchange_weak(old, total, std::memory_order_relaxed)) {
  }
}

void Gauge::Add(double delta) { AtomicAdd(&value_, delta); }

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  for (size_t i = 1; i < bounds_.size(); ++i)
    CheckOrDie(bounds_[i - 1] < bounds_[i], "histogram bounds must increase strictly");
  absl::MutexLock l(&mu_);
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  absl::MutexLock l(&mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

Histogram::Data Histogram::data() const {
  Data d;
  d.bounds = bounds_;
  absl::MutexLock l(&mu_);
  d.counts = counts_;
  d.sum = sum_;
  d.count = count_;
  return d;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)
    return absl::StrCat(static_cast<int64_t>(v));
  // The shortest of 15 to 17 significant digits that reads back as the same double.
  for (int digits = 15; digits < 17; ++digits) {
    std::string text = absl::StrFormat("%.*g", digits, v);
    if (std::strtod(text.c_str(), nullptr) == v) return text;
  }
  return absl::StrFormat("%.17g", v);
}

void TextWriter::Family(absl::string_view name, absl::string_view help, Type type) {
  CheckOrDie(ValidName(name, true), name);
  absl::StrAppend(&out_, "# HELP ", name, " ", Escape(help, false), "\n# TYPE ", name, " ",
                  TypeName(type), "\n");
}

void TextWriter::Sample(absl::string_view name, const Labels& labels, double value) {
  out_.append(name.data(), name.size());
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      CheckOrDie(ValidName(labels[i].first, false), labels[i].first);
      absl::StrAppend(&out_, i > 0 ? "," : "", labels[i].first, "=\"",
                      Escape(labels[i].second, true), "\"");
    }
    out_ += '}';
  }
  absl::StrAppend(&out_, " ", FormatValue(value), "\n");
}

void TextWriter::Histogram(absl::string_view name, const Labels& labels,
                           const Histogram::Data& data) {
  const std::string bucket = absl::StrCat(name, "_bucket");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < data.counts.size(); ++i) {
    cumulative += data.counts[i];
    Labels with_le = labels;
    with_le.emplace_back("le", i < data.bounds.size() ? FormatValue(data.bounds[i]) : "+Inf");
    Sample(bucket, with_le, static_cast<double>(cumulative));
  }
  Sample(absl::StrCat(name, "_sum"), labels, data.sum);
  Sample(absl::StrCat(name, "_count"), labels, static_cast<double>(data.count));
}

Registry::Series* Registry::GetSeries(absl::string_view name, absl::string_view help,
                                      TextWriter::Type type, const Labels& labels) {
  CheckOrDie(ValidName(name, true), name);
  std::vector<std::string> label_names;
  for (const auto& [label, value] : labels) {
    CheckOrDie(ValidName(label, false) && label != "le", label);
    label_names.push_back(label);
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    Family f;
    f.help = std::string(help);
    f.type = type;
    f.label_names = label_names;
    it = families_.emplace(std::string(name), std::move(f)).first;
  }
  Family& f = it->second;
  CheckOrDie(f.type == type && f.label_names == label_names,
             absl::StrCat(name, ": registered again with another type or label names"));
  Series& s = f.series[Key(labels)];
  s.labels = labels;
  return &s;
}

Counter* Registry::GetCounter(absl::string_view name, absl::string_view help,
                              const Labels& labels) {
  absl::MutexLock l(&mu_);
  Series* s = GetSeries(name, help, TextWriter::Type::kCounter, labels);
  if (!s->counter) s->counter = std::make_unique<Counter>();
  return s->counter.get();
}

Gauge* Registry::GetGauge(absl::string_view name, absl::string_view help, const Labels& labels) {
  absl::MutexLock l(&mu_);
  Series* s = GetSeries(name, help, TextWriter::Type::kGauge, labels);
  if (!s->gauge) s->gauge = std::make_unique<Gauge>();
  return s->gauge.get();
}

Histogram* Registry::GetHistogram(absl::string_view name, absl::string_view help,
                                  const std::vector<double>& bounds, const Labels& labels) {
  absl::MutexLock l(&mu_);
  Series* s = GetSeries(name, help, TextWriter::Type::kHistogram, labels);
  if (!s->histogram) s->histogram = std::make_unique<metrics::Histogram>(bounds);
  return s->histogram.get();
}

void Registry::Remove(absl::string_view name, const Labels& labels) {
  absl::MutexLock l(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  it->second.series.erase(Key(labels));
}

void Registry::RenderTo(TextWriter* out) const {
  absl::MutexLock l(&mu_);
  for (const auto& [name, f] : families_) {
    out->Family(name, f.help, f.type);
    for (const auto& [key, s] : f.series) {
      if (s.counter) out->Sample(name, s.labels, s.counter->value());
      if (s.gauge) out->Sample(name, s.labels, s.gauge->value());
      if (s.histogram) out->Histogram(name, s.labels, s.histogram->data());
    }
  }
}

std::string Registry::Render() const {
  TextWriter w;
  RenderTo(&w);
  return w.Take();
}

}  // namespace weft::metrics
