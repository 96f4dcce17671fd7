# SPDX-License-Identifier: Apache-2.0
# One ctest entry per doctest suite of a test executable, so that `ctest -R` or `-L` picks what
# it runs and the entry's name says what it ran.
#
#   idemgate_doctest_suites(<target> PREFIX <name> [STORES <store>...] [LABELS <label>...]
#                           [TIMEOUT <seconds>] [ONLY <store>=<suite>...])
#
# Each time <target> is linked, doctest_suites_discover.cmake asks it for its test cases
# (`--list-test-cases`, which leaves out the cases a `doctest::skip` decorator skips) and writes
# the entries:
#   <PREFIX>.<suite>          runs `<target> -ts=<suite>` (the suite's name, escaped for doctest's
#                             filter; in the entry's name every run of characters other than
#                             letters, digits, - and _ becomes one _);
#   <PREFIX>.<file>           the cases of <file>_test.cpp that are in no suite (`-sf` and
#                             `-tse=?*`: every named suite left out).
# With STORES (tests/gateway: memory redis cluster) the listing and the entries are made once per
# store with IDEMGATE_TEST_STORE set to it; the first store's entries carry no suffix, the others'
# end in .<store> (gateway.proxy, gateway.proxy.redis, gateway.proxy.cluster). A suite none of whose
# cases runs on a store (all skipped there) gets no entry for that store. Every entry carries LABELS
# and, with STORES, the label store-<store>. ONLY limits a store to the suites it names (a store
# named in no ONLY item gets every suite): the test-only store runs a chosen set (tests/gateway).
#
# The entries are read by ctest from <target>_suites.cmake in the build directory; until the target
# is built, one entry <PREFIX>.NOT_BUILT stands for them and fails.
set(IDEMGATE_DOCTEST_SUITES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/doctest_suites_discover.cmake)

function(idemgate_doctest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PREFIX;TIMEOUT" "STORES;LABELS;ONLY")
  if(NOT arg_PREFIX)
    message(FATAL_ERROR "idemgate_doctest_suites(${target}): PREFIX is required")
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  set(entries ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  # A step of the target's link, as doctest_discover_tests does, so that building the target alone
  # (`--target gateway_tests`) writes its entries; the target relinks when the script changes.
  add_custom_command(
    TARGET ${target} POST_BUILD
    BYPRODUCTS ${entries}
    COMMAND ${CMAKE_COMMAND} -D "EXECUTABLE=$<TARGET_FILE:${target}>" -D "TARGET=${target}"
            -D "PREFIX=${arg_PREFIX}" -D "STORES=${arg_STORES}" -D "LABELS=${arg_LABELS}"
            -D "TIMEOUT=${arg_TIMEOUT}" -D "ONLY=${arg_ONLY}" -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -D "OUTPUT=${entries}" -P ${IDEMGATE_DOCTEST_SUITES_SCRIPT}
    COMMENT "Listing the doctest suites of ${target} for ctest"
    VERBATIM)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${IDEMGATE_DOCTEST_SUITES_SCRIPT})

  set(labels ${arg_LABELS})
  foreach(store IN LISTS arg_STORES)
    list(APPEND labels store-${store})
  endforeach()
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake)
  file(WRITE ${include_file}
       "if(EXISTS \"${entries}\")\n"
       "  include(\"${entries}\")\n"
       "else()\n"
       "  add_test(${arg_PREFIX}.NOT_BUILT ${target}_NOT_BUILT)\n"
       "  set_tests_properties(${arg_PREFIX}.NOT_BUILT PROPERTIES LABELS \"${labels}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
