// Macros shared by the kernels next to this header (only #define lines are read).
#pragma once
#include "26_nested_header.h"

#define KL_KERNEL_ATTRS [[kernel]]
#define instantiate_axpy(tname, type) \
  KL_INSTANTIATE("axpy_" #tname, axpy, type)
