#include <metal_stdlib>
using namespace metal;

namespace kl {

enum class Op : uint { Add = 0, Mul = 1 };

struct Complex {
  float re, im;
  Complex() thread = default;
  constexpr Complex(float r, float i) thread : re(r), im(i) {}
  Complex operator*(const thread Complex& o) const thread {
    return Complex(re * o.re - im * o.im, re * o.im + im * o.re);
  }
  Complex operator+(const thread Complex& o) const thread { return Complex(re + o.re, im + o.im); }
};

static_assert(sizeof(Complex) == 8, "Complex must be two floats");

} // namespace kl

kernel void cmul(device const kl::Complex* a [[buffer(0)]],
                 device const kl::Complex* b [[buffer(1)]],
                 device kl::Complex* out [[buffer(2)]],
                 constant kl::Op& op [[buffer(3)]],
                 uint gid [[thread_position_in_grid]]) {
  kl::Complex x = a[gid], y = b[gid];
  out[gid] = op == kl::Op::Add ? x + y : x * y;
}
