# Warning flags live in an INTERFACE target that graphrw's own targets link.
add_library(graphrw_warnings INTERFACE)
target_compile_options(graphrw_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough)
if(GRAPHRW_DEV)
  target_compile_options(graphrw_warnings INTERFACE -Werror)
endif()
if(GRAPHRW_SANITIZE)
  target_compile_options(graphrw_warnings INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(graphrw_warnings INTERFACE -fsanitize=address,undefined)
endif()
