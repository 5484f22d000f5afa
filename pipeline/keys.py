"""Entry keys: the one text that names a measurement in every tidy table and report, made and read only here.

A bench, profile or timer-check entry is `impl|variant|B,H,H_kv,N,D|dtype|causal|tile`: `triton|v7|2,16,8,1024,128|
float16|causal|32x32w4s3`, or `torch-cudnn|torch-cudnn|...|-` for a PyTorch backend (no tile). A correctness case of
the verify step has no impl and may name the memory layout of its inputs: `v7|1,4,2,77,64|float16|full|32x32w4s3`,
`...|bnhd`.
"""
from __future__ import annotations

from dataclasses import dataclass

SEP = "|"
NO_TILE = "-"


@dataclass(frozen=True)
class Key:
    """The parts of an entry key."""

    impl: str
    variant: str
    B: int
    H: int
    H_kv: int
    N: int
    D: int
    dtype: str
    causal: bool
    tile: str        # BMxBNwWARPSsSTAGES, or NO_TILE


def _shape_text(shape) -> str:
    return f"{shape.B},{shape.H},{shape.H_kv},{shape.N},{shape.D}"


def _causal_text(causal: bool) -> str:
    return "causal" if causal else "full"


def entry(impl: str, variant: str, shape, tile=None) -> str:
    """The key of a measurement: `shape` a kernels.shapes.Shape, `tile` a kernels.stages.Tile or None."""
    return SEP.join([impl, variant, _shape_text(shape), shape.dtype, _causal_text(shape.causal),
                     tile.label() if tile is not None else NO_TILE])


def case(variant: str, shape, tile, layout: str = "bhnd") -> str:
    """The key of a correctness case (the verify step): the variant, shape, dtype, mask, tile, and the memory layout
    of q, k, v where it is not (B, H, N, D)."""
    parts = [variant, _shape_text(shape), shape.dtype, _causal_text(shape.causal), tile.label()]
    return SEP.join(parts + ([] if layout == "bhnd" else [layout]))


def parse(key: str) -> Key:
    """The parts of an entry key; raises naming the key if it is not one."""
    parts = key.split(SEP)
    try:
        impl, variant, shape, dtype, causal, tile = parts
        B, H, H_kv, N, D = (int(x) for x in shape.split(","))
    except ValueError:
        raise ValueError(f"{key!r} is not an entry key (impl|variant|B,H,H_kv,N,D|dtype|causal|tile)") from None
    if causal not in ("causal", "full"):
        raise ValueError(f"{key!r}: the mask must read 'causal' or 'full', not {causal!r}")
    return Key(impl, variant, B, H, H_kv, N, D, dtype, causal == "causal", tile)


def renamed(key: str, variant: str) -> str:
    """The same key with another variant name (the registry's name of the same kernel today)."""
    parts = key.split(SEP)
    parse(key)
    return SEP.join([parts[0], variant, *parts[2:]])


def field(keys, name: str):
    """One part of each key of a pandas column (`N`, `tile`, `variant`, ...), typed as Key has it. (pandas is not
    imported here: the Nsight report reader, which uses this module, must not load it beside NVIDIA's library.)"""
    return keys.map(lambda k: getattr(parse(k), name))
