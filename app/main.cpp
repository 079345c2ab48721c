#include <iostream>

#include "app/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return dsgd::app::run(args, std::cout, std::cerr);
}
