"""The PyTorch operator on a GPU (run on the GPU machine with TRITON_INTERPRET=0; skipped elsewhere, saying why):
a model around it compiled with torch.compile(fullgraph=True) gives the eager output, and a CUDA graph captured of it
replays to the eager output, for the article's last stage, our leading Triton one (host-made TMA descriptors) and
every Gluon stage."""
import os

import pytest
import torch

from kernels.stages import FINAL, GLUON_STAGES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1",
                                reason="needs a CUDA GPU and TRITON_INTERPRET=0: run on the GPU machine")
STAGES = [FINAL, "v13", *GLUON_STAGES]


def model(stage):
    from kernels import attention_op

    def run(q, k, v):
        return attention_op(q * 1.0, k, v, causal=True, stage=stage) + 1.0
    return run


def inputs(seed=0, N=1000):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return tuple(torch.randn(2, h, N, 128, device="cuda", generator=g).half() for h in (16, 8, 8))


@pytest.mark.parametrize("stage", STAGES)
@torch.no_grad()
def test_compiled_model_gives_the_eager_output(stage):
    # each stage compiles `run`'s code object again: without a reset the 9th stage in a process hits Dynamo's
    # recompile limit (8), which fullgraph turns into a failure (data/nvidia-h200/probes/gpu-tests-23)
    torch._dynamo.reset()
    q, k, v = inputs()
    eager = model(stage)(q, k, v)
    compiled = torch.compile(model(stage), fullgraph=True)
    assert torch.equal(compiled(q, k, v), eager)


@pytest.mark.parametrize("stage", STAGES)
@torch.no_grad()
def test_cuda_graph_replay_gives_the_eager_output(stage):
    q, k, v = inputs()
    run = model(stage)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                 # warm-up (compiles, caches the plan) off the capture
        run(q, k, v)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = run(q, k, v)
    fresh = inputs(seed=1)                       # new values into the captured inputs, then replay
    eager = run(*fresh)
    for static, new in zip((q, k, v), fresh):
        static.copy_(new)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)
