// Copyright Weft authors. Allocation tags and placement constraints (seed 001's "soft/hard
// constraints to express arbitrary co-location or disjoint placement"; YARN 3's
// PlacementConstraint), as data, with their validation, text form and the distributed shell's
// placement spec parser. Evaluation against the cluster lives in the scheduler core
// (scheduler_placement.cc), which keeps the tag counts.
#ifndef WEFT_SCHEDULER_PLACEMENT_CONSTRAINT_H_
#define WEFT_SCHEDULER_PLACEMENT_CONSTRAINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::scheduler {

// Where a tag constraint counts containers: on the candidate node, in its rack, or on every
// node that has the same value of a node attribute as the candidate (YARN's NODE, RACK and
// node-attribute scopes; a candidate without the attribute matches nothing there).
enum class ConstraintScope : uint8_t { kNode, kRack, kAttribute };

// Whose containers a tag constraint counts (YARN's allocation tag namespaces): the asking
// app's (self), every other app's (not-self), every app's (all), or one app's (app-id).
enum class TagNamespace : uint8_t { kSelf, kNotSelf, kAll, kAppId };

inline constexpr int32_t kUnboundedCardinality = INT32_MAX;

// A constraint tree. Leaves:
//  * kTags: for every tag in `tags`, the containers carrying it in `scope` (not counting the
//    one being placed) number between `min` and `max` inclusive. YARN's forms are
//    in(scope, tag) = [1, unbounded], notin(scope, tag) = [0, 0] and cardinality(min, max).
//    With several tags, the least count must reach `min` and the greatest stay within `max`
//    (YARN's reading).
//  * kAttribute: the node's attribute `attribute` has one of `values` (`equal`), or has none
//    of them, or lacks the attribute (!equal). YARN's node attribute expressions (=, !=).
// Inner nodes kAnd / kOr hold at least one child.
struct PlacementConstraint {
  enum class Kind : uint8_t { kTags, kAttribute, kAnd, kOr };
  Kind kind = Kind::kTags;
  // kTags
  ConstraintScope scope = ConstraintScope::kNode;
  std::string scope_attribute;  // the attribute, for ConstraintScope::kAttribute
  TagNamespace ns = TagNamespace::kSelf;
  uint64_t ns_app = 0;  // for TagNamespace::kAppId: the app's id as the scheduler knows it
  std::vector<std::string> tags;
  int32_t min = 0;
  int32_t max = kUnboundedCardinality;
  // kAttribute
  std::string attribute;
  bool equal = true;
  std::vector<std::string> values;
  // kAnd, kOr
  std::vector<PlacementConstraint> children;

  static PlacementConstraint In(ConstraintScope scope, std::string tag,
                                TagNamespace ns = TagNamespace::kSelf);
  static PlacementConstraint NotIn(ConstraintScope scope, std::string tag,
                                   TagNamespace ns = TagNamespace::kSelf);
  static PlacementConstraint Cardinality(ConstraintScope scope, std::string tag, int32_t min,
                                         int32_t max, TagNamespace ns = TagNamespace::kSelf);
  static PlacementConstraint AttributeIs(std::string attribute, std::string value,
                                         bool equal = true);
  static PlacementConstraint And(std::vector<PlacementConstraint> children);
  static PlacementConstraint Or(std::vector<PlacementConstraint> children);

  friend bool operator==(const PlacementConstraint&, const PlacementConstraint&) = default;
};

// Tags are what YARN allows: 1..255 characters of [A-Za-z0-9_.-].
bool ValidAllocationTag(absl::string_view tag);

// Checks a constraint's shape: tags valid and present, 0 <= min <= max, attribute names and
// values non-empty, composites non-empty, depth at most 8. InvalidArgument naming the part.
absl::Status ValidateConstraint(const PlacementConstraint& c);

// The constraint in the placement spec syntax below, e.g. "NOTIN,NODE,zk" or
// "AND(IN,RACK,all/hbase:python!=2)". ParseConstraint(DescribeConstraint(c)) == c.
std::string DescribeConstraint(const PlacementConstraint& c);

// One part of a distributed shell placement spec (YARN's -placement_spec): `num_containers`
// containers tagged `source_tag`, each placed under `constraint` (none when `has_constraint`
// is false), softly when `soft`.
struct PlacementSpec {
  std::string source_tag;
  int32_t num_containers = 0;
  bool has_constraint = false;
  bool soft = false;
  PlacementConstraint constraint;
};

// Parses YARN's distributed shell syntax, with Weft's additions:
//   Spec        := Part (":" Part)*
//   Part        := SourceTag "=" NumContainers ["," Constraint]
//   Constraint  := "SOFT(" Constraint1 ")" | Constraint1        (SOFT only at the top)
//   Constraint1 := "IN," Scope "," Target | "NOTIN," Scope "," Target
//                | "CARDINALITY," Scope "," Target "," Min "," Max
//                | Attribute "=" Value | Attribute "!=" Value
//                | "AND(" Constraint1 (":" Constraint1)* ")" | "OR(" ... ")"
//   Scope       := "NODE" | "RACK" | "ATTRIBUTE/" Attribute
//   Target      := [Namespace "/"] Tag ; Namespace := self | not-self | all | app-id/<number>
// Keywords are case-insensitive ("in,node,zk" works, as in YARN). An empty spec is an error.
// InvalidArgument naming the offending text.
absl::StatusOr<std::vector<PlacementSpec>> ParsePlacementSpec(absl::string_view spec);
// One Constraint (the grammar's Constraint1, no SOFT).
absl::StatusOr<PlacementConstraint> ParseConstraint(absl::string_view text);

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_PLACEMENT_CONSTRAINT_H_
