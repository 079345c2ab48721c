#include <iostream>

#include "app/cli.hpp"
#include "core/interrupt.hpp"
#include "core/process_environment.hpp"

int main(int argc, char** argv) {
  dsgd::set_process_environment(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  // SIGINT / SIGTERM stop what dsgd started and keep what it has (docs/errors.md "Interrupts").
  dsgd::Interrupt interrupt;
  const dsgd::InterruptHandlers handlers(interrupt);
  return dsgd::app::run(args, std::cout, std::cerr, "", &interrupt);
}
