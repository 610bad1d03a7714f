#include "driver/cli.h"

int main(int argc, char** argv) { return graphrw::cli::main(argc, argv); }
