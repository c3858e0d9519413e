"""Dense-prediction networks (an image in, an image-sized map out), with seeded weights.

- :func:`unet`: a small U-Net of the person-segmentation kind (one channel of mask logits).
- :func:`style_transfer`: Johnson et al.'s fast neural style transfer network.

Between them they cover the ops that classifiers lack: transposed convolutions, nearest
upsampling, skip concatenations, instance normalisation and reflection padding.
"""

from __future__ import annotations

import torch
from torch import nn

from benchlab.zoo.archs._common import ConvBNAct, seeded

__all__ = ["StyleTransferNet", "UNet", "style_transfer", "unet"]


class _DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(ConvBNAct(cin, cout, act=nn.ReLU), ConvBNAct(cout, cout, act=nn.ReLU))


class UNet(nn.Module):
    """U-Net: four 2x downsamplings, transposed-conv upsampling, skip concatenations.

    Channels double from ``base`` at each level (8-16-32-64, 128 at the bottom); the head is a
    1x1 convolution to ``classes`` channels of logits at the input resolution.
    """

    def __init__(self, base: int = 8, classes: int = 1) -> None:
        super().__init__()
        widths = [base * 2**i for i in range(5)]
        self.down = nn.ModuleList([_DoubleConv(3, widths[0])])
        self.down.extend(_DoubleConv(widths[i], widths[i + 1]) for i in range(4))
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList(
            nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2) for i in reversed(range(4))
        )
        self.merge = nn.ModuleList(
            _DoubleConv(2 * widths[i], widths[i]) for i in reversed(range(4))
        )
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Per-pixel mask logits, ``N x classes x H x W``."""
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else self.pool(x))
            skips.append(x)
        skips.pop()  # the bottleneck output is x itself
        for up, merge in zip(self.up, self.merge, strict=True):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


class _ConvIN(nn.Sequential):
    """Reflection pad, convolution, affine instance norm, optional ReLU (Johnson's layer)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, relu: bool = True):
        layers: list[nn.Module] = [
            nn.ReflectionPad2d(kernel // 2),
            nn.Conv2d(cin, cout, kernel, stride),
            nn.InstanceNorm2d(cout, affine=True),
        ]
        if relu:
            layers.append(nn.ReLU())
        super().__init__(*layers)


class _Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            _ConvIN(channels, channels, 3), _ConvIN(channels, channels, 3, relu=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


class StyleTransferNet(nn.Module):
    """Johnson, Alahi & Fei-Fei (2016): the image transformation network, as in pytorch/examples.

    9x9 stem, two stride-2 convolutions, five residual blocks at 128 channels, two
    nearest-upsample + convolution stages (instead of transposed convolutions, which leave
    checkerboard artefacts), a 9x9 convolution back to RGB.
    """

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            _ConvIN(3, 32, 9), _ConvIN(32, 64, 3, 2), _ConvIN(64, 128, 3, 2)
        )
        self.residuals = nn.Sequential(*(_Residual(128) for _ in range(5)))
        self.decoder = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="nearest"), _ConvIN(128, 64, 3),
            nn.Upsample(scale_factor=2, mode="nearest"), _ConvIN(64, 32, 3),
            nn.ReflectionPad2d(4), nn.Conv2d(32, 3, 9),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The stylised image, same shape as the input."""
        return self.decoder(self.residuals(self.encoder(x)))


def unet() -> nn.Module:
    """A small U-Net (base width 8) for person segmentation, 1x3x256x256 → 1x1x256x256 logits."""
    return seeded(UNet, seed=201, shapes=[[1, 3, 256, 256]])


def style_transfer() -> nn.Module:
    """Johnson et al.'s fast style transfer network, 1x3x224x224 → 1x3x224x224."""
    return seeded(StyleTransferNet, seed=202, shapes=[[1, 3, 224, 224]])
