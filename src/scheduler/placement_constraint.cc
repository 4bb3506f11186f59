// Copyright Weft authors. Placement constraints: validation, text form, spec parser.
#include "scheduler/placement_constraint.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace weft::scheduler {
namespace {

constexpr int kMaxDepth = 8;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("placement constraint: ", what));
}

// 1-255 characters of [A-Za-z0-9_.-], and '/' too when `slash` (prefixed attribute names such
// as YARN's "rm.yarn.io/os").
bool ValidName(absl::string_view s, bool slash) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' &&
        !(slash && c == '/'))
      return false;
  }
  return true;
}

bool ValidAttributeName(absl::string_view s) { return ValidName(s, true); }
bool ValidAttributeValue(absl::string_view s) { return ValidName(s, false); }

absl::Status ValidateAt(const PlacementConstraint& c, int depth) {
  using K = PlacementConstraint::Kind;
  if (depth > kMaxDepth) return Invalid(absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
  switch (c.kind) {
    case K::kTags:
      if (c.tags.empty()) return Invalid("a tag constraint names no tag");
      for (const std::string& t : c.tags) {
        if (!ValidAllocationTag(t))
          return Invalid(absl::StrCat("tag '", t, "' is not 1-255 characters of [A-Za-z0-9_.-]"));
      }
      if (c.min < 0 || c.max < 0 || c.min > c.max)
        return Invalid(absl::StrCat("cardinality [", c.min, ", ", c.max,
                                    "] is not 0 <= min <= max"));
      if (c.scope == ConstraintScope::kAttribute && !ValidAttributeName(c.scope_attribute))
        return Invalid(absl::StrCat("scope attribute '", c.scope_attribute, "' is not a valid name"));
      if (c.ns == TagNamespace::kAppId && c.ns_app == 0)
        return Invalid("namespace app-id names no application");
      return absl::OkStatus();
    case K::kAttribute:
      if (!ValidAttributeName(c.attribute))
        return Invalid(absl::StrCat("node attribute '", c.attribute, "' is not a valid name"));
      if (c.values.empty()) return Invalid(absl::StrCat("node attribute '", c.attribute, "' has no value"));
      for (const std::string& v : c.values) {
        if (!ValidAttributeValue(v))
          return Invalid(absl::StrCat("node attribute '", c.attribute, "' value '", v,
                                      "' is not 1-255 characters of [A-Za-z0-9_.-]"));
      }
      return absl::OkStatus();
    case K::kAnd:
    case K::kOr:
      if (c.children.empty()) return Invalid("AND/OR with no constraint inside");
      for (const PlacementConstraint& child : c.children) {
        if (absl::Status s = ValidateAt(child, depth + 1); !s.ok()) return s;
      }
      return absl::OkStatus();
  }
  return Invalid("unknown kind");
}

std::string ScopeText(const PlacementConstraint& c) {
  switch (c.scope) {
    case ConstraintScope::kNode:
      return "NODE";
    case ConstraintScope::kRack:
      return "RACK";
    case ConstraintScope::kAttribute:
      return absl::StrCat("ATTRIBUTE/", c.scope_attribute);
  }
  return "?";
}

std::string TargetText(const PlacementConstraint& c, const std::string& tag) {
  switch (c.ns) {
    case TagNamespace::kSelf:
      return tag;
    case TagNamespace::kNotSelf:
      return absl::StrCat("not-self/", tag);
    case TagNamespace::kAll:
      return absl::StrCat("all/", tag);
    case TagNamespace::kAppId:
      return absl::StrCat("app-id/", c.ns_app, "/", tag);
  }
  return tag;
}

// Splits at `sep` outside parentheses; an error for unbalanced ones.
absl::StatusOr<std::vector<std::string>> SplitTop(absl::string_view text, char sep) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth < 0) return Invalid(absl::StrCat("unbalanced ')' in '", text, "'"));
    if (text[i] == sep && depth == 0) {
      parts.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return Invalid(absl::StrCat("unbalanced '(' in '", text, "'"));
  parts.emplace_back(text.substr(start));
  return parts;
}

// "FUNC(inner)" -> inner, when text starts with `func` + "(" (case-insensitive) and ends ")".
bool Unwrap(absl::string_view text, absl::string_view func, absl::string_view* inner) {
  if (text.size() < func.size() + 2 || text.back() != ')') return false;
  if (!absl::EqualsIgnoreCase(text.substr(0, func.size()), func) || text[func.size()] != '(')
    return false;
  *inner = text.substr(func.size() + 1, text.size() - func.size() - 2);
  return true;
}

absl::Status ParseTarget(absl::string_view text, PlacementConstraint* c) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  c->ns = TagNamespace::kSelf;
  if (parts.size() == 1) {
    c->tags = {std::string(parts[0])};
  } else if (parts.size() == 2 && (parts[0] == "self" || parts[0] == "not-self" || parts[0] == "all")) {
    c->ns = parts[0] == "self"       ? TagNamespace::kSelf
            : parts[0] == "not-self" ? TagNamespace::kNotSelf
                                     : TagNamespace::kAll;
    c->tags = {std::string(parts[1])};
  } else if (parts.size() == 3 && parts[0] == "app-id") {
    if (!absl::SimpleAtoi(parts[1], &c->ns_app) || c->ns_app == 0)
      return Invalid(absl::StrCat("'", parts[1], "' in '", text, "' is not an application number"));
    c->ns = TagNamespace::kAppId;
    c->tags = {std::string(parts[2])};
  } else {
    return Invalid(absl::StrCat("target '", text,
                                "' is not [self/|not-self/|all/|app-id/<n>/]<tag>"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacementConstraint> ParseAt(absl::string_view text, int depth) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return Invalid("empty constraint");
  if (depth > kMaxDepth) return Invalid(absl::StrCat("nested deeper than ", kMaxDepth, " levels"));
  absl::string_view inner;
  for (auto [func, kind] : {std::pair{"AND", PlacementConstraint::Kind::kAnd},
                            std::pair{"OR", PlacementConstraint::Kind::kOr}}) {
    if (!Unwrap(text, func, &inner)) continue;
    auto parts = SplitTop(inner, ':');
    if (!parts.ok()) return parts.status();
    PlacementConstraint c;
    c.kind = kind;
    for (const std::string& p : *parts) {
      auto child = ParseAt(p, depth + 1);
      if (!child.ok()) return child.status();
      c.children.push_back(*std::move(child));
    }
    return c;
  }
  std::vector<std::string> f = absl::StrSplit(text, ',');
  for (std::string& s : f) s = std::string(absl::StripAsciiWhitespace(s));
  const std::string op = absl::AsciiStrToUpper(f[0]);
  PlacementConstraint c;
  if (op == "IN" || op == "NOTIN" || op == "CARDINALITY") {
    const size_t want = op == "CARDINALITY" ? 5 : 3;
    if (f.size() != want)
      return Invalid(absl::StrCat("'", text, "': ", op, " takes ",
                                  op == "CARDINALITY" ? "scope,tag,min,max" : "scope,tag"));
    const std::string scope = absl::AsciiStrToUpper(f[1]);
    if (scope == "NODE") {
      c.scope = ConstraintScope::kNode;
    } else if (scope == "RACK") {
      c.scope = ConstraintScope::kRack;
    } else if (absl::StartsWith(scope, "ATTRIBUTE/")) {
      c.scope = ConstraintScope::kAttribute;
      c.scope_attribute = f[1].substr(10);
    } else {
      return Invalid(absl::StrCat("'", text, "': scope '", f[1],
                                  "' is not NODE, RACK or ATTRIBUTE/<name>"));
    }
    if (absl::Status s = ParseTarget(f[2], &c); !s.ok()) return s;
    if (op == "IN") {
      c.min = 1;
    } else if (op == "NOTIN") {
      c.max = 0;
    } else {
      if (!absl::SimpleAtoi(f[3], &c.min) || !absl::SimpleAtoi(f[4], &c.max))
        return Invalid(absl::StrCat("'", text, "': cardinality bounds '", f[3], "', '", f[4],
                                    "' are not integers"));
    }
  } else if (f.size() == 1 && f[0].find('=') != std::string::npos) {
    c.kind = PlacementConstraint::Kind::kAttribute;
    size_t eq = f[0].find('=');
    c.equal = !(eq > 0 && f[0][eq - 1] == '!');
    c.attribute = f[0].substr(0, c.equal ? eq : eq - 1);
    c.values = {f[0].substr(eq + 1)};
  } else {
    return Invalid(absl::StrCat("'", text,
                                "' is not IN, NOTIN, CARDINALITY, AND(...), OR(...), "
                                "attribute=value or attribute!=value"));
  }
  if (absl::Status s = ValidateConstraint(c); !s.ok()) return s;
  return c;
}

}  // namespace

PlacementConstraint PlacementConstraint::In(ConstraintScope scope, std::string tag,
                                            TagNamespace ns) {
  return Cardinality(scope, std::move(tag), 1, kUnboundedCardinality, ns);
}
PlacementConstraint PlacementConstraint::NotIn(ConstraintScope scope, std::string tag,
                                               TagNamespace ns) {
  return Cardinality(scope, std::move(tag), 0, 0, ns);
}
PlacementConstraint PlacementConstraint::Cardinality(ConstraintScope scope, std::string tag,
                                                     int32_t min, int32_t max, TagNamespace ns) {
  PlacementConstraint c;
  c.scope = scope;
  c.ns = ns;
  c.tags = {std::move(tag)};
  c.min = min;
  c.max = max;
  return c;
}
PlacementConstraint PlacementConstraint::AttributeIs(std::string attribute, std::string value,
                                                     bool equal) {
  PlacementConstraint c;
  c.kind = Kind::kAttribute;
  c.attribute = std::move(attribute);
  c.values = {std::move(value)};
  c.equal = equal;
  return c;
}
PlacementConstraint PlacementConstraint::And(std::vector<PlacementConstraint> children) {
  PlacementConstraint c;
  c.kind = Kind::kAnd;
  c.children = std::move(children);
  return c;
}
PlacementConstraint PlacementConstraint::Or(std::vector<PlacementConstraint> children) {
  PlacementConstraint c;
  c.kind = Kind::kOr;
  c.children = std::move(children);
  return c;
}

bool ValidAllocationTag(absl::string_view tag) { return ValidName(tag, false); }

absl::Status ValidateConstraint(const PlacementConstraint& c) { return ValidateAt(c, 0); }

std::string DescribeConstraint(const PlacementConstraint& c) {
  using K = PlacementConstraint::Kind;
  switch (c.kind) {
    case K::kTags: {
      // Several tags have no spec form of their own: they read as an AND of one per tag
      // (the same condition, since min and max apply to each tag).
      if (c.tags.size() > 1) {
        std::vector<std::string> parts;
        for (const std::string& t : c.tags) {
          PlacementConstraint one = c;
          one.tags = {t};
          parts.push_back(DescribeConstraint(one));
        }
        return absl::StrCat("AND(", absl::StrJoin(parts, ":"), ")");
      }
      const std::string target = TargetText(c, c.tags.empty() ? "" : c.tags[0]);
      if (c.min == 1 && c.max == kUnboundedCardinality)
        return absl::StrCat("IN,", ScopeText(c), ",", target);
      if (c.min == 0 && c.max == 0) return absl::StrCat("NOTIN,", ScopeText(c), ",", target);
      return absl::StrCat("CARDINALITY,", ScopeText(c), ",", target, ",", c.min, ",", c.max);
    }
    case K::kAttribute: {
      std::vector<std::string> parts;
      for (const std::string& v : c.values)
        parts.push_back(absl::StrCat(c.attribute, c.equal ? "=" : "!=", v));
      if (parts.size() == 1) return parts[0];
      return absl::StrCat(c.equal ? "OR(" : "AND(", absl::StrJoin(parts, ":"), ")");
    }
    case K::kAnd:
    case K::kOr: {
      std::vector<std::string> parts;
      for (const PlacementConstraint& child : c.children) parts.push_back(DescribeConstraint(child));
      return absl::StrCat(c.kind == K::kAnd ? "AND(" : "OR(", absl::StrJoin(parts, ":"), ")");
    }
  }
  return "";
}

absl::StatusOr<PlacementConstraint> ParseConstraint(absl::string_view text) {
  return ParseAt(text, 0);
}

absl::StatusOr<std::vector<PlacementSpec>> ParsePlacementSpec(absl::string_view spec) {
  if (absl::StripAsciiWhitespace(spec).empty()) return Invalid("empty placement spec");
  auto parts = SplitTop(spec, ':');
  if (!parts.ok()) return parts.status();
  std::vector<PlacementSpec> out;
  for (const std::string& part : *parts) {
    PlacementSpec p;
    absl::string_view rest = absl::StripAsciiWhitespace(part);
    size_t eq = rest.find('=');
    size_t comma = rest.find(',');
    if (eq == absl::string_view::npos || (comma != absl::string_view::npos && comma < eq))
      return Invalid(absl::StrCat("'", part, "' does not start with <source tag>=<containers>"));
    p.source_tag = std::string(absl::StripAsciiWhitespace(rest.substr(0, eq)));
    if (!ValidAllocationTag(p.source_tag))
      return Invalid(absl::StrCat("source tag '", p.source_tag,
                                  "' is not 1-255 characters of [A-Za-z0-9_.-]"));
    absl::string_view count = rest.substr(eq + 1, comma == absl::string_view::npos
                                                      ? absl::string_view::npos
                                                      : comma - eq - 1);
    if (!absl::SimpleAtoi(count, &p.num_containers) || p.num_containers <= 0)
      return Invalid(absl::StrCat("'", part, "': container count '", count,
                                  "' is not a positive integer"));
    if (comma != absl::string_view::npos) {
      absl::string_view c = absl::StripAsciiWhitespace(rest.substr(comma + 1));
      absl::string_view inner;
      if (Unwrap(c, "SOFT", &inner)) {
        p.soft = true;
        c = inner;
      }
      auto parsed = ParseAt(c, 0);
      if (!parsed.ok()) return parsed.status();
      p.has_constraint = true;
      p.constraint = *std::move(parsed);
    }
    for (const PlacementSpec& other : out) {
      if (other.source_tag == p.source_tag)
        return Invalid(absl::StrCat("source tag '", p.source_tag, "' is given twice"));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace weft::scheduler
