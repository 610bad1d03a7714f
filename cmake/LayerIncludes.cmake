# graphrw_layer_includes(TARGET PREFIX FOLDER): TARGET's headers are included
# as "PREFIX/name.h". The target's public include folder holds one entry, a
# link named PREFIX to FOLDER, so a target sees a layer's headers only when it
# links that layer (and a header of one layer can share its name with
# another's: "fold/fold.h", "passes/fold/fold.h").
function(graphrw_layer_includes target prefix folder)
  set(root ${PROJECT_BINARY_DIR}/layer-include/${target})
  get_filename_component(parent ${root}/${prefix} DIRECTORY)  # a prefix may have folders: target/popart
  file(MAKE_DIRECTORY ${parent})
  if(NOT IS_SYMLINK ${root}/${prefix})
    file(CREATE_LINK ${folder} ${root}/${prefix} SYMBOLIC)
  endif()
  target_include_directories(${target} PUBLIC ${root})
endfunction()
