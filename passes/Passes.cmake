# One pass per file; they are compiled into graphrw_lib (lib/CMakeLists.txt).
set(GRAPHRW_PASS_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/expand.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/replace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/outline.cpp
)
