# Helpers shared by the packaging test scripts (run with cmake -P).
cmake_minimum_required(VERSION 3.20)

# run_checked(<command>...): runs a command, echoing it; fails the test if it fails.
function(run_checked)
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

# elf_dynamic(<file> <out_needed> <out_soname>): NEEDED entries and SONAME of an ELF file.
function(elf_dynamic file out_needed out_soname)
  execute_process(COMMAND "${READELF}" -d "${file}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${file} failed: ${err}")
  endif()
  set(needed "")
  set(soname "")
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "\\(NEEDED\\).*\\[(.*)\\]")
      list(APPEND needed "${CMAKE_MATCH_1}")
    elseif(line MATCHES "\\(SONAME\\).*\\[(.*)\\]")
      set(soname "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out_needed} "${needed}" PARENT_SCOPE)
  set(${out_soname} "${soname}" PARENT_SCOPE)
endfunction()

# cargo_version(<out>): the version in Cargo.toml as it is now.
function(cargo_version cargo_toml out)
  file(STRINGS "${cargo_toml}" line REGEX "^version[ \t]*=" LIMIT_COUNT 1)
  if(NOT line MATCHES "\"([^\"]+)\"")
    message(FATAL_ERROR "no version in ${cargo_toml}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()
