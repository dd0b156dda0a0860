# MpitraceWrap.cmake: generate PMPI wrappers with `mpitrace wrap` in a CMake
# build, as wrap.py's WrapConfig.cmake does with wrap.py.
#
#   list(APPEND CMAKE_MODULE_PATH /path/to/mpitrace/cmake)
#   find_package(MPI REQUIRED COMPONENTS C)   # optional, see below
#   include(MpitraceWrap)
#
#   add_wrapped_file(wrappers.c wrappers.w -f -g)
#   add_library(tool SHARED ${CMAKE_CURRENT_BINARY_DIR}/wrappers.c)
#   target_link_libraries(tool MPI::MPI_C)
#
# add_wrapped_file(<out> <in> [flags...])
#   Adds a custom command that generates <out> (relative to the current
#   binary directory) from the template <in> (relative to the current source
#   directory) with `mpitrace wrap [flags...] <in> -o <out>`, marks <out>
#   GENERATED and lists it for `make clean`. <out> is regenerated when <in>
#   or the mpitrace executable changes.
#
#   Every flag is passed (WrapConfig.cmake passes only the first). Without
#   flags, the WRAP_FLAGS source file property of <in> is used, else the
#   WRAP_FLAGS variable (a list or a space-separated string), as in
#   WrapConfig.cmake.
#
#   mpi.h is read with MPI_C_COMPILER when it is set (FindMPI sets it);
#   else, when FindMPI gave include directories (MPI_C_INCLUDE_DIRS, or the
#   older MPI_C_INCLUDE_PATH/MPI_INCLUDE_PATH), with CMAKE_C_COMPILER and
#   those directories as -I; else with mpitrace's default, mpicc. A -c in
#   the flags comes later on the command line and wins. Unlike
#   WrapConfig.cmake, C++ outputs also read mpi.h with the C compiler (the
#   declarations are the same; extern "C" guards are in the output).
#
# Variables:
#   MPITRACE_EXECUTABLE  the mpitrace program (cache variable; found on PATH
#                        and next to this module's mpitrace checkout's bin/
#                        when not set)

if(NOT MPITRACE_WRAP_LOADED)
  set(MPITRACE_WRAP_LOADED TRUE)

  if(NOT MPITRACE_EXECUTABLE)
    find_program(MPITRACE_EXECUTABLE mpitrace
      HINTS "${CMAKE_CURRENT_LIST_DIR}/../bin"
      DOC "the mpitrace program, for add_wrapped_file()")
  endif()
  if(NOT MPITRACE_EXECUTABLE)
    message(FATAL_ERROR "MpitraceWrap: mpitrace not found: build it (make build) and put it on PATH, or set MPITRACE_EXECUTABLE")
  endif()

  function(add_wrapped_file file_name wrapper_name)
    set(file_path    "${CMAKE_CURRENT_BINARY_DIR}/${file_name}")
    set(wrapper_path "${CMAKE_CURRENT_SOURCE_DIR}/${wrapper_name}")
    if(IS_ABSOLUTE "${file_name}")
      set(file_path "${file_name}")
    endif()
    if(IS_ABSOLUTE "${wrapper_name}")
      set(wrapper_path "${wrapper_name}")
    endif()

    # The flags: all of them.
    if(ARGN)
      set(wrap_flags ${ARGN})
    else()
      get_source_file_property(wrap_flags "${wrapper_name}" WRAP_FLAGS)
      if(wrap_flags STREQUAL "NOTFOUND")
        set(wrap_flags "")
        if(DEFINED WRAP_FLAGS AND NOT WRAP_FLAGS STREQUAL "")
          set(wrap_flags ${WRAP_FLAGS})
        endif()
      endif()
      if(wrap_flags MATCHES " ")
        separate_arguments(wrap_flags UNIX_COMMAND "${wrap_flags}")
      endif()
    endif()

    # The compiler that reads mpi.h, and its include directories.
    set(wrap_compiler "")
    set(wrap_includes "")
    set(mpi_includes ${MPI_C_INCLUDE_DIRS})
    if(NOT mpi_includes)
      set(mpi_includes ${MPI_C_INCLUDE_PATH})
    endif()
    if(NOT mpi_includes)
      set(mpi_includes ${MPI_INCLUDE_PATH})
    endif()
    if(MPI_C_COMPILER)
      set(wrap_compiler -c "${MPI_C_COMPILER}")
    elseif(mpi_includes)
      set(wrap_compiler -c "${CMAKE_C_COMPILER}")
      foreach(dir IN LISTS mpi_includes)
        list(APPEND wrap_includes -I "${dir}")
      endforeach()
    endif()

    set(wrap_depends "${wrapper_path}")
    if(IS_ABSOLUTE "${MPITRACE_EXECUTABLE}" AND EXISTS "${MPITRACE_EXECUTABLE}")
      list(APPEND wrap_depends "${MPITRACE_EXECUTABLE}")
    endif()

    set_source_files_properties("${file_path}" PROPERTIES GENERATED TRUE)
    add_custom_command(
      OUTPUT  "${file_path}"
      COMMAND "${MPITRACE_EXECUTABLE}" wrap ${wrap_compiler} ${wrap_includes} ${wrap_flags} "${wrapper_path}" -o "${file_path}"
      WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
      DEPENDS ${wrap_depends}
      COMMENT "Generating C code for ${file_name} from ${wrapper_name} (mpitrace wrap)"
      VERBATIM)

    if(CMAKE_VERSION VERSION_LESS 3.15)
      set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_MAKE_CLEAN_FILES "${file_path}")
    else()
      set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${file_path}")
    endif()
  endfunction()
endif()
