#include <metal_stdlib>
using namespace metal;

#define STEEL_CONST static constant constexpr const
#define STEEL_PRAGMA_UNROLL _Pragma("clang loop unroll(full)")

template <typename T, short BM, short BK>
struct BlockLoader {
  STEEL_CONST short n_reads = (BM * BK) / 32;
  STEEL_CONST short vec_size = n_reads < 4 ? n_reads : 4;

  const device T* src;
  threadgroup T* dst;

  void load_unsafe() const {
    STEEL_PRAGMA_UNROLL
    for (short i = 0; i < n_reads; i++) {
      dst[i] = src[i];
    }
  }
};

template <typename T>
[[kernel]] void gemm_load(const device T* A [[buffer(0)]],
                          uint lid [[thread_index_in_threadgroup]]) {
  threadgroup T As[32 * 16];
  BlockLoader<T, 32, 16> loader{A + lid, As + lid, nullptr};
  loader.load_unsafe();
}
