// Copyright Weft authors.
#include "sim/workload_registry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(WorkloadFormatRegistryTest, BuiltinFormatsAreAllThere) {
  EXPECT_THAT(BuiltinWorkloadFormats().Names(),
              ElementsAre("swim", "sls", "rumen", "alibaba2017", "jobs"));
}

TEST(WorkloadFormatRegistryTest, SpecErrorsNameTheProblemAndTheKnownFormats) {
  ResourceTypeRegistry reg;
  const WorkloadFormatRegistry& r = BuiltinWorkloadFormats();
  absl::Status s = r.Load("nocolon", {}, reg, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("must be FORMAT:PATH with FORMAT one of swim, sls"));
  s = r.Load("csv:x", {}, reg, {}).status();
  EXPECT_THAT(s.message(), HasSubstr("unknown format 'csv' (known: swim, sls, rumen"));
  // A known format reaches its loader, which names the file.
  s = r.Load("jobs:/nonexistent/w.yaml", {}, reg, {}).status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/w.yaml"));
}

TEST(WorkloadFormatRegistryTest, RegistrationRefusesDuplicatesAndBadNames) {
  WorkloadFormatRegistry r;
  auto loader = [](absl::string_view, const WorkloadModels&, const ResourceTypeRegistry&,
                   const LoadOptions&) -> absl::StatusOr<Workload> {
    Workload w;
    w.jobs.emplace_back();
    return w;
  };
  ASSERT_TRUE(r.Register({"mine", "test", loader}).ok());
  EXPECT_EQ(r.Register({"mine", "again", loader}).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.Register({"a:b", "colon", loader}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Register({"noload", "x", nullptr}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.Names(), ElementsAre("mine"));
  ResourceTypeRegistry reg;
  auto w = r.Load("mine:anything", {}, reg, {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->jobs.size(), 1u);
}

}  // namespace
}  // namespace weft::sim
