#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "prometheus/check_names.h"
#include "prometheus/client_metric.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "common/errors.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace weft::metrics {
namespace {

bool ValidMetricName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || (allow_colon && c == ':') ||
                    (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

// Our rules and prometheus-cpp's (which also reserves names starting with "__"): checked here
// so that a bad name aborts with its name instead of an exception from prometheus-cpp.
void CheckMetricName(absl::string_view name) {
  CheckOrDie(ValidMetricName(name, true) && prometheus::CheckMetricName(std::string(name)), name);
}
void CheckLabelName(absl::string_view name) {
  CheckOrDie(ValidMetricName(name, false) && prometheus::CheckLabelName(std::string(name)), name);
}

// HELP text escapes backslash and newline; label values also escape the double quote.
// prometheus-cpp 1.0's TextSerializer escapes label values but writes HELP as given, so HELP
// is escaped before it reaches a MetricFamily.
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

prometheus::MetricType PrometheusType(TextWriter::Type t) {
  switch (t) {
    case TextWriter::Type::kCounter:
      return prometheus::MetricType::Counter;
    case TextWriter::Type::kGauge:
      return prometheus::MetricType::Gauge;
    case TextWriter::Type::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

// The registry's key of a label set: values joined by a separator that cannot appear in a
// label name (the names are fixed per family).
std::string Key(const Labels& labels) {
  std::string key;
  for (const auto& [name, value] : labels) absl::StrAppend(&key, name, "\x01", value, "\x02");
  return key;
}

std::vector<prometheus::ClientMetric::Label> ToClientLabels(const Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) {
    CheckLabelName(name);
    out.push_back({name, value});
  }
  return out;
}

// One series line `name{labels[,le="bound"]} value` in the exposition format.
void WriteSample(std::ostream& out, absl::string_view name,
                 const std::vector<prometheus::ClientMetric::Label>& labels, const char* le,
                 absl::string_view value) {
  out << name;
  if (!labels.empty() || le != nullptr) {
    const char* separator = "";
    out << '{';
    for (const auto& label : labels) {
      out << separator << label.name << "=\"" << Escape(label.value, true) << '"';
      separator = ",";
    }
    if (le != nullptr) out << separator << "le=\"" << le << '"';
    out << '}';
  }
  out << ' ' << value << '\n';
}

// A histogram family as Weft has always written it: per series its buckets, then _sum, then
// _count, values as FormatValue writes them. prometheus-cpp 1.0's TextSerializer writes _count
// and _sum before the buckets and 16 significant digits (8.05 becomes 8.050000000000001);
// both are valid exposition, but metrics_test's exact text pins this one.
void WriteHistogramFamily(std::ostream& out, const prometheus::MetricFamily& family) {
  if (!family.help.empty()) out << "# HELP " << family.name << ' ' << family.help << '\n';
  out << "# TYPE " << family.name << " histogram\n";
  const std::string bucket = absl::StrCat(family.name, "_bucket");
  const std::string sum = absl::StrCat(family.name, "_sum");
  const std::string count = absl::StrCat(family.name, "_count");
  for (const prometheus::ClientMetric& m : family.metric) {
    bool wrote_inf = false;
    for (const prometheus::ClientMetric::Bucket& b : m.histogram.bucket) {
      wrote_inf = std::isinf(b.upper_bound) && b.upper_bound > 0;
      WriteSample(out, bucket, m.label, wrote_inf ? "+Inf" : FormatValue(b.upper_bound).c_str(),
                  absl::StrCat(b.cumulative_count));
    }
    if (!wrote_inf) WriteSample(out, bucket, m.label, "+Inf", absl::StrCat(m.histogram.sample_count));
    WriteSample(out, sum, m.label, nullptr, FormatValue(m.histogram.sample_sum));
    WriteSample(out, count, m.label, nullptr, absl::StrCat(m.histogram.sample_count));
  }
}

// The exposition text of `families`, in their order: counters and gauges through
// prometheus::TextSerializer, histograms through WriteHistogramFamily.
std::string Serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  const prometheus::TextSerializer serializer;
  for (const prometheus::MetricFamily& family : families) {
    if (family.type == prometheus::MetricType::Histogram) {
      WriteHistogramFamily(out, family);
    } else {
      serializer.Serialize(out, {family});
    }
  }
  return out.str();
}

// A prometheus-cpp Family's output with each series' labels back in the order the caller gave
// them (prometheus-cpp keeps them in a std::map, sorted by name) and the series sorted by
// label values.
void RestoreLabelOrder(const std::vector<std::string>& names, prometheus::MetricFamily* family) {
  for (prometheus::ClientMetric& m : family->metric) {
    std::vector<prometheus::ClientMetric::Label> ordered;
    ordered.reserve(m.label.size());
    for (const std::string& name : names) {
      auto it = std::find_if(m.label.begin(), m.label.end(),
                             [&](const prometheus::ClientMetric::Label& l) { return l.name == name; });
      if (it != m.label.end()) ordered.push_back(std::move(*it));
    }
    m.label = std::move(ordered);
  }
  std::sort(family->metric.begin(), family->metric.end(),
            [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
              return std::lexicographical_compare(
                  a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
                  [](const auto& x, const auto& y) { return x.value < y.value; });
            });
}

template <typename T>
void CollectFamily(const prometheus::Family<T>* source, const std::vector<std::string>& names,
                   prometheus::MetricFamily* family) {
  if (source == nullptr) return;
  for (prometheus::MetricFamily& collected : source->Collect()) {
    for (prometheus::ClientMetric& m : collected.metric) family->metric.push_back(std::move(m));
  }
  RestoreLabelOrder(names, family);
}

}  // namespace

// --- Counter, Gauge, Histogram ---------------------------------------------------------------

void Counter::Increment(double delta) {
  if (!(delta >= 0)) return;
  counter_->Increment(delta);
}

void Counter::IncrementTo(double total) {
  absl::MutexLock l(&mirror_mu_);
  const double now = counter_->Value();
  if (total > now) counter_->Increment(total - now);
}

double Counter::value() const { return counter_->Value(); }

void Gauge::Set(double value) { gauge_->Set(value); }
void Gauge::Add(double delta) { gauge_->Increment(delta); }
double Gauge::value() const { return gauge_->Value(); }

void Histogram::Observe(double value) { histogram_->Observe(value); }

Histogram::Data Histogram::data() const {
  const prometheus::ClientMetric m = histogram_->Collect();
  Data d;
  uint64_t below = 0;
  for (size_t i = 0; i < m.histogram.bucket.size(); ++i) {
    const prometheus::ClientMetric::Bucket& b = m.histogram.bucket[i];
    if (i + 1 < m.histogram.bucket.size()) d.bounds.push_back(b.upper_bound);  // last is +Inf
    d.counts.push_back(b.cumulative_count - below);
    below = b.cumulative_count;
  }
  d.sum = m.histogram.sample_sum;
  d.count = m.histogram.sample_count;
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

// --- TextWriter ------------------------------------------------------------------------------

struct TextWriter::State {
  std::vector<prometheus::MetricFamily> families;
  std::string text;  // text()'s last answer
};

TextWriter::TextWriter() : state_(std::make_unique<State>()) {}
TextWriter::~TextWriter() = default;
TextWriter::TextWriter(TextWriter&&) noexcept = default;
TextWriter& TextWriter::operator=(TextWriter&&) noexcept = default;

void TextWriter::Family(absl::string_view name, absl::string_view help, Type type) {
  CheckMetricName(name);
  prometheus::MetricFamily family;
  family.name = std::string(name);
  family.help = Escape(help, false);
  family.type = PrometheusType(type);
  state_->families.push_back(std::move(family));
}

void TextWriter::Sample(absl::string_view name, const Labels& labels, double value) {
  CheckOrDie(!state_->families.empty() && state_->families.back().name == name &&
                 state_->families.back().type != prometheus::MetricType::Histogram,
             absl::StrCat(name, ": a sample outside its counter or gauge family"));
  prometheus::MetricFamily& family = state_->families.back();
  prometheus::ClientMetric m;
  m.label = ToClientLabels(labels);
  if (family.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  family.metric.push_back(std::move(m));
}

void TextWriter::Histogram(absl::string_view name, const Labels& labels,
                           const Histogram::Data& data) {
  CheckOrDie(!state_->families.empty() && state_->families.back().name == name &&
                 state_->families.back().type == prometheus::MetricType::Histogram,
             absl::StrCat(name, ": a histogram outside its histogram family"));
  prometheus::ClientMetric m;
  m.label = ToClientLabels(labels);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < data.counts.size(); ++i) {
    cumulative += data.counts[i];
    m.histogram.bucket.push_back(
        {cumulative,
         i < data.bounds.size() ? data.bounds[i] : std::numeric_limits<double>::infinity()});
  }
  m.histogram.sample_sum = data.sum;
  m.histogram.sample_count = data.count;
  state_->families.back().metric.push_back(std::move(m));
}

const std::string& TextWriter::text() const {
  state_->text = Serialize(state_->families);
  return state_->text;
}

std::string TextWriter::Take() {
  std::string text = Serialize(state_->families);
  state_->families.clear();
  state_->text.clear();
  return text;
}

// --- Registry --------------------------------------------------------------------------------

Registry::Registry() : registry_(std::make_unique<prometheus::Registry>()) {}
Registry::~Registry() = default;

Registry::Family* Registry::GetFamily(absl::string_view name, absl::string_view help,
                                      TextWriter::Type type, const Labels& labels) {
  CheckMetricName(name);
  std::vector<std::string> label_names;
  for (const auto& [label, value] : labels) {
    CheckLabelName(label);
    CheckOrDie(label != "le", "label name le is reserved for histogram buckets");
    label_names.push_back(label);
  }
  CheckOrDie(std::set<std::string>(label_names.begin(), label_names.end()).size() ==
                 label_names.size(),
             absl::StrCat(name, ": a label name given twice"));
  auto it = families_.find(name);
  if (it == families_.end()) {
    Family f;
    f.help = Escape(help, false);
    f.type = type;
    f.label_names = label_names;
    const std::string n(name);
    const std::string& h = f.help;
    switch (type) {
      case TextWriter::Type::kCounter:
        f.counters = &prometheus::BuildCounter().Name(n).Help(h).Register(*registry_);
        break;
      case TextWriter::Type::kGauge:
        f.gauges = &prometheus::BuildGauge().Name(n).Help(h).Register(*registry_);
        break;
      case TextWriter::Type::kHistogram:
        f.histograms = &prometheus::BuildHistogram().Name(n).Help(h).Register(*registry_);
        break;
    }
    it = families_.emplace(n, std::move(f)).first;
  }
  Family& f = it->second;
  CheckOrDie(f.type == type && f.label_names == label_names,
             absl::StrCat(name, ": registered again with another type or label names"));
  return &f;
}

Counter* Registry::GetCounter(absl::string_view name, absl::string_view help,
                              const Labels& labels) {
  absl::MutexLock l(&mu_);
  Family* f = GetFamily(name, help, TextWriter::Type::kCounter, labels);
  Series& s = f->series[Key(labels)];
  if (!s.counter) {
    s.counter.reset(new Counter(&f->counters->Add(prometheus::Labels(labels.begin(), labels.end()))));
  }
  return s.counter.get();
}

Gauge* Registry::GetGauge(absl::string_view name, absl::string_view help, const Labels& labels) {
  absl::MutexLock l(&mu_);
  Family* f = GetFamily(name, help, TextWriter::Type::kGauge, labels);
  Series& s = f->series[Key(labels)];
  if (!s.gauge) {
    s.gauge.reset(new Gauge(&f->gauges->Add(prometheus::Labels(labels.begin(), labels.end()))));
  }
  return s.gauge.get();
}

Histogram* Registry::GetHistogram(absl::string_view name, absl::string_view help,
                                  const std::vector<double>& bounds, const Labels& labels) {
  absl::MutexLock l(&mu_);
  Family* f = GetFamily(name, help, TextWriter::Type::kHistogram, labels);
  Series& s = f->series[Key(labels)];
  if (!s.histogram) {
    for (size_t i = 1; i < bounds.size(); ++i)
      CheckOrDie(bounds[i - 1] < bounds[i], "histogram bounds must increase strictly");
    prometheus::Histogram& h = f->histograms->Add(prometheus::Labels(labels.begin(), labels.end()),
                                                  prometheus::Histogram::BucketBoundaries(bounds));
    s.histogram.reset(new metrics::Histogram(&h));
  }
  return s.histogram.get();
}

void Registry::Remove(absl::string_view name, const Labels& labels) {
  absl::MutexLock l(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  Family& f = it->second;
  auto s = f.series.find(Key(labels));
  if (s == f.series.end()) return;
  if (s->second.counter) f.counters->Remove(s->second.counter->counter_);
  if (s->second.gauge) f.gauges->Remove(s->second.gauge->gauge_);
  if (s->second.histogram) f.histograms->Remove(s->second.histogram->histogram_);
  f.series.erase(s);
}

void Registry::RenderTo(TextWriter* out) const {
  absl::MutexLock l(&mu_);
  for (const auto& [name, f] : families_) {
    // Each family through its prometheus::Family (a prometheus::Collectable); one with no
    // series left still gets its HELP and TYPE lines, as before.
    prometheus::MetricFamily family;
    family.name = name;
    family.help = f.help;
    family.type = PrometheusType(f.type);
    CollectFamily(f.counters, f.label_names, &family);
    CollectFamily(f.gauges, f.label_names, &family);
    CollectFamily(f.histograms, f.label_names, &family);
    out->state_->families.push_back(std::move(family));
  }
}

std::string Registry::Render() const {
  TextWriter w;
  RenderTo(&w);
  return w.Take();
}

}  // namespace weft::metrics
