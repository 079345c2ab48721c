#include <iostream>

#include "app/cli.hpp"
#include "core/interrupt.hpp"
#include "core/openmp_policy.hpp"

int main(int argc, char** argv) {
  dsgd::restart_with_bounded_openmp_spinning(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  // SIGINT / SIGTERM stop what dsgd started and keep what it has (docs/errors.md "Interrupts").
  dsgd::Interrupt interrupt;
  const dsgd::InterruptHandlers handlers(interrupt);
  return dsgd::app::run(args, std::cout, std::cerr, "", &interrupt);
}
