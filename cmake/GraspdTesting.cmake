find_package(GTest REQUIRED)
include(GoogleTest)

set(GRASPD_UBSAN_SUPPRESSIONS "${PROJECT_SOURCE_DIR}/tests/sanitizers/ubsan.supp")
set(GRASPD_TEST_ENV
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${GRASPD_UBSAN_SUPPRESSIONS}"
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"
    "GRASPD_BINARY=$<TARGET_FILE:graspd>"
    "GRASPD_SOURCE_DIR=${PROJECT_SOURCE_DIR}")

# Unit programs are registered either test by test (0, the default: one ctest entry and one
# process per test, best for a developer's `ctest -R`) or as this many shards per program
# (GoogleTest's own GTEST_TOTAL_SHARDS): one process runs a slice of the tests. The suite's presets
# shard, because a sanitizer program takes ~0.4 s to start and ~700 starts were a third of the
# sanitizer run. End-to-end tests are always registered one by one: each starts its own daemons.
set(GRASPD_UNIT_TEST_SHARDS 0 CACHE STRING "Shards per unit test program under ctest (0: one entry per test)")
# A GoogleTest filter for the sharded unit programs (GTEST_FILTER). The sanitizer preset leaves out
# the simulator's triple replay of a seed, which the default preset runs (sim_test is built in every
# build) and which takes ASan ten times longer.
set(GRASPD_UNIT_TEST_FILTER "" CACHE STRING "GoogleTest filter for sharded unit programs (empty: all)")
# The same for the end-to-end program: the sanitizer preset leaves out three tests that wait out
# bounds and expiries on paths other end-to-end tests there cross (they run in the default preset).
set(GRASPD_E2E_TEST_FILTER "" CACHE STRING "GoogleTest filter for the end-to-end program (empty: all)")
# Compile flags appended for the test programs' own code (not the code under test, which keeps the
# build type's flags). The suite's default preset compiles its tests at -O0: they are a third of
# the build's compile time and gain nothing from optimisation.
set(GRASPD_TEST_CODE_FLAGS "" CACHE STRING "Compile flags appended for test programs' own sources")

# graspd_test_code_flags(<target>): applies GRASPD_TEST_CODE_FLAGS to a test-only target.
function(graspd_test_code_flags target)
  if(GRASPD_TEST_CODE_FLAGS)
    separate_arguments(flags UNIX_COMMAND "${GRASPD_TEST_CODE_FLAGS}")
    target_compile_options(${target} PRIVATE ${flags})
  endif()
endfunction()

# Unit programs are built and run in every build unless this is OFF. The suite's default preset
# turns it off: its unit tests run once, in the sanitizer build (stricter, and compiled anyway),
# while the optimised build runs what needs the optimised daemon (end-to-end, cluster, simulator,
# package). A unit program registered with EVERY_BUILD is kept regardless (the simulator's test:
# one seed must give one schedule under every compiler).
option(GRASPD_UNIT_TESTS "Build and register the unit test programs" ON)

# graspd_add_test(<name> LABEL unit|integration SOURCES ... [LIBS ...] [TIMEOUT s] [EVERY_BUILD])
# Builds one GoogleTest program and registers its tests with ctest.
function(graspd_add_test name)
  cmake_parse_arguments(T "EVERY_BUILD" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    message(FATAL_ERROR "graspd_add_test(${name}): LABEL unit|integration is required")
  endif()
  if(T_LABEL STREQUAL "unit" AND NOT GRASPD_UNIT_TESTS AND NOT T_EVERY_BUILD)
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} graspd_test_support GTest::gtest_main
                                         GTest::gmock graspd_warnings)
  graspd_test_code_flags(${name})
  if(T_LABEL STREQUAL "integration")
    add_dependencies(${name} graspd)
  endif()
  if(T_LABEL STREQUAL "unit" AND GRASPD_UNIT_TEST_SHARDS GREATER 0)
    graspd_register_shards(${name} ${T_LABEL})
    return()
  endif()
  # gtest_discover_tests (CMake 3.25) flattens list-valued PROPERTIES, so ENVIRONMENT would keep
  # only its first entry: run each test through `cmake -E env` instead (the emulator is used for
  # discovery and for every test command).
  set_property(TARGET ${name} PROPERTY CROSSCOMPILING_EMULATOR
               "${CMAKE_COMMAND};-E;env;${GRASPD_TEST_ENV}")
  set(filter_args)
  if(T_LABEL STREQUAL "integration" AND GRASPD_E2E_TEST_FILTER)
    set(filter_args TEST_FILTER ${GRASPD_E2E_TEST_FILTER})
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    ${filter_args}
    PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT})
endfunction()

# Registers <name> as GRASPD_UNIT_TEST_SHARDS entries <name>/shard_<i>. A shard holds many tests,
# so its time limit is generous; a failure names the failed tests in GoogleTest's summary at the
# end of the shard's output.
function(graspd_register_shards name label)
  math(EXPR last "${GRASPD_UNIT_TEST_SHARDS} - 1")
  set(filter "")
  if(GRASPD_UNIT_TEST_FILTER)
    set(filter "GTEST_FILTER=${GRASPD_UNIT_TEST_FILTER}")
  endif()
  foreach(index RANGE ${last})
    set(test_name ${name}/shard_${index})
    add_test(NAME ${test_name}
             COMMAND ${CMAKE_COMMAND} -E env ${GRASPD_TEST_ENV} ${filter}
                     GTEST_TOTAL_SHARDS=${GRASPD_UNIT_TEST_SHARDS} GTEST_SHARD_INDEX=${index}
                     $<TARGET_FILE:${name}>)
    # A high COST starts the long entries first, so the run does not end on one straggler.
    set_tests_properties(${test_name} PROPERTIES LABELS ${label} TIMEOUT 900 COST 100)
  endforeach()
endfunction()
