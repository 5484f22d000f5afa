"""A kernel's signature as Triton's JIT computes it from the arguments of a launch, for compiling without a GPU
(kernels.build for the Triton kernel, kernels.gluon_fwd for the Gluon one)."""
from __future__ import annotations


def jit_specialize(kernel, kwargs: dict) -> tuple:
    """(signature, constexprs, attrs) of `kernel` (a @triton.jit or @gluon.jit function) for these arguments: a
    constexpr parameter its value, a TMA descriptor e.g. 'tensordesc<fp16[1, 1, 64, 128],...>', an integer 'i32' with
    its divisibility by 16 as an attribute, or, equal to 1, a constant (as the JIT makes it)."""
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.runtime.jit import native_specialize_impl

    signature, constexprs, attrs = {}, {}, {}
    for i, param in enumerate(kernel.params):
        value = kwargs[param.name]
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(i,)] = value
            continue
        ty, spec = native_specialize_impl(CUDABackend, value, False, True, True)
        signature[param.name] = ty
        if ty == "constexpr":
            constexprs[(i,)] = spec
        elif spec:
            attrs[(i,)] = CUDABackend.parse_attr(spec)
    return signature, constexprs, attrs
