# Precompiled third-party headers. ONNX's generated protobuf classes, ONNX's
# schema registry, nlohmann::json, spdlog/fmt are most of what every
# translation unit parses: compiled once here, and reused by every graphrw
# library and the tool (same flags and definitions throughout).
option(GRAPHRW_PCH "Precompile the heavy third-party headers" ON)

set(GRAPHRW_PCH_HEADERS
  <algorithm> <functional> <map> <memory> <optional> <set> <string> <unordered_map> <unordered_set> <vector>
  <onnx/onnx_pb.h> <onnx/defs/schema.h> <nlohmann/json.hpp> <spdlog/spdlog.h>)

if(GRAPHRW_PCH)
  add_library(graphrw_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cpp)
  # The definitions graphrw_support gives every library, so the header is valid for all of them.
  target_compile_definitions(graphrw_pch PRIVATE GRAPHRW_VERSION="${PROJECT_VERSION}")
  target_link_libraries(graphrw_pch PRIVATE onnx onnx_proto protobuf::libprotobuf nlohmann_json::nlohmann_json
                                            spdlog::spdlog CLI11::CLI11 graphrw_warnings)
  target_precompile_headers(graphrw_pch PRIVATE ${GRAPHRW_PCH_HEADERS})
endif()

# A graphrw library or executable built with the shared precompiled header.
function(graphrw_use_pch target)
  if(GRAPHRW_PCH)
    target_precompile_headers(${target} REUSE_FROM graphrw_pch)
  endif()
endfunction()

# A target whose flags differ (the tests): its own precompiled header.
function(graphrw_own_pch target)
  if(GRAPHRW_PCH)
    target_precompile_headers(${target} PRIVATE ${GRAPHRW_PCH_HEADERS})
  endif()
endfunction()
