#pragma once
// Keeps OpenBLAS single-threaded while alive. Kiln's pool splits BLAS work itself (parallelFor
// tiles, one BLAS call each), so OpenBLAS's own threads would only compete with the pool's and
// busy-wait on its cores between calls. The previous setting comes back afterwards for other
// callers of OpenBLAS.
#include <cblas.h>

namespace kiln::kernels {

class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : previous_(openblas_get_num_threads()) {
    if (previous_ != 1) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (previous_ != 1) openblas_set_num_threads(previous_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int previous_;
};

}  // namespace kiln::kernels
