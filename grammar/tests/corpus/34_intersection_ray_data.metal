#include <metal_stdlib>
#include <metal_raytracing>
using namespace metal;
using namespace raytracing;

struct Hit {
  float distance;
  uint id;
};

[[intersection(bounding_box)]]
bool sphere_hit(float3 origin [[origin]],
                float3 direction [[direction]],
                float min_distance [[min_distance]],
                float max_distance [[max_distance]],
                uint primitive_id [[primitive_id]],
                ray_data Hit& hit [[payload]]) {
  float t = dot(-origin, direction);
  if (t < min_distance || t > max_distance) return false;
  hit.distance = t;
  hit.id = primitive_id;
  return true;
}
