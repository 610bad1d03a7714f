// graphrw's command line. tools/graphrw/main.cpp only calls this.
#pragma once

namespace graphrw::cli {

int main(int argc, char** argv);

}  // namespace graphrw::cli
