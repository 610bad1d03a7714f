# Writes a C++ source that holds a file's text as a string_view.
# Usage: cmake -DINPUT=... -DOUTPUT=... -DSYMBOL=... -P EmbedFile.cmake
file(READ "${INPUT}" content)
file(WRITE "${OUTPUT}" "#include <string_view>\nnamespace graphrw::embedded {\nextern const std::string_view ${SYMBOL};\nconst std::string_view ${SYMBOL} = R\"graphrw_embed(${content})graphrw_embed\";\n}\n")
