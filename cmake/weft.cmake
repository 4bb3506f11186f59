# Helpers that declare a library, a test or a benchmark in one line.
#
#   weft_test(resource_test SOURCES resource_test.cc DEPS weft_common)
#   weft_bench(scheduler_bench SOURCES scheduler_bench.cc DEPS weft_scheduler)
#
# Tests are GoogleTest programs registered with CTest under their own name;
# LABELS (optional) tag them, e.g. `unit` or `integration`.

function(weft_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  weft_use_pch(${name} TEST)
  weft_use_unity(${name})
  weft_test_flags(${name})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
    ENVIRONMENT "WEFT_SOURCE_DIR=${PROJECT_SOURCE_DIR};WEFT_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()

# weft_test_flags(target): with WEFT_TEST_O0, the target's own files compile at -O0 (the last
# -O on the command line wins over the build type's). weft_pch_test gets the same flags, since
# a precompiled header is used only by files compiled with the same optimisation level.
function(weft_test_flags target)
  if(WEFT_TEST_O0)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

function(weft_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  weft_use_pch(${name})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endfunction()

# One library target per module; headers are included as "module/file.h" from src/.
function(weft_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  weft_use_pch(${name})
  weft_use_unity(${name})
endfunction()

# Unity builds (WEFT_UNITY, off by default, on in scripts/build.sh): a target's .cc files are
# compiled WEFT_UNITY_BATCH_SIZE at a time, each batch as one translation unit that #includes
# them, so the headers they share (Weft's own, the generated protobuf/gRPC ones, CLI11,
# yaml-cpp: those not in the precompiled headers) are parsed and instantiated once per batch
# instead of once per file. Targets of one file are left alone. Files of a batch share one
# scope: two helpers of the same name in anonymous namespaces clash, so such names are kept
# distinct (or the file is excluded with the SKIP_UNITY_BUILD_INCLUSION source property). A
# build with the option off checks that each file still includes what it uses.
function(weft_use_unity target)
  if(NOT WEFT_UNITY)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  list(LENGTH sources count)
  if(count GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
      UNITY_BUILD_BATCH_SIZE ${WEFT_UNITY_BATCH_SIZE})
  endif()
endfunction()

# Precompiled headers (WEFT_PCH, on by default): the standard library, Abseil, gRPC and
# protobuf headers nearly every file includes are parsed once per build into weft_pch (and,
# with GoogleTest/GoogleMock added, weft_pch_test), and every target reuses them instead of
# parsing them again in each of its ~350 files; about a fifth of a cold build's compile time.
# Only system headers go in, so a file still compiles where the PCH cannot be used (gcc then
# reads the headers themselves). A file must still include what it uses: a build with
# -DWEFT_PCH=OFF checks that.
set(WEFT_PCH_HEADERS
  <algorithm> <atomic> <chrono> <cmath> <cstdint> <cstdlib> <deque> <filesystem> <fstream>
  <functional> <iostream> <limits> <map> <memory> <optional> <random> <set> <sstream>
  <string> <thread> <unordered_map> <utility> <vector>
  <absl/container/flat_hash_map.h> <absl/status/status.h> <absl/status/statusor.h>
  <absl/strings/ascii.h> <absl/strings/match.h> <absl/strings/numbers.h>
  <absl/strings/str_cat.h> <absl/strings/str_format.h> <absl/strings/str_join.h>
  <absl/strings/str_split.h> <absl/strings/string_view.h> <absl/strings/strip.h>
  <absl/synchronization/mutex.h> <absl/time/clock.h> <absl/time/time.h>
  <google/protobuf/message.h> <grpcpp/grpcpp.h>)

# Declares weft_pch and weft_pch_test; call once, before any weft_library/weft_test.
function(weft_define_pch)
  if(NOT WEFT_PCH)
    return()
  endif()
  set(stub ${PROJECT_BINARY_DIR}/weft_pch_stub.cc)
  file(WRITE ${stub} "// The translation unit that builds Weft's precompiled headers.\n")
  set(libraries absl::status absl::statusor absl::strings absl::str_format
    absl::synchronization absl::time absl::flat_hash_map protobuf::libprotobuf gRPC::grpc++)
  add_library(weft_pch OBJECT ${stub})
  target_link_libraries(weft_pch PRIVATE ${libraries})
  target_precompile_headers(weft_pch PRIVATE ${WEFT_PCH_HEADERS})
  add_library(weft_pch_test OBJECT ${stub})
  target_link_libraries(weft_pch_test PRIVATE ${libraries} GTest::gtest GTest::gmock)
  target_precompile_headers(weft_pch_test PRIVATE ${WEFT_PCH_HEADERS}
    <gmock/gmock.h> <gtest/gtest.h>)
  weft_test_flags(weft_pch_test)
endfunction()

# weft_use_pch(target [TEST]): the target's files start from the shared precompiled headers.
function(weft_use_pch target)
  if(NOT WEFT_PCH)
    return()
  endif()
  cmake_parse_arguments(ARG "TEST" "" "" ${ARGN})
  if(ARG_TEST)
    target_precompile_headers(${target} REUSE_FROM weft_pch_test)
  else()
    target_precompile_headers(${target} REUSE_FROM weft_pch)
  endif()
endfunction()

# weft_link_static_archives(REGEX): every imported library target of this directory whose name
# matches REGEX is linked from its static archive instead: lib<name>.a beside the shared
# library the package config names (Debian's -dev packages ship both); a missing archive is an
# error that names it. Header-only (INTERFACE) targets have nothing to link. Call after the
# find_package() calls that import the targets.
function(weft_link_static_archives regex)
  get_property(targets DIRECTORY PROPERTY IMPORTED_TARGETS)
  set(switched 0)
  foreach(target IN LISTS targets)
    if(NOT target MATCHES "${regex}")
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(SHARED|UNKNOWN)_LIBRARY$")
      continue()
    endif()
    foreach(property IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
                     IMPORTED_LOCATION_DEBUG)
      get_target_property(location ${target} ${property})
      if(NOT location)
        continue()
      endif()
      string(REGEX REPLACE "\\.so(\\.[0-9.]*)?$" ".a" archive "${location}")
      if(archive STREQUAL location OR NOT EXISTS "${archive}")
        message(FATAL_ERROR "WEFT_STATIC_GRPC: no static archive for ${target} beside "
                            "${location} (its -dev package ships one; or -DWEFT_STATIC_GRPC=OFF)")
      endif()
      set_target_properties(${target} PROPERTIES ${property} "${archive}")
      math(EXPR switched "${switched} + 1")
    endforeach()
  endforeach()
  if(switched EQUAL 0)
    message(FATAL_ERROR "WEFT_STATIC_GRPC: no imported library matches '${regex}'")
  endif()
endfunction()
