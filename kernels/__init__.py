"""FlashAttention-2 forward in Triton, its stages (kernels.STAGES: the article's, then ours) and their switches,
and PyTorch references.

The stage registry (kernels.stages) and the shapes import neither torch nor Triton; the kernel, its launcher and
the references load on first use, so that the pipeline's parse and the figure scripts do not import them.
"""
import importlib

from .stages import (ARTICLE_TILE, BASELINE, FINAL, STAGES, SWITCHES, Stage, Switch, Tile, add_one_in, leave_one_out,
                     variant_name)

_LAZY = {"attention": ".launcher", "plan_launch": ".launcher", "Launch": ".launcher",
         "TileNotSupportedError": ".launcher", "reference_attention": ".references", "sdpa": ".references",
         "SDPA_BACKENDS": ".references", "plain_attention": ".references", "attention_op": ".op"}

__all__ = ["attention", "plan_launch", "Launch", "TileNotSupportedError", "STAGES", "SWITCHES", "Stage", "Switch",
           "Tile", "ARTICLE_TILE", "BASELINE", "FINAL", "leave_one_out", "add_one_in", "variant_name",
           "reference_attention", "sdpa", "plain_attention", "SDPA_BACKENDS", "attention_op"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
