# Writes graphrw.1 and graphrw-COMMAND.1 for every command `graphrw --help`
# lists, with help2man from each command's --help (cmake -P; GRAPHRW, HELP2MAN, OUT).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST) in a script run with cmake -P
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${GRAPHRW} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "graphrw --help failed")
endif()
string(REGEX MATCH "Subcommands:\n.*" listing "${top}")
string(REGEX MATCHALL "\n  [a-z][a-z-]*" words "${listing}")
set(commands "")
foreach(w ${words})
  string(STRIP "${w}" w)
  list(APPEND commands ${w})
endforeach()
if(NOT commands)
  message(FATAL_ERROR "no commands in graphrw --help")
endif()
# Pages of commands the binary no longer has (a pass removed or renamed) go.
file(GLOB old_pages ${OUT}/graphrw-*.1)
foreach(page ${old_pages})
  get_filename_component(stem ${page} NAME_WE)
  string(REGEX REPLACE "^graphrw-" "" cmd "${stem}")
  if(NOT cmd IN_LIST commands)
    file(REMOVE ${page})
  endif()
endforeach()
execute_process(
  COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1 --name=rewrite\ ONNX\ graphs\ for\ Graphcore\ IPUs\ and\ any\ ONNX\ backend
          --output=${OUT}/graphrw.1 ${GRAPHRW}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed for graphrw")
endif()
foreach(cmd ${commands})
  # NAME: "graphrw-CMD - its summary" (the first line of its --help), as man -k lists it.
  execute_process(COMMAND ${GRAPHRW} ${cmd} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "graphrw ${cmd} --help failed")
  endif()
  string(REGEX MATCH "^[^\n]*" summary "${help}")
  string(REPLACE ";" "," summary "${summary}")  # one argument to help2man
  execute_process(
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=1 "--help-option=${cmd} --help"
            "--name=${summary}" --output=${OUT}/graphrw-${cmd}.1 ${GRAPHRW}
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man failed for graphrw ${cmd}")
  endif()
  # help2man names the page after the executable: the page is graphrw-CMD's.
  file(READ ${OUT}/graphrw-${cmd}.1 page)
  string(TOUPPER "${cmd}" upper)
  string(REPLACE ".TH GRAPHRW \"1\"" ".TH GRAPHRW-${upper} \"1\"" page "${page}")
  string(REPLACE ".SH NAME\ngraphrw \\-" ".SH NAME\ngraphrw-${cmd} \\-" page "${page}")
  file(WRITE ${OUT}/graphrw-${cmd}.1 "${page}")
endforeach()
