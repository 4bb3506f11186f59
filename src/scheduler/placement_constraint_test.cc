// Tests of placement constraints as data: the distributed shell spec parser, validation and the
// text form.
#include "scheduler/placement_constraint.h"

#include "gtest/gtest.h"

namespace weft::scheduler {
namespace {

TEST(PlacementSpecTest, ParsesYarnsDocumentedExample) {
  // The example of YARN's PlacementConstraints documentation.
  auto spec = ParsePlacementSpec("zk=3,NOTIN,NODE,zk:hbase=5,IN,RACK,zk:spark=7,CARDINALITY,NODE,hbase,1,3");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->size(), 3u);
  EXPECT_EQ((*spec)[0].source_tag, "zk");
  EXPECT_EQ((*spec)[0].num_containers, 3);
  EXPECT_EQ((*spec)[0].constraint, PlacementConstraint::NotIn(ConstraintScope::kNode, "zk"));
  EXPECT_EQ((*spec)[1].constraint, PlacementConstraint::In(ConstraintScope::kRack, "zk"));
  EXPECT_EQ((*spec)[2].constraint,
            PlacementConstraint::Cardinality(ConstraintScope::kNode, "hbase", 1, 3));
  EXPECT_FALSE((*spec)[0].soft);
}

TEST(PlacementSpecTest, ParsesCompositesAttributesNamespacesAndSoft) {
  auto spec = ParsePlacementSpec(
      "w=4,SOFT(AND(notin,node,w:IN,ATTRIBUTE/zone,all/db:os=linux:OR(java!=7:app-id/12/x=1)))");
  // "app-id/12/x=1" is an attribute expression whose name has slashes (YARN's prefixed names).
  ASSERT_TRUE(spec.ok()) << spec.status();
  const PlacementSpec& p = (*spec)[0];
  EXPECT_TRUE(p.soft);
  ASSERT_EQ(p.constraint.kind, PlacementConstraint::Kind::kAnd);
  ASSERT_EQ(p.constraint.children.size(), 4u);
  EXPECT_EQ(p.constraint.children[0], PlacementConstraint::NotIn(ConstraintScope::kNode, "w"));
  const PlacementConstraint& zone = p.constraint.children[1];
  EXPECT_EQ(zone.scope, ConstraintScope::kAttribute);
  EXPECT_EQ(zone.scope_attribute, "zone");
  EXPECT_EQ(zone.ns, TagNamespace::kAll);
  EXPECT_EQ(p.constraint.children[2], PlacementConstraint::AttributeIs("os", "linux"));
  const PlacementConstraint& either = p.constraint.children[3];
  ASSERT_EQ(either.kind, PlacementConstraint::Kind::kOr);
  EXPECT_EQ(either.children[0], PlacementConstraint::AttributeIs("java", "7", false));

  auto app = ParseConstraint("NOTIN,NODE,app-id/42/hbase");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->ns, TagNamespace::kAppId);
  EXPECT_EQ(app->ns_app, 42u);
  EXPECT_EQ(app->tags, std::vector<std::string>{"hbase"});
}

TEST(PlacementSpecTest, TextFormRoundTrips) {
  for (const char* text :
       {"NOTIN,NODE,zk", "IN,RACK,all/hbase", "CARDINALITY,NODE,not-self/x,0,2",
        "AND(IN,RACK,zk:NOTIN,NODE,zk)", "OR(python=3:java!=8)", "IN,ATTRIBUTE/zone,db",
        "NOTIN,NODE,app-id/7/db"}) {
    auto c = ParseConstraint(text);
    ASSERT_TRUE(c.ok()) << text << ": " << c.status();
    EXPECT_EQ(DescribeConstraint(*c), text);
    auto again = ParseConstraint(DescribeConstraint(*c));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *c);
  }
}

TEST(PlacementSpecTest, BadInputNamesWhatIsWrong) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "empty placement spec"},
           {"zk", "<source tag>=<containers>"},
           {"zk=0", "not a positive integer"},
           {"zk=x", "not a positive integer"},
           {"zk=2,IN,NODE", "takes scope,tag"},
           {"zk=2,IN,SWITCH,zk", "scope 'SWITCH'"},
           {"zk=2,CARDINALITY,NODE,zk,3,1", "0 <= min <= max"},
           {"zk=2,CARDINALITY,NODE,zk,a,1", "not integers"},
           {"zk=2,AND(IN,NODE,zk", "unbalanced"},
           {"zk=2,AND()", "empty constraint"},
           {"zk=2,NEAR,NODE,zk", "is not IN, NOTIN"},
           {"zk=2,IN,NODE,bad tag!", "tag 'bad tag!'"},
           {"zk=2,IN,NODE,app-id/x/zk", "not an application number"},
           {"zk=1:zk=2", "given twice"},
           {"z k=1", "source tag 'z k'"},
       }) {
    auto spec = ParsePlacementSpec(c.spec);
    ASSERT_FALSE(spec.ok()) << c.spec;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(spec.status().message().find(c.says), std::string::npos)
        << c.spec << " -> " << spec.status();
  }
}

TEST(PlacementSpecTest, ValidationRejectsMalformedTrees) {
  PlacementConstraint empty_and = PlacementConstraint::And({});
  EXPECT_FALSE(ValidateConstraint(empty_and).ok());
  PlacementConstraint deep = PlacementConstraint::NotIn(ConstraintScope::kNode, "x");
  for (int i = 0; i < 10; ++i) deep = PlacementConstraint::And({deep});
  EXPECT_NE(ValidateConstraint(deep).message().find("deeper"), std::string::npos);
  PlacementConstraint no_app = PlacementConstraint::NotIn(ConstraintScope::kNode, "x",
                                                          TagNamespace::kAppId);
  EXPECT_FALSE(ValidateConstraint(no_app).ok());
  EXPECT_TRUE(ValidateConstraint(PlacementConstraint::AttributeIs("os", "linux")).ok());
  EXPECT_FALSE(ValidateConstraint(PlacementConstraint::AttributeIs("os", "")).ok());
}

}  // namespace
}  // namespace weft::scheduler
