# Helpers that declare a library, a test or a benchmark in one line.
#
#   weft_test(resource_test SOURCES resource_test.cc DEPS weft_common)
#   weft_test(app_manager_test SOURCES app_manager_test.cc DEPS weft_rm PROGRAM rm_tests)
#   weft_bench(scheduler_bench SOURCES scheduler_bench.cc DEPS weft_scheduler)
#
# Tests are GoogleTest programs registered with CTest under their own name; LABELS (optional)
# tag them, e.g. `unit` or `integration`; TIMEOUT is in seconds (300 by default).
#
# PROGRAM (optional) puts the test's files into one GoogleTest program shared with the other
# tests of this directory that name the same PROGRAM (made at the end of the directory's
# CMakeLists.txt), and CTest runs that program with a --gtest_filter of the test suites those
# files define (TEST, TEST_F, TEST_P, TYPED_TEST, TYPED_TEST_P), so each test keeps its name,
# labels and timeout. With WEFT_UNITY the program's files compile as one translation unit: the
# Weft and generated headers they share are parsed once instead of once per test, and two
# files defining the same name fail to compile instead of linking one definition for both. A
# suite defined by two tests of one program is a configure error. DEFINITIONS (compile
# definitions) and TARGET_DEPENDS (targets to build first, e.g. a helper program the test
# starts) apply to the test's program, or to its own target without PROGRAM.
#
# With WEFT_SANITIZED_TESTS (the README's test command, scripts/test.sh), a test that the
# sanitizer build tree named there also builds is not built again here: CTest runs that tree's
# program, under AddressSanitizer + UBSan, with the label `sanitized` added. The target is still
# declared (not built by default) so that a CMakeLists may add its compile definitions.
function(weft_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;PROGRAM"
    "SOURCES;DEPS;LABELS;DEFINITIONS;TARGET_DEPENDS" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY WEFT_TEST_NAMES ${name})
  set(sanitized OFF)
  if(name IN_LIST WEFT_SANITIZED_TEST_NAMES)
    set(sanitized ON)
  endif()
  set(arguments "")
  if(ARG_PROGRAM)
    set(program ${ARG_PROGRAM})
    weft_gtest_filter(filter ${name} ${program} ${ARG_SOURCES})
    set(arguments "--gtest_filter=${filter}")
    get_property(members DIRECTORY PROPERTY WEFT_PROGRAM_${program}_TESTS)
    if(NOT members)
      cmake_language(EVAL CODE
        "cmake_language(DEFER CALL weft_make_test_program [[${program}]])")
    endif()
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_TESTS ${name})
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_SOURCES ${ARG_SOURCES})
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_DEPS ${ARG_DEPS})
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_SANITIZED ${sanitized})
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_DEFINITIONS
      ${ARG_DEFINITIONS})
    set_property(DIRECTORY APPEND PROPERTY WEFT_PROGRAM_${program}_TARGET_DEPENDS
      ${ARG_TARGET_DEPENDS})
  else()
    set(program ${name})
    weft_test_executable(${name} ${sanitized} "${ARG_SOURCES}" "${ARG_DEPS}"
      "${ARG_DEFINITIONS}" "${ARG_TARGET_DEPENDS}")
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  set(command ${program})
  set(binary_dir ${PROJECT_BINARY_DIR})
  set(environment "")
  if(sanitized)
    file(RELATIVE_PATH relative ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR})
    set(command ${WEFT_SANITIZED_TESTS}/${relative}/${program})
    set(binary_dir ${WEFT_SANITIZED_TESTS})
    list(APPEND ARG_LABELS sanitized)
  endif()
  if(sanitized OR WEFT_SANITIZE)
    set(environment ";${WEFT_SANITIZER_ENVIRONMENT}")
  endif()
  add_test(NAME ${name} COMMAND ${command} ${arguments})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
    ENVIRONMENT
    "WEFT_SOURCE_DIR=${PROJECT_SOURCE_DIR};WEFT_BINARY_DIR=${binary_dir}${environment}")
endfunction()

# weft_test_executable(target sanitized sources deps definitions target_depends): a GoogleTest
# program; with sanitized ON it is declared but not built by default (the sanitizer build's
# copy runs instead).
function(weft_test_executable target sanitized sources deps definitions target_depends)
  if(sanitized)
    add_executable(${target} EXCLUDE_FROM_ALL ${sources})
  else()
    add_executable(${target} ${sources})
  endif()
  target_link_libraries(${target} PRIVATE ${deps} GTest::gtest GTest::gmock GTest::gtest_main)
  weft_use_pch(${target} TEST)
  weft_use_unity(${target})
  weft_test_flags(${target})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  if(definitions)
    target_compile_definitions(${target} PRIVATE ${definitions})
  endif()
  if(target_depends)
    add_dependencies(${target} ${target_depends})
  endif()
endfunction()

# weft_gtest_filter(out test program sources...): the --gtest_filter value that selects the
# suites the sources define, however GoogleTest names them (Suite.Test, Suite/0.Test for typed
# tests, Prefix/Suite.Test/0 and Prefix/Suite/0.Test for parameterised ones). An error names a
# file that defines no suite, and a suite another test of the same program already defines.
function(weft_gtest_filter out test program)
  set(patterns "")
  set(word "[A-Za-z0-9_]+")
  foreach(source ${ARGN})
    set(path ${source})
    if(NOT IS_ABSOLUTE "${path}")
      set(path ${CMAKE_CURRENT_SOURCE_DIR}/${source})
    endif()
    file(STRINGS "${path}" lines
      REGEX "^[ \t]*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)[ \t]*\\([ \t]*${word}")
    set(suites "")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*[A-Z_]+[ \t]*\\([ \t]*(${word}).*$" "\\1" suite "${line}")
      list(APPEND suites ${suite})
    endforeach()
    list(REMOVE_DUPLICATES suites)
    if(NOT suites)
      message(FATAL_ERROR "${test} (PROGRAM ${program}): ${source} defines no test suite "
        "(TEST, TEST_F, TEST_P, TYPED_TEST or TYPED_TEST_P at the start of a line)")
    endif()
    foreach(suite ${suites})
      get_property(owner DIRECTORY PROPERTY WEFT_PROGRAM_${program}_SUITE_${suite})
      if(owner AND NOT owner STREQUAL test)
        message(FATAL_ERROR "${test} (PROGRAM ${program}): its test suite ${suite} is also "
          "${owner}'s; a suite must belong to one test of a program (rename one)")
      endif()
      set_property(DIRECTORY PROPERTY WEFT_PROGRAM_${program}_SUITE_${suite} ${test})
      list(APPEND patterns "${suite}.*" "${suite}/*" "*/${suite}.*" "*/${suite}/*")
    endforeach()
  endforeach()
  list(JOIN patterns ":" filter)
  set(${out} "${filter}" PARENT_SCOPE)
endfunction()

# weft_make_test_program(program): the GoogleTest program of the tests that name it (called at
# the end of their directory's CMakeLists.txt). Its files compile as one unity batch.
function(weft_make_test_program program)
  get_property(tests DIRECTORY PROPERTY WEFT_PROGRAM_${program}_TESTS)
  get_property(sources DIRECTORY PROPERTY WEFT_PROGRAM_${program}_SOURCES)
  get_property(deps DIRECTORY PROPERTY WEFT_PROGRAM_${program}_DEPS)
  get_property(sanitized DIRECTORY PROPERTY WEFT_PROGRAM_${program}_SANITIZED)
  get_property(definitions DIRECTORY PROPERTY WEFT_PROGRAM_${program}_DEFINITIONS)
  get_property(target_depends DIRECTORY PROPERTY WEFT_PROGRAM_${program}_TARGET_DEPENDS)
  list(REMOVE_DUPLICATES deps)
  list(REMOVE_DUPLICATES sanitized)
  list(LENGTH sanitized kinds)
  if(kinds GREATER 1)
    message(FATAL_ERROR "PROGRAM ${program} (${tests}): the sanitizer build tree "
      "${WEFT_SANITIZED_TESTS} builds some of its tests but not all")
  endif()
  weft_test_executable(${program} ${sanitized} "${sources}" "${deps}" "${definitions}"
    "${target_depends}")
  if(WEFT_UNITY)
    set_target_properties(${program} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
  endif()
endfunction()

# weft_sanitized_tests(): reads the test list of the sanitizer build tree WEFT_SANITIZED_TESTS
# names (written by weft_write_test_list there) into WEFT_SANITIZED_TEST_NAMES, and keeps that
# tree built with this one (a custom target of ALL runs its build). An error names a tree that
# is missing, not configured, or not a sanitizer build. Call before any weft_test.
function(weft_sanitized_tests)
  if(NOT WEFT_SANITIZED_TESTS)
    return()
  endif()
  set(dir ${WEFT_SANITIZED_TESTS})
  if(NOT IS_ABSOLUTE "${dir}" OR NOT EXISTS "${dir}/CMakeCache.txt")
    message(FATAL_ERROR "WEFT_SANITIZED_TESTS=${dir}: not an absolute path to a configured "
      "build tree (configure it first: scripts/build.sh --sanitize)")
  endif()
  load_cache("${dir}" READ_WITH_PREFIX other_ WEFT_SANITIZE CMAKE_HOME_DIRECTORY)
  if(NOT other_WEFT_SANITIZE)
    message(FATAL_ERROR "WEFT_SANITIZED_TESTS=${dir}: that tree is not a sanitizer build "
      "(WEFT_SANITIZE is not ON in its CMakeCache.txt)")
  endif()
  if(NOT other_CMAKE_HOME_DIRECTORY STREQUAL PROJECT_SOURCE_DIR)
    message(FATAL_ERROR "WEFT_SANITIZED_TESTS=${dir}: that tree builds "
      "${other_CMAKE_HOME_DIRECTORY}, not ${PROJECT_SOURCE_DIR}")
  endif()
  if(NOT EXISTS "${dir}/weft-tests.txt")
    message(FATAL_ERROR "WEFT_SANITIZED_TESTS=${dir}: it has no weft-tests.txt (configure it "
      "again with this source tree)")
  endif()
  file(STRINGS "${dir}/weft-tests.txt" names)
  set(WEFT_SANITIZED_TEST_NAMES ${names} PARENT_SCOPE)
  add_custom_target(weft_sanitized_tests ALL COMMAND ${CMAKE_COMMAND} --build "${dir}"
    COMMENT "Building the sanitizer build's tests in ${dir}" USES_TERMINAL)
endfunction()

# weft_write_test_list(): writes every weft_test's name, one per line, to weft-tests.txt in the
# build tree (what weft_sanitized_tests reads). Call after the last weft_test.
function(weft_write_test_list)
  get_property(names GLOBAL PROPERTY WEFT_TEST_NAMES)
  list(JOIN names "\n" text)
  file(WRITE ${PROJECT_BINARY_DIR}/weft-tests.txt "${text}\n")
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
