"""`attention` as a PyTorch operator (kernels/op.py), on the CPU in Triton's interpreter: torch.library's own checks
of the registration (opcheck: schema, fake implementation, autograd registration, AOT dispatch), the same output as
the plain call, tracing with torch.compile(fullgraph=True) and torch.export with the operator as one node."""
import pytest
import torch

import kernels
from kernels import attention, attention_op
from kernels.stages import FINAL, OUR_STAGES

OP = torch.ops.fa2_stages.attention


def qkv(seed=0, B=1, H=4, H_kv=2, N=33, D=32):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, h, N, D, generator=g).half() for h in (H, H_kv, H_kv))


@pytest.mark.parametrize("stage", [FINAL, OUR_STAGES[0]])
def test_opcheck(stage):
    q, k, v = qkv()
    torch.library.opcheck(OP.default, (q, k, v, True, stage, None))
    torch.library.opcheck(OP.default, (q, k, v, False, stage, 0.2))


def test_the_operator_is_the_plain_call():
    q, k, v = qkv(1)
    assert torch.equal(attention_op(q, k, v, causal=True, stage=FINAL), attention(q, k, v, causal=True, stage=FINAL))
    assert kernels.attention_op is attention_op


def test_the_fake_implementation_gives_the_output_and_refuses_what_the_kernel_refuses():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q, k, v = (torch.empty(2, h, 40, 64, dtype=torch.bfloat16) for h in (8, 2, 2))
        out = OP(q, k, v, True, FINAL, None)
        assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
        with pytest.raises(ValueError, match="unknown stage 'v99'"):
            OP(q, k, v, True, "v99", None)
        with pytest.raises(ValueError, match="do not fit"):
            OP(q, k[:, :, :30], v[:, :, :30], True, FINAL, None)


class Block(torch.nn.Module):
    """A small attention block: projections around the operator."""

    def __init__(self, D=32, H=4, H_kv=2):
        super().__init__()
        self.H, self.H_kv, self.D = H, H_kv, D
        self.q = torch.nn.Linear(D, H * D, dtype=torch.float16)
        self.kv = torch.nn.Linear(D, 2 * H_kv * D, dtype=torch.float16)

    def forward(self, x):
        B, N, _ = x.shape
        q = self.q(x).view(B, N, self.H, self.D).transpose(1, 2).contiguous()
        k, v = self.kv(x).view(B, N, 2, self.H_kv, self.D).permute(2, 0, 3, 1, 4).contiguous().unbind(0)
        return attention_op(q, k, v, causal=True, stage=FINAL).transpose(1, 2).reshape(B, N, self.H * self.D)


@torch.no_grad()
def test_compile_traces_the_model_in_one_graph():
    torch.manual_seed(0)
    block, x = Block(), torch.randn(2, 24, 32, dtype=torch.float16)
    eager = block(x)
    explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), eager)


@torch.no_grad()
def test_export_holds_the_operator_as_one_node():
    torch.manual_seed(0)
    block, x = Block(), torch.randn(1, 17, 32, dtype=torch.float16)
    exported = torch.export.export(block, (x,))
    nodes = [n for n in exported.graph.nodes if n.op == "call_function" and "fa2_stages" in str(n.target)]
    assert len(nodes) == 1
    assert torch.equal(exported.module()(x), block(x))
