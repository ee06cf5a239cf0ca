# HDF5 support of the C library (option N5_HDF5, included by CMakeLists.txt).
#
# With N5_HDF5 ON (the default) the library is built with the cargo feature
# `hdf5`, whose -sys crate links the system libhdf5 (found by pkg-config, or
# under HDF5_DIR). This file finds libhdf5 at configure time the same way and
# stops with a message saying what to install when it is missing or older
# than 1.10.5, instead of leaving the failure to the middle of the cargo
# build, and never builds a library without HDF5 support silently. It sets:
#
#   N5_CARGO_FEATURE_ARGS  the cargo arguments of the library build
#   N5_CLI_FEATURE_ARGS    those of the n5 tool's build (the same library)
#   N5_HDF5_VERSION        the libhdf5 version found (empty when OFF)
#
# How the installed package names libhdf5 for static links (n5.pc
# Libs.private, n5Targets.cmake's n5::n5_static) follows from the build
# itself: cmake/n5CargoBuild.cmake reads the libraries and search paths the
# -sys crate asked for.

option(N5_HDF5 "Build libn5 with HDF5 support (cargo feature hdf5): needs libhdf5 >= 1.10.5" ON)

set(N5_CARGO_FEATURE_ARGS "")
set(N5_CLI_FEATURE_ARGS "")
set(N5_HDF5_VERSION "")
if(NOT N5_HDF5)
  message(STATUS "libn5 without HDF5 support (N5_HDF5 is OFF)")
  return()
endif()

set(_n5_hdf5_help
  "install libhdf5 (1.10.5 or newer) and pkg-config with `tests/setup.sh build` "
  "(Debian/Ubuntu: apt-get install libhdf5-dev pkg-config), or point the environment "
  "variable HDF5_DIR at an HDF5 installation, or configure with -DN5_HDF5=OFF for a "
  "libn5 without HDF5 support")
string(CONCAT _n5_hdf5_help ${_n5_hdf5_help})

# Where the headers are: as hdf5-metno-sys looks, HDF5_DIR first, else
# pkg-config's module hdf5, else the usual places (Debian's serial build
# lives in include/hdf5/serial).
set(_n5_hdf5_hints "")
if(DEFINED ENV{HDF5_DIR} AND NOT "$ENV{HDF5_DIR}" STREQUAL "")
  set(_n5_hdf5_from "HDF5_DIR=$ENV{HDF5_DIR}")
  find_path(N5_HDF5_INCLUDE_DIR H5public.h PATHS "$ENV{HDF5_DIR}/include" NO_DEFAULT_PATH
            DOC "The directory of libhdf5's H5public.h")
else()
  set(_n5_hdf5_from "pkg-config module hdf5")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(_n5_hdf5_pc QUIET hdf5)
    if(_n5_hdf5_pc_FOUND)
      set(_n5_hdf5_hints ${_n5_hdf5_pc_INCLUDE_DIRS})
    endif()
  endif()
  find_path(N5_HDF5_INCLUDE_DIR H5public.h HINTS ${_n5_hdf5_hints}
            PATH_SUFFIXES hdf5/serial hdf5
            DOC "The directory of libhdf5's H5public.h")
endif()
if(NOT N5_HDF5_INCLUDE_DIR)
  message(FATAL_ERROR "N5_HDF5 is ON (the default), but libhdf5 was not found "
                      "(${_n5_hdf5_from}, H5public.h): ${_n5_hdf5_help}.")
endif()

file(STRINGS "${N5_HDF5_INCLUDE_DIR}/H5public.h" _n5_hdf5_lines
     REGEX "^#define H5_VERS_(MAJOR|MINOR|RELEASE)[ \t]+[0-9]+")
set(_n5_hdf5_parts "")
foreach(_part MAJOR MINOR RELEASE)
  set(_value "")
  foreach(_line IN LISTS _n5_hdf5_lines)
    if(_line MATCHES "^#define H5_VERS_${_part}[ \t]+([0-9]+)")
      set(_value "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(_value STREQUAL "")
    message(FATAL_ERROR "Cannot read libhdf5's version from ${N5_HDF5_INCLUDE_DIR}/H5public.h: "
                        "${_n5_hdf5_help}.")
  endif()
  list(APPEND _n5_hdf5_parts "${_value}")
endforeach()
list(JOIN _n5_hdf5_parts "." N5_HDF5_VERSION)
if(N5_HDF5_VERSION VERSION_LESS "1.10.5")
  message(FATAL_ERROR "N5_HDF5 is ON (the default), but libhdf5 ${N5_HDF5_VERSION} "
                      "(${N5_HDF5_INCLUDE_DIR}) is older than 1.10.5, which libn5's HDF5 "
                      "support needs (chunk queries): ${_n5_hdf5_help}.")
endif()
message(STATUS "libn5 with HDF5 support: libhdf5 ${N5_HDF5_VERSION} (${N5_HDF5_INCLUDE_DIR})")

set(N5_CARGO_FEATURE_ARGS --features hdf5)
set(N5_CLI_FEATURE_ARGS --features n5/hdf5)
