#include <iostream>
#include "runtime/capabilities.h"
int main() { std::cout << tfm::describe(tfm::probe_capabilities()); }
