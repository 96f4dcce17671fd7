# SPDX-License-Identifier: Apache-2.0
# Run after a doctest executable is built (see doctest_suites.cmake): lists its test cases once per
# store and writes OUTPUT, the ctest entries, one per suite (and per file for cases outside any
# suite). Inputs: EXECUTABLE, TARGET, PREFIX, STORES, LABELS, TIMEOUT, ONLY (<store>=<suite> items:
# that store gets those suites only), WORKING_DIRECTORY, OUTPUT.
cmake_minimum_required(VERSION 3.20)

# doctest's filters split at commas (a backslash escapes one) and match the whole name with the
# wildcards * and ?: a name is an exact filter once its commas and backslashes are escaped and it
# has no wildcard.
function(doctest_filter_of name out)
  if(name MATCHES "[*?]")
    message(FATAL_ERROR "${TARGET}: the suite \"${name}\" has * or ? in its name, which doctest's "
                        "-ts filter reads as wildcards: rename it")
  endif()
  string(REPLACE "\\" "\\\\" name "${name}")
  string(REPLACE "," "\\," name "${name}")
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

# The text of an XML attribute (doctest's writer escapes & < > " ') and of the placeholders below.
function(xml_unescape var)
  set(text "${${var}}")
  string(REPLACE "<semicolon>" ";" text "${text}")
  string(REPLACE "<lbracket>" "[" text "${text}")
  string(REPLACE "<rbracket>" "]" text "${text}")
  string(REPLACE "&quot;" "\"" text "${text}")
  string(REPLACE "&apos;" "'" text "${text}")
  string(REPLACE "&lt;" "<" text "${text}")
  string(REPLACE "&gt;" ">" text "${text}")
  string(REPLACE "&amp;" "&" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

function(entry_name_of name out)
  string(REGEX REPLACE "[^A-Za-z0-9_-]+" "_" name "${name}")
  string(REGEX REPLACE "^_+|_+$" "" name "${name}")
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

set(stores "${STORES}")
if(stores STREQUAL "")
  set(stores "-") # one listing, no store
endif()

set(text "# Written by cmake/doctest_suites_discover.cmake from `${TARGET} --list-test-cases`.\n")
set(first TRUE)
foreach(store IN LISTS stores)
  # The listing runs no test. A caller's IDEMGATE_TEST_STORE must not leak into it, and a
  # sanitizer build's leak check has nothing to say about it.
  set(env --unset=IDEMGATE_TEST_STORE ASAN_OPTIONS=detect_leaks=0)
  set(suffix "")
  set(labels "${LABELS}")
  set(environment "")
  if(NOT store STREQUAL "-")
    list(APPEND env IDEMGATE_TEST_STORE=${store})
    set(environment "IDEMGATE_TEST_STORE=${store}")
    list(APPEND labels store-${store})
    if(NOT first)
      set(suffix ".${store}")
    endif()
  endif()
  set(first FALSE)
  # The suites ONLY gives this store; none listed: every suite.
  set(only_suites "")
  foreach(item IN LISTS ONLY)
    if(item MATCHES "^([^=]*)=(.*)$" AND CMAKE_MATCH_1 STREQUAL store)
      list(APPEND only_suites "${CMAKE_MATCH_2}")
    endif()
  endforeach()

  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${env} ${EXECUTABLE} --list-test-cases --reporters=xml --no-version
    WORKING_DIRECTORY "${WORKING_DIRECTORY}"
    OUTPUT_VARIABLE xml ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} --list-test-cases (store ${store}) failed (${rc}):\n${xml}${errors}")
  endif()
  # Characters that CMake's lists treat specially are kept out of the list of matches (as
  # placeholders that cannot be in XML text, where '<' is escaped).
  string(REPLACE ";" "<semicolon>" xml "${xml}")
  string(REPLACE "[" "<lbracket>" xml "${xml}")
  string(REPLACE "]" "<rbracket>" xml "${xml}")
  # Up to the file name: a case's name may hold a '>', which XML leaves as it is in an attribute.
  # doctest leaves an empty attribute out: a case in no suite has no testsuite="".
  string(REGEX MATCHALL "<TestCase name=\"[^\"]*\"( testsuite=\"[^\"]*\")? filename=\"[^\"]*\"" cases
               "${xml}")

  set(groups "")
  foreach(one IN LISTS cases)
    set(suite "")
    if(one MATCHES " testsuite=\"([^\"]*)\"")
      set(suite "${CMAKE_MATCH_1}")
    endif()
    string(REGEX MATCH " filename=\"([^\"]*)\"" _ "${one}")
    set(file "${CMAKE_MATCH_1}")
    xml_unescape(suite)
    xml_unescape(file)
    if(suite STREQUAL "")
      get_filename_component(file "${file}" NAME)
      set(key "file:${file}")
    else()
      set(key "suite:${suite}")
    endif()
    # Groups are kept as hex so that any name survives CMake's list handling.
    string(HEX "${key}" key)
    list(APPEND groups "${key}")
  endforeach()
  if(groups STREQUAL "")
    message(FATAL_ERROR "${TARGET} (store ${store}) listed no test case:\n${xml}${errors}")
  endif()

  set(names_seen "")
  set(distinct "${groups}")
  list(REMOVE_DUPLICATES distinct)
  foreach(hex IN LISTS distinct)
    set(count 0)
    foreach(other IN LISTS groups)
      if(other STREQUAL hex)
        math(EXPR count "${count} + 1")
      endif()
    endforeach()
    string(LENGTH "${hex}" length)
    set(key "")
    set(at 0)
    while(at LESS length)
      string(SUBSTRING "${hex}" ${at} 2 byte)
      math(EXPR code "0x${byte}")
      string(ASCII ${code} char)
      string(APPEND key "${char}")
      math(EXPR at "${at} + 2")
    endwhile()
    if(NOT only_suites STREQUAL "")
      string(REGEX REPLACE "^suite:" "" only_key "${key}")
      if(NOT key MATCHES "^suite:" OR NOT only_key IN_LIST only_suites)
        continue()
      endif()
    endif()
    if(key MATCHES "^suite:(.*)$")
      set(suite "${CMAKE_MATCH_1}")
      doctest_filter_of("${suite}" filter)
      set(args "-ts=${filter}")
      entry_name_of("${suite}" name)
      set(what "suite \"${suite}\"")
    else()
      string(REGEX REPLACE "^file:" "" file "${key}")
      # Cases outside any suite, grouped by file: that file's cases, every named suite left out.
      set(args "-sf=*/${file}" "-tse=?*")
      get_filename_component(stem "${file}" NAME_WE)
      string(REGEX REPLACE "_test$" "" stem "${stem}")
      entry_name_of("${stem}" name)
      set(what "the cases of ${file} outside any suite")
    endif()
    string(TOLOWER "${name}" lower)
    if(lower IN_LIST names_seen)
      message(FATAL_ERROR "${TARGET}: two groups of test cases would both be the ctest entry "
                          "${PREFIX}.${name} (${what}): rename a suite, or put the file's cases in one")
    endif()
    list(APPEND names_seen "${lower}")
    set(test "${PREFIX}.${name}${suffix}")
    string(APPEND text "\n# ${what}, ${count} case(s)")
    if(NOT environment STREQUAL "")
      string(APPEND text " over ${environment}")
    endif()
    string(APPEND text "\nadd_test([==[${test}]==] [==[${EXECUTABLE}]==]")
    foreach(arg IN LISTS args)
      string(APPEND text " [==[${arg}]==]")
    endforeach()
    # ctest starts the costliest entries first; a clean checkout has no timings of its own yet, so
    # the entry's COST guesses them: its cases, and a cluster entry's 3+3 Redis Cluster on top.
    math(EXPR cost "${count}")
    if(suffix STREQUAL ".cluster")
      math(EXPR cost "${count} * 2 + 5")
    endif()
    string(APPEND text ")\nset_tests_properties([==[${test}]==] PROPERTIES TIMEOUT ${TIMEOUT} COST ${cost}"
                       " WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==] LABELS [==[${labels}]==]")
    if(NOT environment STREQUAL "")
      string(APPEND text " ENVIRONMENT [==[${environment}]==]")
    endif()
    string(APPEND text ")\n")
  endforeach()
endforeach()

file(WRITE "${OUTPUT}" "${text}")
