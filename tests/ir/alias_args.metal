#include <metal_stdlib>
using namespace metal;

// A static member of a struct template called through an alias of one of its instances: the
// member's constants take the alias's arguments. `Body` (in the kernel) passes the kernel's
// own ROWS, so `wide` folds in each specialisation; `Pair` (at file scope) gives ROWS = FOUR,
// a file constant.
constant constexpr int FOUR = 4;

template <int ROWS>
struct Tile {
  static constexpr bool wide = ROWS > 1;
  static int run(int x) {
    if (wide) {
      return x * ROWS;
    }
    return x;
  }
};

using Pair = Tile<FOUR>;

template <int ROWS>
kernel void alias_args(device int *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  using Body = Tile<ROWS>;
  out[gid] = Body::run(gid) + Pair::run(gid);
}

template [[host_name("alias_args_1")]] kernel void alias_args<1>(device int *, uint);
template [[host_name("alias_args_2")]] kernel void alias_args<2>(device int *, uint);
