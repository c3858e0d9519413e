"""The built-in models, defined in code with seeded weights (this module imports torch).

Each factory returns an eval-mode ``torch.nn.Module`` whose ``example_shapes`` attribute lists
its input shapes, so the same weights come out of every call, in every process.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["convnet", "mlp", "transformer"]


def _seeded(module_factory: type[nn.Module], shapes: list[list[int]], seed: int) -> nn.Module:
    torch.manual_seed(seed)
    module = module_factory().eval()
    module.example_shapes = shapes  # type: ignore[assignment]
    return module


class _MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class _ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()

        def block(cin: int, cout: int, stride: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()
            )

        self.features = nn.Sequential(
            block(3, 32, 2), block(32, 64, 2), block(64, 64, 1), block(64, 128, 2), block(128, 128, 1)
        )
        self.head = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


class _EncoderBlock(nn.Module):
    """Pre-norm self-attention and MLP, written out so every exporter handles it."""

    def __init__(self, dim: int = 128, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class _Transformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(_EncoderBlock(), _EncoderBlock())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def mlp() -> nn.Module:
    """A 3-layer perceptron, 512 → 1024 → 1024 → 10 (1.6M parameters), batch 16."""
    return _seeded(_MLP, [[16, 512]], seed=1)


def convnet() -> nn.Module:
    """A 5-block convolutional classifier on 128×128 RGB images."""
    return _seeded(_ConvNet, [[1, 3, 128, 128]], seed=2)


def transformer() -> nn.Module:
    """Two pre-norm transformer encoder blocks, 128 tokens of width 128."""
    return _seeded(_Transformer, [[1, 128, 128]], seed=3)
