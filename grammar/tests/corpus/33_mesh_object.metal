#include <metal_stdlib>
using namespace metal;

struct Payload {
  uint count;
  float scale;
};

struct VOut {
  float4 position [[position]];
};

using Mesh = metal::mesh<VOut, void, 64, 126, topology::triangle>;

[[object]] void obj(object_data Payload& payload [[payload]],
                    mesh_grid_properties props,
                    uint tid [[thread_index_in_threadgroup]]) {
  if (tid == 0) {
    payload.count = 3;
    payload.scale = 1.0f;
    props.set_threadgroups_per_grid(uint3(1, 1, 1));
  }
}

[[mesh]] void msh(Mesh m, const object_data Payload& payload [[payload]],
                  uint tid [[thread_index_in_threadgroup]]) {
  if (tid < payload.count) {
    VOut v;
    v.position = float4(float(tid), 0.0f, 0.0f, payload.scale);
    m.set_vertex(tid, v);
  }
  if (tid == 0) m.set_primitive_count(1);
}
