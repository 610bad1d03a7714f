// Deterministic crash points, for the tests of atomic outputs: with
// GRAPHRW_FAULT set, the process kills itself with SIGKILL (what kill -9
// does) at the point it names:
//   write:N   once N bytes of output (model and external data files) are written
//   rename    just before an output's temporary file is renamed into place
//   renamed   just after
// Unset (always, outside tests), each point costs a branch.
#pragma once

#include <cstddef>

namespace graphrw::fault {

// Called with the size of each chunk written to an output file.
void wrote(size_t bytes);
// Called at a named point ("rename", "renamed").
void at(const char* point);

}  // namespace graphrw::fault
