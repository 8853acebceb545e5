#include <metal_stdlib>
using namespace metal;

struct PixelData {
  half4 color [[color(0)]];
  float depth;
};

kernel void tile_resolve(imageblock<PixelData, imageblock_layout_explicit> block,
                         threadgroup_imageblock PixelData* data [[imageblock_data]],
                         ushort2 lid [[thread_position_in_threadgroup]],
                         texture2d<half, access::write> dst [[texture(0)]],
                         ushort2 tgid [[threadgroup_position_in_grid]]) {
  PixelData p = block.read(lid);
  data[lid.y * 16 + lid.x] = p;
  dst.write(p.color, uint2(tgid) * 16 + uint2(lid));
}
