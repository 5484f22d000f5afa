"""The list of measurements: config/config.yaml's sets expanded into entries (implementation x shape x tile)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path

from kernels.shapes import HEADLINE, Shape
from kernels.stages import (BASELINE, FINAL, GLUON_STAGES, STAGES, Tile, add_one_in, default_tile, extended,
                            is_gluon, last_ablations, leave_one_out, resolve_variant, stage_of, switches_label)

from . import config_check, keys

SETS = ("headline", "ablation", "bf16", "n_sweep", "qwen3", "tiles", "tuning")


@dataclass(frozen=True)
class Entry:
    set: str                   # the sets that ask for it, comma-separated (headline,n_sweep,qwen3)
    impl: str                  # "triton" or a PyTorch reference (torch-default, torch-flash, ...)
    variant: str               # stage / ablation name for triton; the impl again for torch
    shape: Shape
    tile: Tile | None = None   # triton only
    layout: str = ""           # Qwen3 model name, for the qwen3 set

    @property
    def switches(self) -> frozenset | None:
        return resolve_variant(self.variant) if self.impl == "triton" else None

    @property
    def key(self) -> str:
        return keys.entry(self.impl, self.variant, self.shape, self.tile)

    def row(self) -> dict:
        """The descriptive columns of a tidy row."""
        t, sw = self.tile, self.switches
        return dict(set=self.set, impl=self.impl, variant=self.variant,
                    stage=(stage_of(sw) or "") if sw is not None else "",
                    switches=switches_label(sw) if sw is not None else "", layout=self.layout,
                    **self.shape.as_dict(), block_m=t.block_m if t else "", block_n=t.block_n if t else "",
                    num_warps=t.num_warps if t else "", num_stages=t.num_stages if t else "")


def load_config(path: Path) -> dict:
    """The plan section of a config (config/config.yaml) or of a run's plan.yaml: a key given twice, a number that
    is not finite or a pair of bounds the wrong way round is refused (pipeline/config_check.py), as when the pipeline
    is parsed."""
    cfg = config_check.load_yaml(path)
    if not isinstance(cfg, dict) or "plan" not in cfg:
        raise ValueError(f"{path}: no 'plan' section (what the GPU measurement runs)")
    config_check.check_plan_schema(cfg["plan"], str(path))
    try:
        config_check.check_plan_values(cfg["plan"])
    except config_check.ConfigError as err:
        raise config_check.ConfigError(f"{path}: {err}") from None
    return cfg["plan"]


def timed_stages(m: dict) -> list:
    """The stages the stage sets (headline, bf16, n_sweep, qwen3) time, in the registry's order: plan.stages, where
    "gluon" stands for every Gluon stage (config/goal.yaml: the Triton leader and the Gluon stages, a run that fits a
    short lease), or every stage where the plan names none."""
    named = m.get("stages")
    if named is None:
        return list(STAGES)
    unknown = [s for s in named if s != "gluon" and s not in STAGES]
    if unknown:
        raise ValueError(f"plan.stages: {unknown} not stages; name stages of kernels.stages.STAGES "
                         f"({next(iter(STAGES))}..{list(STAGES)[-1]}) or gluon (every Gluon stage)")
    chosen = set(named) | (set(GLUON_STAGES) if "gluon" in named else set())
    return [s for s in STAGES if s in chosen]


def expand(m: dict, sets=SETS) -> list:
    """Entries in a fixed order (the interleaving order); a measurement asked for by several sets appears once, at
    its first place, with all their names."""
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        raise ValueError(f"unknown set(s) {unknown}; the sets are {list(SETS)}")
    torch_impls = list(m["torch_impls"])
    stages = timed_stages(m)
    out = []

    def own_tile(variant, shape):
        """Every stage and ablation variant runs at its own default tile (the article's, or ours from v8 on)."""
        return default_tile(resolve_variant(variant), shape.D, shape.N)

    def stages_and_torch(set_name, shape, layout=""):
        out.extend(Entry(set_name, "triton", v, shape, own_tile(v, shape), layout) for v in stages)
        out.extend(Entry(set_name, impl, impl, shape, None, layout) for impl in torch_impls)

    if "headline" in sets:
        stages_and_torch("headline", HEADLINE)
    if "ablation" in sets:
        for name, sw in {**leave_one_out(FINAL), **add_one_in(BASELINE), **extended(FINAL),
                         **last_ablations()}.items():
            if not stage_of(sw):  # v7-const_strides is v6 and v0+grid_order is v1: timed as stages
                out.append(Entry("ablation", "triton", name, HEADLINE, own_tile(name, HEADLINE)))
    if "bf16" in sets:
        stages_and_torch("bf16", Shape(**{**HEADLINE.as_dict(), "dtype": "bfloat16"}))
    if "n_sweep" in sets:
        for dtype in m.get("n_sweep_dtypes", [HEADLINE.dtype]):
            for n in m["n_sweep"]:
                stages_and_torch("n_sweep", Shape(**{**HEADLINE.as_dict(), "N": int(n), "dtype": dtype}))
    if "qwen3" in sets:
        for n in m.get("qwen3_N", [HEADLINE.N]):
            for model, lay in m["qwen3"].items():
                stages_and_torch("qwen3", Shape(**{**HEADLINE.as_dict(), **lay, "N": int(n)}), layout=model)
    if "tiles" in sets:
        t = m["tiles"]
        for variant in t["variants"]:
            resolve_variant(variant)
            for bm, bn, w, s in itertools.product(t["block_m"], t["block_n"], t["num_warps"], t["num_stages"]):
                out.append(Entry("tiles", "triton", variant, HEADLINE, Tile(bm, bn, w, s)))
    if "tuning" in sets and m.get("tuning"):
        # The recorded tuning run: our last stage at every tile of the grid, at each N of the headline layout, beside
        # cuDNN's and FA2's kernels at the same N. Its choice per N is data (kernels/tuned_tiles.csv).
        t = m["tuning"]
        for n in t["N"]:
            shape = Shape(**{**HEADLINE.as_dict(), "N": int(n)})
            for variant in t["variants"]:
                resolve_variant(variant)
                for bm, bn, w, s in itertools.product(t["block_m"], t["block_n"], t["num_warps"], t["num_stages"]):
                    out.append(Entry("tuning", "triton", variant, shape, Tile(bm, bn, w, s)))
            out.extend(Entry("tuning", impl, impl, shape) for impl in torch_impls)
    merged: dict = {}
    for e in out:
        first = merged.setdefault(e.key, e)
        if first is not e and e.set not in first.set.split(","):
            merged[e.key] = replace(first, set=f"{first.set},{e.set}", layout=first.layout or e.layout)
    return runnable(list(merged.values()), m)


def repeats(entry: Entry, m: dict) -> int:
    """How many times an entry is timed: the most that any of its sets asks for."""
    return max(int(m["repeats"].get(s, 1)) for s in entry.set.split(","))


def timing_order(entries: list, m: dict) -> list:
    """(repeat, entry) pairs in the order the bench times them: the whole list once per repeat (interleaved: drift
    shows as spread within an entry, not as a difference between entries), each run of consecutive entries of one
    shape taken in the list's order in even repeats and in reverse in odd ones (A B C, C B A, A B C, ...), so that no
    entry is always timed first or last among those it is compared with. In one fixed order (the runs up to run-32)
    v32, which runs v31's kernel above N = 512 and was timed right after it, was the faster of the two in every pair
    of run-31's repeats at N = 16384; with the order reversed every second round (probes/order-16384) it was not
    (the paper's paragraph on v32 in run-31 has the numbers). An entry leaves the order after its own repeats."""
    blocks = [list(b) for _, b in itertools.groupby(entries, key=lambda e: e.shape)]
    return [(r, e) for r in range(max((repeats(e, m) for e in entries), default=0))
            for block in blocks for e in (block if r % 2 == 0 else block[::-1]) if r < repeats(e, m)]


def profile_entries(m: dict) -> list:
    """The entries Nsight Compute profiles: the variants at the article's tile (of the stages, those the plan times),
    the extra (variant, tile) pairs, and the PyTorch kernels, all at the headline shape."""
    p = m["profile"]
    extra = [Entry("profile", "triton", x["variant"], HEADLINE,
                   Tile(x["block_m"], x["block_n"], x["num_warps"], x["num_stages"])) for x in p.get("extra", [])]
    for e in extra:
        resolve_variant(e.variant)
    timed = set(timed_stages(m))        # a stage the plan does not time is not profiled (config/goal.yaml)
    return runnable([Entry("profile", "triton", v, HEADLINE, default_tile(resolve_variant(v), HEADLINE.D, HEADLINE.N))
                     for v in p["variants"] if v not in STAGES or v in timed] + extra
                    + [Entry("profile", impl, impl, HEADLINE) for impl in p["torch_impls"]], m)


def premise_entries(m: dict) -> list:
    """Entries profiled where a claim's premise holds and the headline's does not: plan.profile.premise's variants
    at the article's tile, at the headline layout with each of its sequence lengths."""
    p = m["profile"].get("premise")
    if not p:
        return []
    return runnable([Entry("premise", "triton", v, Shape(**{**HEADLINE.as_dict(), "N": int(n)}), Tile())
                     for n in p["N"] for v in p["variants"]], m)


def large_n_entries(m: dict) -> list:
    """Entries profiled at long sequences (plan.profile.large_n), where the KV loop dominates: the variants at their
    own tile at each N, and the PyTorch kernels beside them, at the headline layout. What holds our last stages
    behind cuDNN there, in a few Nsight metrics."""
    p = m["profile"].get("large_n")
    if not p:
        return []
    out = []
    for n in p["N"]:
        shape = Shape(**{**HEADLINE.as_dict(), "N": int(n)})
        out += [Entry("large_n", "triton", v, shape, default_tile(resolve_variant(v), shape.D, shape.N))
                for v in p["variants"]]
        out += [Entry("large_n", impl, impl, shape) for impl in p["torch_impls"]]
    return runnable(out, m)


# ------------------------------------------------------------------------------ what the run's GPU can run
# A run's plan (its plan.yaml, written by the rule plan once the first GPU step, gpu_check, has recorded the GPU's
# compute capability in gpu.json) carries `arch`: the capability and the variants left out because that GPU cannot
# run them. Every expansion above leaves those out; a plan without `arch` (config/config.yaml, the runs sealed before
# it) expands to everything.
HOPPER_ONLY = ("a Gluon variant (kernels/gluon_fwd.py) is built of Hopper's warpgroup MMA and TMA: it runs on compute "
               "capability 9.x only (kernels.inputs.check_gluon_device, kernels.build.compile_gluon)")


def needs_hopper(switches) -> bool:
    """Whether a variant (its switches) runs on Hopper (compute capability 9.x) only: the Gluon stages and their
    variants, per kernels.stages.is_gluon. Every Triton variant compiles for the other architectures too (the build
    step compiles each for every arch of config build.archs)."""
    return is_gluon(switches)


def switches_run_on(switches, capability: str) -> bool:
    """Whether a variant (its switches) runs on a GPU of this compute capability ("8.0", "9.0")."""
    return not needs_hopper(switches) or str(capability).split(".")[0] == "9"


def runs_on(entry: Entry, capability: str) -> bool:
    """Whether the entry runs on a GPU of this compute capability; PyTorch's entries always do."""
    return entry.impl != "triton" or switches_run_on(entry.switches, capability)


def runnable(entries: list, m: dict) -> list:
    """The entries the plan's GPU runs: all of them for a plan without `arch`."""
    capability = (m.get("arch") or {}).get("capability")
    return entries if capability is None else [e for e in entries if runs_on(e, str(capability))]


def adapt(m: dict, capabilities) -> dict:
    """The plan for a GPU of these compute capabilities (gpu.json's, one per GPU seen): `arch` added, with the
    capability, the variants left out (in the plan's order) and why. One capability only (a run is of one GPU model);
    a Qwen3 end-to-end stage that the GPU cannot run is refused, not left out (the step has one stage)."""
    from .gpu_arch import sm

    caps = sorted({str(c) for c in capabilities})
    if len(caps) != 1:
        raise ValueError(f"the GPU's compute capability is {'not known' if not caps else f'not one: {caps}'} "
                         f"(gpu.json, rule gpu_check): the plan cannot say which stages this GPU runs")
    capability = caps[0]
    sm(capability)                                             # a capability, or ValueError
    base = {k: v for k, v in m.items() if k != "arch"}
    every = expand(base) + profile_entries(base) + premise_entries(base) + large_n_entries(base)
    skipped = list(dict.fromkeys(e.variant for e in every if not runs_on(e, capability)))
    stage = (base.get("qwen3_e2e") or {}).get("stage")
    if stage and not runs_on(Entry("qwen3_e2e", "triton", stage, HEADLINE), capability):
        raise ValueError(f"plan.qwen3_e2e.stage {stage} cannot run on this GPU (compute capability {capability}): "
                         f"{HOPPER_ONLY}; set plan.qwen3_e2e.stage to a Triton stage (e.g. v13)")
    return {**base, "arch": {"capability": capability, "skipped": skipped, "why": HOPPER_ONLY if skipped else ""}}


def skipped_of(plan_yaml: Path) -> dict:
    """A run's record of what its GPU could not run (its plan.yaml's `arch`): capability ("" where the run predates
    the record) and the variants skipped."""
    if not Path(plan_yaml).exists():
        return {"capability": "", "skipped": []}
    arch = (config_check.load_yaml(plan_yaml).get("plan") or {}).get("arch") or {}
    return {"capability": str(arch.get("capability") or ""), "skipped": list(arch.get("skipped") or [])}


def duration_entries(m: dict) -> list:
    """The entries of Nsight's duration pass, which the aggregate cross-checks against the kernel timer: every entry
    of the three other passes (profile, premise, large_n), each once, in that order."""
    seen: dict = {}
    for e in profile_entries(m) + premise_entries(m) + large_n_entries(m):
        seen.setdefault(e.key, e)
    return list(seen.values())


def check_plan(m: dict) -> list:
    """Expand the whole plan (every set, the profiled and the premise entries) and check every entry, so that a bad
    plan fails when the pipeline is parsed (a dry run), not inside a GPU job: unknown variants, shapes the kernel
    does not take; the stage of the Qwen3 end-to-end step (plan.qwen3_e2e); numbers that are not finite and pairs
    of bounds the wrong way round (min_samples > max_samples: pipeline/config_check.py). Returns the entries."""
    config_check.check_plan_values(m)
    e2e = m.get("qwen3_e2e") or {}
    if "stage" in e2e and e2e["stage"] not in STAGES:
        raise ValueError(f"plan.qwen3_e2e.stage: unknown stage {e2e['stage']!r}; the stages are {list(STAGES)}")
    timed = expand(m)
    timed_keys = {e.key for e in timed}
    untimed = [e.key for e in profile_entries(m) if e.key not in timed_keys]
    if untimed:
        raise ValueError(f"profiled entries that no bench set times (the cross-check needs both): {untimed}; add "
                         f"them to a set (e.g. plan.tiles) or drop them from plan.profile")
    entries = timed + profile_entries(m) + premise_entries(m) + large_n_entries(m)
    for e in entries:
        s = e.shape
        where = f"plan entry {e.key} (sets: {e.set})"
        if s.H % s.H_kv:
            raise ValueError(f"{where}: H={s.H} is not a multiple of H_kv={s.H_kv}; fix plan.qwen3 or the sets")
        if s.D not in (16, 32, 64, 128, 256):
            raise ValueError(f"{where}: head dim D={s.D} is not one the kernel takes (16, 32, 64, 128, 256)")
        if e.impl == "triton":
            try:
                e.switches
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
    return entries
