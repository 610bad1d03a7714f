# Warning flags live in an INTERFACE target that graphrw's own targets link.
add_library(graphrw_warnings INTERFACE)
target_compile_options(graphrw_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough)
if(GRAPHRW_DEV)
  target_compile_options(graphrw_warnings INTERFACE -Werror)
endif()
if(GRAPHRW_SANITIZE)
  # Any undefined behaviour fails the run; the CLI frees its model at exit (no deliberate leak).
  target_compile_options(graphrw_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=undefined
                         -fno-omit-frame-pointer)
  target_compile_definitions(graphrw_warnings INTERFACE GRAPHRW_SANITIZE=1)
  target_link_options(graphrw_warnings INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=undefined)
endif()
if(GRAPHRW_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GRAPHRW_FUZZ needs Clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  target_compile_options(graphrw_warnings INTERFACE -fsanitize=fuzzer-no-link)
endif()
