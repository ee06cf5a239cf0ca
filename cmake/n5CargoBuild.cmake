# The build step of CMakeLists.txt (target n5_cargo), run as
#   cmake -DN5_VARS=<build>/n5-package/cargo-step.cmake -P cmake/n5CargoBuild.cmake
#
# 1. Builds the library with cargo (rlib, cdylib and staticlib of one crate)
#    and works out the staticlib's native-static-libs (the system libraries
#    a program linking libn5.a needs).
# 2. Links libn5.so.<soversion> -> libn5.so beside cargo's output, so that
#    executables linked in the build tree find the library by its SONAME.
# 3. Writes the files that carry the static link line: native-static-libs.rsp
#    (a linker response file, used by the build tree's n5::n5_static), n5.pc
#    (Libs.private) and n5Targets.cmake (n5::n5_static). Files are rewritten
#    only when their content changes.
cmake_minimum_required(VERSION 3.20)
include("${N5_VARS}")

# Used only if rustc cannot be asked (see below).
set(_fallback_libs "-lpthread -ldl -lm -lrt -lgcc_s -lutil -lc")

# The library is built with a plain `cargo build --lib`, exactly as the n5
# tool's `cargo build -p n5-cli` builds it as a dependency, so that the two
# share one compile. (`cargo rustc -- --print native-static-libs` would print
# the link line directly, but its extra argument is part of cargo's
# fingerprint: the tool's build would then compile the library again, and
# the next library build once more.) The link line is instead put together
# the way rustc does it: the native libraries that build scripts of the
# library's dependencies ask for and that are not bundled into libn5.a
# (cargo reports them as JSON), then those of Rust's standard library.
set(ENV{CARGO_TARGET_DIR} "${N5_CARGO_TARGET_DIR}")
execute_process(
  COMMAND "${N5_CARGO}" build --lib --profile "${N5_CARGO_PROFILE}"
          --manifest-path "${N5_SOURCE_DIR}/Cargo.toml" ${N5_CARGO_FEATURE_ARGS}
          --message-format=json-render-diagnostics ${N5_CARGO_FLAGS}
  WORKING_DIRECTORY "${N5_SOURCE_DIR}"
  RESULT_VARIABLE _rc
  OUTPUT_VARIABLE _json)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "cargo failed (${_rc})")
endif()

# Build scripts' link requests: "name", "dylib=name", "static=name",
# "static:-bundle=name", ... Only static libraries without -bundle end up
# inside libn5.a; the others must be on the user's link line, with the
# search paths the same build script gave ("native=DIR", "all=DIR", ...):
# libhdf5 with the hdf5 feature, in a directory of its own on Debian
# (lib/x86_64-linux-gnu/hdf5/serial). Two forms: flags (-L, -l) for the
# response file and n5.pc, and for n5Targets.cmake the library's full path
# where it is found in those directories.
set(_crate_libs "")
set(_crate_libs_cmake "")
set(_crate_dirs "")
# Only build-script-executed messages have "linked_libs", followed by
# "linked_paths"; their items are library names and directories, so
# neither ']' nor ';' occurs inside the arrays.
string(REGEX MATCHALL "\"linked_libs\":\\[[^]]*\\],\"linked_paths\":\\[[^]]*\\]" _arrays "${_json}")
foreach(_array IN LISTS _arrays)
  string(JSON _count ERROR_VARIABLE _err LENGTH "{${_array}}" linked_libs)
  if(_err OR _count EQUAL 0)
    continue()
  endif()
  set(_dirs "")
  string(JSON _npaths ERROR_VARIABLE _err LENGTH "{${_array}}" linked_paths)
  if(NOT _err AND _npaths GREATER 0)
    math(EXPR _last_path "${_npaths} - 1")
    foreach(_i RANGE ${_last_path})
      string(JSON _path GET "{${_array}}" linked_paths ${_i})
      if(_path MATCHES "^(native|all|dependency)=(.*)$")
        set(_path "${CMAKE_MATCH_2}")
      elseif(_path MATCHES "^[a-z]+=")
        continue()
      endif()
      # Directories of cargo's own build (a build script's out dir) hold
      # only what is bundled into libn5.a, and are no place for the
      # installed package to name.
      string(FIND "${_path}/" "${N5_CARGO_TARGET_DIR}/" _in_target)
      if(NOT _in_target EQUAL 0)
        list(APPEND _dirs "${_path}")
      endif()
    endforeach()
  endif()
  set(_needs_dirs FALSE)
  math(EXPR _last "${_count} - 1")
  foreach(_i RANGE ${_last})
    string(JSON _lib GET "{${_array}}" linked_libs ${_i})
    if(_lib MATCHES "^(([a-z-]+)(:[^=]*)?=)?([^:]+)")
      set(_kind "${CMAKE_MATCH_2}")
      set(_modifiers "${CMAKE_MATCH_3}")
      set(_name "${CMAKE_MATCH_4}")
      if(_kind STREQUAL "" OR _kind STREQUAL "dylib"
         OR (_kind STREQUAL "static" AND _modifiers MATCHES "-bundle"))
        list(APPEND _crate_libs "-l${_name}")
        set(_full "")
        foreach(_dir IN LISTS _dirs)
          foreach(_file "lib${_name}.so" "lib${_name}.a")
            if(_full STREQUAL "" AND EXISTS "${_dir}/${_file}")
              set(_full "${_dir}/${_file}")
            endif()
          endforeach()
        endforeach()
        if(_full STREQUAL "")
          list(APPEND _crate_libs_cmake "-l${_name}")
        else()
          list(APPEND _crate_libs_cmake "${_full}")
        endif()
        set(_needs_dirs TRUE)
      endif()
    endif()
  endforeach()
  if(_needs_dirs)
    foreach(_dir IN LISTS _dirs)
      list(APPEND _crate_dirs "-L${_dir}")
    endforeach()
  endif()
endforeach()

# The standard library's part, from the same rustc compiling an empty
# staticlib (a quarter of a second).
if(DEFINED ENV{RUSTC} AND NOT "$ENV{RUSTC}" STREQUAL "")
  set(_rustc "$ENV{RUSTC}")
else()
  get_filename_component(_cargo_dir "${N5_CARGO}" DIRECTORY)
  find_program(_rustc rustc HINTS "${_cargo_dir}" NO_CACHE)
endif()
set(_probe_dir "${N5_PACKAGE_DIR}/std-probe")
file(MAKE_DIRECTORY "${_probe_dir}")
file(CONFIGURE OUTPUT "${_probe_dir}/probe.rs" CONTENT "// empty: asks rustc for std's native-static-libs\n")
set(_std_libs "")
if(_rustc)
  execute_process(
    COMMAND "${_rustc}" --crate-type staticlib --crate-name n5_std_probe
            --print native-static-libs --out-dir "${_probe_dir}" "${_probe_dir}/probe.rs"
    WORKING_DIRECTORY "${N5_SOURCE_DIR}"
    RESULT_VARIABLE _rc
    OUTPUT_QUIET
    ERROR_VARIABLE _err)
  if(_rc EQUAL 0 AND _err MATCHES "native-static-libs: ([^\r\n]*)")
    string(STRIP "${CMAKE_MATCH_1}" _std_libs)
  endif()
  file(REMOVE "${_probe_dir}/libn5_std_probe.a")
endif()
if(_std_libs STREQUAL "")
  message(WARNING "rustc printed no native-static-libs; using ${_fallback_libs}")
  set(_std_libs "${_fallback_libs}")
endif()
# The same library asked for by several crates needs naming once.
list(REMOVE_DUPLICATES _crate_libs)
list(REMOVE_DUPLICATES _crate_libs_cmake)
if(_crate_dirs)
  list(REMOVE_DUPLICATES _crate_dirs)
endif()
list(JOIN _crate_dirs " " _dirs_flags)
list(JOIN _crate_libs " " _libs)
string(STRIP "${_dirs_flags} ${_libs} ${_std_libs}" _libs)

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
separate_arguments(_std_libs_cmake UNIX_COMMAND "${_std_libs}")
set(N5_STATIC_LINK_LIBS_CMAKE ${_crate_libs_cmake} ${_std_libs_cmake})
configure_file("${N5_SOURCE_DIR}/cmake/n5.pc.in" "${N5_PACKAGE_DIR}/n5.pc" @ONLY)
configure_file("${N5_SOURCE_DIR}/cmake/n5Targets.cmake.in"
               "${N5_PACKAGE_DIR}/n5Targets.cmake" @ONLY)
