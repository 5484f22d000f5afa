"""The program Nsight Compute profiles: each profiled entry `--launches` times (once for the full metric set, more
for the duration cross-check), after warm-up, inside its own NVTX range and profiler window (ncu runs with
--profile-from-start off, so only these launches are profiled).

    ncu --profile-from-start off --nvtx ... python workflow/scripts/profile_target.py --config config/config.yaml
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from pipeline import plan
from pipeline.call import check

ENTRIES = {"profile": plan.profile_entries, "premise": plan.premise_entries,
           "large_n": plan.large_n_entries, "duration": plan.duration_entries}


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--order", type=Path, required=True, help="where to write the profiled entries, in order")
    ap.add_argument("--launches", type=int, default=1, help="launches of each entry inside its window")
    ap.add_argument("--entries", choices=list(ENTRIES), default="profile",
                    help="the profiled entries (plan.profile), the premise entries (plan.profile.premise), the "
                         "long-sequence entries (plan.profile.large_n) or all three (duration)")
    a = ap.parse_args()
    cfg = plan.load_config(a.config)
    entries = ENTRIES[a.entries](cfg)
    profiled = []
    for e in entries:
        status, err, note, calls = check(e, seed=1234)
        print(f"profile target {e.key}: {status} {err if err is not None else note}", flush=True)
        if status != "ok":
            continue
        fn = calls[0]
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(e.key)
        torch.cuda.profiler.start()
        for _ in range(a.launches):
            fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        torch.cuda.nvtx.range_pop()
        profiled.append(e.key)
    a.order.write_text(json.dumps(profiled, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
