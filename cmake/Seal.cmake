# graphrw_sealed(TARGET): TARGET's sources may not edit the IR behind the
# Rewriter: cmake/seal.py runs before each compile (const_cast, casts to
# non-const pointers, keywords redefined) and the compiler refuses C-style casts
# that drop const. A launcher set for the whole build (ccache) still runs, after it.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
function(graphrw_sealed target)
  set(launcher ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/seal.py)
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    list(APPEND launcher ${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "${launcher}")
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Werror=cast-qual)
  endif()
endfunction()
