# The build step of CMakeLists.txt (target n5_cargo), run as
#   cmake -DN5_VARS=<build>/n5-package/cargo-step.cmake -P cmake/n5CargoBuild.cmake
#
# 1. Builds the library with cargo (rlib, cdylib and staticlib of one crate),
#    asking rustc for the staticlib's native-static-libs.
# 2. Links libn5.so.<soversion> -> libn5.so beside cargo's output, so that
#    executables linked in the build tree find the library by its SONAME.
# 3. Writes the files that carry the static link line: native-static-libs.rsp
#    (a linker response file, used by the build tree's n5::n5_static), n5.pc
#    (Libs.private) and n5Targets.cmake (n5::n5_static). Files are rewritten
#    only when their content changes.
cmake_minimum_required(VERSION 3.20)
include("${N5_VARS}")

# Used only if rustc's answer was never seen (see below).
set(_fallback_libs "-lpthread -ldl -lm -lrt -lgcc_s -lutil -lc")
set(_libs_txt "${N5_PACKAGE_DIR}/native-static-libs.txt")

function(run_cargo out_stderr)
  set(ENV{CARGO_TARGET_DIR} "${N5_CARGO_TARGET_DIR}")
  # `cargo rustc` is `cargo build --lib` plus arguments for the library's own
  # rustc call. Cargo replays the note when the library is already fresh.
  execute_process(
    COMMAND "${N5_CARGO}" rustc --lib --profile "${N5_CARGO_PROFILE}"
            --manifest-path "${N5_SOURCE_DIR}/Cargo.toml" ${N5_CARGO_FLAGS}
            -- --print native-static-libs
    WORKING_DIRECTORY "${N5_SOURCE_DIR}"
    RESULT_VARIABLE rc
    ERROR_VARIABLE err
    ECHO_ERROR_VARIABLE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cargo failed (${rc})")
  endif()
  set(${out_stderr} "${err}" PARENT_SCOPE)
endfunction()

run_cargo(_stderr)
if(_stderr MATCHES "native-static-libs: ([^\r\n]*)")
  string(STRIP "${CMAKE_MATCH_1}" _libs)
  file(CONFIGURE OUTPUT "${_libs_txt}" CONTENT "${_libs}\n")
elseif(EXISTS "${_libs_txt}")
  file(STRINGS "${_libs_txt}" _libs LIMIT_COUNT 1)
else()
  message(WARNING "rustc printed no native-static-libs; using ${_fallback_libs}")
  set(_libs "${_fallback_libs}")
endif()

# The SONAME link, as ldconfig would make it.
set(_link "${N5_CARGO_OUT_DIR}/${N5_SONAME}")
if(IS_SYMLINK "${_link}")
  file(READ_SYMLINK "${_link}" _points_to)
else()
  set(_points_to "")
endif()
if(NOT _points_to STREQUAL "libn5.so")
  file(REMOVE "${_link}")
  file(CREATE_LINK "libn5.so" "${_link}" SYMBOLIC)
endif()

# The static link line, in the three forms its users need.
file(CONFIGURE OUTPUT "${N5_STATIC_LIBS_RSP}" CONTENT "${_libs}\n")
set(N5_STATIC_LINK_LIBS "${_libs}")
separate_arguments(N5_STATIC_LINK_LIBS_CMAKE UNIX_COMMAND "${_libs}")
configure_file("${N5_SOURCE_DIR}/cmake/n5.pc.in" "${N5_PACKAGE_DIR}/n5.pc" @ONLY)
configure_file("${N5_SOURCE_DIR}/cmake/n5Targets.cmake.in"
               "${N5_PACKAGE_DIR}/n5Targets.cmake" @ONLY)
