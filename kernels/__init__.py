"""FlashAttention-2 forward in Triton, the article's stages v0 ... v7 and their switches, and PyTorch references."""
from .attention import Launch, TileNotSupportedError, attention, plan_launch
from .references import SDPA_BACKENDS, reference_attention, sdpa
from .stages import ARTICLE_TILE, STAGES, SWITCHES, Stage, Switch, Tile, add_one_in, leave_one_out, variant_name

__all__ = ["attention", "plan_launch", "Launch", "TileNotSupportedError", "STAGES", "SWITCHES", "Stage", "Switch",
           "Tile", "ARTICLE_TILE", "leave_one_out", "add_one_in", "variant_name", "reference_attention", "sdpa",
           "SDPA_BACKENDS"]
