find_package(GTest REQUIRED)
include(GoogleTest)

set(GRASPD_UBSAN_SUPPRESSIONS "${PROJECT_SOURCE_DIR}/tests/sanitizers/ubsan.supp")
set(GRASPD_TEST_ENV
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${GRASPD_UBSAN_SUPPRESSIONS}"
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"
    "GRASPD_BINARY=$<TARGET_FILE:graspd>"
    "GRASPD_SOURCE_DIR=${PROJECT_SOURCE_DIR}")

# graspd_add_test(<name> LABEL unit|integration SOURCES ... [LIBS ...] [TIMEOUT s])
# Builds one GoogleTest program and registers each of its tests with ctest.
function(graspd_add_test name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL)
    message(FATAL_ERROR "graspd_add_test(${name}): LABEL unit|integration is required")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} graspd_test_support GTest::gtest_main
                                         GTest::gmock graspd_warnings)
  if(T_LABEL STREQUAL "integration")
    add_dependencies(${name} graspd)
  endif()
  # gtest_discover_tests (CMake 3.25) flattens list-valued PROPERTIES, so ENVIRONMENT would keep
  # only its first entry: run each test through `cmake -E env` instead (the emulator is used for
  # discovery and for every test command).
  set_property(TARGET ${name} PROPERTY CROSSCOMPILING_EMULATOR
               "${CMAKE_COMMAND};-E;env;${GRASPD_TEST_ENV}")
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT})
endfunction()
