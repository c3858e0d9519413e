"""Building blocks and the seeded-weights recipe shared by the zoo's architectures."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

__all__ = [
    "ConvBNAct",
    "InvertedResidual",
    "MOBILENET_V2_SETTINGS",
    "init_weights",
    "make_divisible",
    "mobilenet_v2_layers",
    "seeded",
]

#: MobileNetV2's inverted-residual stages: (expansion t, channels c, repeats n, first stride s).
MOBILENET_V2_SETTINGS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def make_divisible(value: float, divisor: int = 8) -> int:
    """Round a channel count to a multiple of ``divisor``, never more than 10% below it."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class ConvBNAct(nn.Sequential):
    """Convolution (no bias), BatchNorm, then an optional activation, with "same" padding."""

    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int = 3,
        stride: int = 1,
        groups: int = 1,
        act: type[nn.Module] | None = nn.ReLU6,
    ) -> None:
        layers: list[nn.Module] = [
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)
        self.linear = act is None


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, linear 1x1 projection (+ skip)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [ConvBNAct(cin, hidden, 1)]
        layers += [
            ConvBNAct(hidden, hidden, 3, stride, groups=hidden),
            ConvBNAct(hidden, cout, 1, act=None),
        ]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the block (plus the input when it is a residual block)."""
        return x + self.conv(x) if self.residual else self.conv(x)


def mobilenet_v2_layers() -> list[nn.Module]:
    """MobileNetV2's (width 1.0) feature layers: stem, 17 inverted residuals, 1x1 conv to 1280."""
    cin = 32
    layers: list[nn.Module] = [ConvBNAct(3, cin, 3, 2)]
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        cout = make_divisible(c)
        for i in range(n):
            layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
            cin = cout
    layers.append(ConvBNAct(cin, 1280, 1))
    return layers


def init_weights(module: nn.Module) -> None:
    """Draw every parameter and normalisation statistic from the current torch RNG.

    Variance-preserving draws keep random-weight activations in a sane range (finite, not all
    zero), so comparing one runtime's outputs with another's means something. Normalisation
    layers get non-trivial affine parameters and running statistics on purpose: an exporter that
    folds BatchNorm wrongly then changes the outputs instead of hiding behind an identity.
    """
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.normal_(m.bias, 0.0, 0.02)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 1.0 / math.sqrt(m.in_features))
            if m.bias is not None:
                nn.init.normal_(m.bias, 0.0, 0.02)
        elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d, nn.LayerNorm)):
            if m.weight is not None:
                nn.init.uniform_(m.weight, 0.8, 1.2)
                nn.init.normal_(m.bias, 0.0, 0.05)
            if getattr(m, "running_mean", None) is not None:
                nn.init.normal_(m.running_mean, 0.0, 0.05)
                nn.init.uniform_(m.running_var, 0.8, 1.2)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 1.0)
    with torch.no_grad():
        for m in module.modules():
            # Kaiming's ReLU gain doubles the variance where no ReLU halves it again: without
            # this, stacked linear bottlenecks and residual sums grow the logits into the 100s.
            if isinstance(m, ConvBNAct) and m.linear:
                m[0].weight.mul_(math.sqrt(0.5))


def seeded(
    build: Callable[[], nn.Module],
    seed: int,
    shapes: list[list[int]],
    dtypes: list[str] | None = None,
) -> nn.Module:
    """Build ``build()`` under ``torch.manual_seed(seed)``, draw its weights, set eval mode.

    Sets the factory contract's ``example_shapes`` (and ``example_dtypes``) attributes.
    """
    torch.manual_seed(seed)
    module = build()
    init_weights(module)
    module.eval()
    module.example_shapes = shapes  # type: ignore[assignment]
    if dtypes is not None:
        module.example_dtypes = dtypes  # type: ignore[assignment]
    return module
