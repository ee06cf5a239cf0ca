# Runs one example program for ctest and checks what it did:
#
#   cmake -DPROGRAM=<exe> [-DARGS=a|b|c] [-DREQUIRE=<path>]
#         [-DEXPECT_FILE=<file>]
#         [-DRAW_FILE=<file> -DMANIFEST=<manifest.json>
#          -DMANIFEST_CONTAINER=<name.n5> -DMANIFEST_DATASET=<path>]
#         -P check_example.cmake
#
# ARGS      the program's arguments, separated by "|".
# REQUIRE   a path the test needs (a peer corpus container). When it is
#           missing the script prints "N5_EXAMPLE_SKIPPED: ..." and stops; the
#           test's SKIP_REGULAR_EXPRESSION turns that into a skipped test.
# The program must exit with status 0. Then:
# EXPECT_FILE  groups of lines separated by blank lines; each group must
#           appear in the program's output (stdout and stderr) as consecutive
#           whole lines.
# RAW_FILE  a file the program wrote (read_peer_dataset's raw little-endian
#           array); its sha256 must equal the array_sha256 that the peer
#           corpus manifest records for MANIFEST_DATASET in MANIFEST_CONTAINER.
cmake_minimum_required(VERSION 3.20)

if(DEFINED REQUIRE AND NOT EXISTS "${REQUIRE}")
  message("N5_EXAMPLE_SKIPPED: ${REQUIRE} does not exist (the peer corpus; "
          "set the CMake cache variable N5_CORPUS_DIR to its folder)")
  return()
endif()

string(REPLACE "|" ";" _args "${ARGS}")
if(DEFINED RAW_FILE)
  file(REMOVE "${RAW_FILE}")
endif()
execute_process(COMMAND "${PROGRAM}" ${_args}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(NOT _rc STREQUAL "0")
  message(FATAL_ERROR "${PROGRAM} exited with status ${_rc}")
endif()

if(DEFINED EXPECT_FILE)
  file(READ "${EXPECT_FILE}" _expected)
  # Split into groups at blank lines (without CMake lists: the text may
  # hold ";" and brackets); compare whole lines.
  string(REGEX REPLACE "\n\n+" "<n5-group>" _rest "${_expected}")
  set(_haystack "\n${_out}\n")
  set(_missing 0)
  while(NOT _rest STREQUAL "")
    string(FIND "${_rest}" "<n5-group>" _sep)
    if(_sep EQUAL -1)
      set(_group "${_rest}")
      set(_rest "")
    else()
      string(SUBSTRING "${_rest}" 0 ${_sep} _group)
      math(EXPR _sep "${_sep} + 10")
      string(SUBSTRING "${_rest}" ${_sep} -1 _rest)
    endif()
    string(REGEX REPLACE "^\n+|\n+$" "" _group "${_group}")
    if(_group STREQUAL "")
      continue()
    endif()
    string(FIND "${_haystack}" "\n${_group}\n" _at)
    if(_at EQUAL -1)
      message("MISSING from the output:\n${_group}\n")
      math(EXPR _missing "${_missing} + 1")
    endif()
  endwhile()
  if(_missing GREATER 0)
    message(FATAL_ERROR "${_missing} expected group(s) of lines from ${EXPECT_FILE} "
                        "are not in the output")
  endif()
endif()

if(DEFINED RAW_FILE)
  if(NOT EXISTS "${RAW_FILE}")
    message(FATAL_ERROR "${PROGRAM} did not write ${RAW_FILE}")
  endif()
  file(SHA256 "${RAW_FILE}" _actual)

  # The manifest is large and string(JSON) parses the whole text on every
  # call, so find the dataset's object by its "path" line (the manifest is
  # written with one-space indentation: the entries of "datasets" start with
  # "\n  {" and end with "\n  }") and parse only that object.
  file(READ "${MANIFEST}" _doc)
  string(LENGTH "${_doc}" _doc_len)
  set(_needle "\"path\": \"${MANIFEST_DATASET}\"")
  set(_from 0)
  set(_expected_sha "")
  while(_expected_sha STREQUAL "")
    string(SUBSTRING "${_doc}" ${_from} -1 _rest)
    string(FIND "${_rest}" "${_needle}" _at)
    if(_at EQUAL -1)
      break()
    endif()
    math(EXPR _at "${_from} + ${_at}")
    string(SUBSTRING "${_doc}" 0 ${_at} _before)
    string(FIND "${_before}" "\n  {" _start REVERSE)
    string(SUBSTRING "${_doc}" ${_at} -1 _after)
    string(FIND "${_after}" "\n  }" _end)
    math(EXPR _from "${_at} + 1")
    if(_start EQUAL -1 OR _end EQUAL -1)
      continue()
    endif()
    math(EXPR _obj_len "${_at} + ${_end} + 4 - ${_start} - 1")
    math(EXPR _start "${_start} + 1")
    string(SUBSTRING "${_doc}" ${_start} ${_obj_len} _object)
    string(JSON _container ERROR_VARIABLE _err GET "${_object}" container)
    if(NOT _err AND _container STREQUAL MANIFEST_CONTAINER)
      string(JSON _expected_sha ERROR_VARIABLE _err GET "${_object}" array_sha256)
      if(_err)
        message(FATAL_ERROR "${MANIFEST}: ${MANIFEST_CONTAINER} ${MANIFEST_DATASET} "
                            "has no array_sha256: ${_err}")
      endif()
    endif()
  endwhile()
  if(_expected_sha STREQUAL "")
    message(FATAL_ERROR "${MANIFEST_CONTAINER} ${MANIFEST_DATASET} not found in ${MANIFEST}")
  endif()
  if(NOT _actual STREQUAL _expected_sha)
    message(FATAL_ERROR "sha256 of ${RAW_FILE} is ${_actual}; the manifest says "
                        "${_expected_sha} for ${MANIFEST_CONTAINER} ${MANIFEST_DATASET}")
  endif()
  message("sha256 ${_actual} matches the manifest's array_sha256 for "
          "${MANIFEST_CONTAINER} ${MANIFEST_DATASET}")
endif()
