// STRATA_HD marks functions shared by host C++ and CUDA device code.
#pragma once

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif
