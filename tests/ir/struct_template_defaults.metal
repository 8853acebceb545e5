#include <metal_stdlib>
using namespace metal;

// A struct template's defaults that name its other parameters (MLX steel's n_reads, TCOLS)
// fold where an object of it is made: its member functions read them as constants.
template <short BCOLS, short tgp_size, short n_reads = BCOLS * 8 / tgp_size,
          short TCOLS = BCOLS / n_reads>
struct Loader {
  threadgroup float* dst;
  Loader(threadgroup float* d, uint lid) : dst(d + (lid / TCOLS) * BCOLS + lid % TCOLS) {}
  void fill() {
    for (short j = 0; j < n_reads; j++) dst[j] = 0.0f;
  }
};

kernel void struct_template_defaults(device float* out [[buffer(0)]],
                                     uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float tile[128];
  Loader<16, 64> l(tile, lid);
  l.fill();
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid] = tile[lid];
}
