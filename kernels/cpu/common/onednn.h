#pragma once
// What oneDNN (Debian's libdnnl) runs here; its kernels sit behind the CPU backend's onednn tactics.
#include <string>

namespace kiln::kernels {

// "oneDNN 2.6.3, avx512_core": the library version and the instruction set its JIT targets here.
std::string oneDnnDescription();

}  // namespace kiln::kernels
