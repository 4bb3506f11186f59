# Workload loaders (traces -> weft::sim::Workload), see sim/workload.h and docs/workloads.md.
weft_library(weft_sim_workload
  SOURCES workload_common.cc workload_swim.cc workload_sls.cc workload_rumen.cc
          workload_alibaba.cc workload_jobs.cc workload_registry.cc workload_placement.cc
  PUBLIC_DEPS weft_common weft_scheduler_core absl::status absl::statusor absl::strings
  PRIVATE_DEPS yaml-cpp nlohmann_json::nlohmann_json)

# One test program for all loaders. The tests read the real traces under data/traces/ and the
# fixtures under src/sim/testdata/ (from $WEFT_SOURCE_DIR, or this source tree when unset).
weft_test(workload_test
  SOURCES workload_common_test.cc workload_swim_test.cc workload_sls_test.cc
          workload_rumen_test.cc workload_alibaba_test.cc workload_jobs_test.cc
          workload_fuzz_test.cc workload_registry_test.cc
  DEPS weft_sim_workload nlohmann_json::nlohmann_json)
target_compile_definitions(workload_test PRIVATE WEFT_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# Each loader's test file has its own Trace(), Fixture() and WriteTemp() helpers: compiled file
# by file even in a unity build (WEFT_UNITY).
set_target_properties(workload_test PROPERTIES UNITY_BUILD OFF)
