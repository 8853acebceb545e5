#pragma once
#include "26_local_header_macros.h"
#define KL_INSTANTIATE(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#define KL_CONST static constant constexpr const
