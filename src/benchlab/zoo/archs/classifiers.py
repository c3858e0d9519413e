"""ImageNet classifiers in plain torch, layer for layer the torchvision definitions.

Same layers and parameter counts as torchvision's ``squeezenet1_1``, ``shufflenet_v2_x1_0``,
``mobilenet_v2`` and ``resnet18`` (which cannot be installed next to the CPU torch here), with
seeded random weights: good for latency, and for comparing runtimes with one another, not for
ImageNet accuracy. All take one 1x3x224x224 image and return 1x1000 logits.
"""

from __future__ import annotations

import torch
from torch import nn

from benchlab.zoo.archs._common import ConvBNAct, mobilenet_v2_layers, seeded

__all__ = ["mobilenet_v2", "resnet18", "shufflenet_v2", "squeezenet1_1"]

_IMAGE = [[1, 3, 224, 224]]


class _Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand1: int, expand3: int) -> None:
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.expand1 = nn.Sequential(nn.Conv2d(squeeze, expand1, 1), nn.ReLU())
        self.expand3 = nn.Sequential(nn.Conv2d(squeeze, expand3, 3, padding=1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze(x)
        return torch.cat([self.expand1(x), self.expand3(x)], dim=1)


class SqueezeNet11(nn.Module):
    """SqueezeNet 1.1: Fire modules (squeeze 1x1, expand 1x1 + 3x3), no BatchNorm."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        # ceil_mode=True as in torchvision, so the feature maps (and FLOPs) match the original.
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            _Fire(64, 16, 64, 64), _Fire(128, 16, 64, 64),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            _Fire(128, 32, 128, 128), _Fire(256, 32, 128, 128),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            _Fire(256, 48, 192, 192), _Fire(384, 48, 192, 192),
            _Fire(384, 64, 256, 256), _Fire(512, 64, 256, 256),
        )
        self.classifier = nn.Sequential(nn.Conv2d(512, num_classes, 1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (non-negative: the final conv is followed by ReLU, as in the original)."""
        return self.classifier(self.features(x)).mean(dim=(2, 3))


def _channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    x = x.reshape(b, groups, c // groups, h, w).transpose(1, 2)
    return x.reshape(b, c, h, w)


class _ShuffleUnit(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                ConvBNAct(cin, cin, 3, stride, groups=cin, act=None),
                ConvBNAct(cin, half, 1, act=nn.ReLU),
            )
        branch_in = cin if stride > 1 else half
        self.branch2 = nn.Sequential(
            ConvBNAct(branch_in, half, 1, act=nn.ReLU),
            ConvBNAct(half, half, 3, stride, groups=half, act=None),
            ConvBNAct(half, half, 1, act=nn.ReLU),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            keep, x2 = x.chunk(2, dim=1)
            out = torch.cat([keep, self.branch2(x2)], dim=1)
        else:
            out = torch.cat([self.branch1(x), self.branch2(x)], dim=1)
        return _channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNet V2 x1.0: channel split, depthwise convs and channel shuffles."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        widths, repeats = (24, 116, 232, 464, 1024), (4, 8, 4)
        self.conv1 = ConvBNAct(3, widths[0], 3, 2, act=nn.ReLU)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages: list[nn.Module] = []
        cin = widths[0]
        for cout, n in zip(widths[1:4], repeats, strict=True):
            units = [_ShuffleUnit(cin, cout, 2)]
            units += [_ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*units))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.conv5 = ConvBNAct(cin, widths[4], 1, act=nn.ReLU)
        self.fc = nn.Linear(widths[4], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits."""
        x = self.conv5(self.stages(self.maxpool(self.conv1(x))))
        return self.fc(x.mean(dim=(2, 3)))


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0): inverted residuals with linear bottlenecks."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(*mobilenet_v2_layers())
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits."""
        return self.classifier(self.features(x).mean(dim=(2, 3)))


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = ConvBNAct(cin, cout, 3, stride, act=nn.ReLU)
        self.conv2 = ConvBNAct(cout, cout, 3, act=None)
        self.downsample = (
            ConvBNAct(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else None
        )
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.conv2(self.conv1(x)) + identity)


class ResNet18(nn.Module):
    """ResNet-18: a 7x7 stem, four stages of two basic blocks (64-128-256-512 channels)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        stages: list[nn.Module] = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            stages.append(nn.Sequential(_BasicBlock(cin, cout, stride), _BasicBlock(cout, cout, 1)))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits."""
        return self.fc(self.stages(self.stem(x)).mean(dim=(2, 3)))


def squeezenet1_1() -> nn.Module:
    """SqueezeNet 1.1 (1.24M parameters, 0.7 GFLOPs), 1x3x224x224 → 1x1000 logits."""
    return seeded(SqueezeNet11, seed=101, shapes=_IMAGE)


def shufflenet_v2() -> nn.Module:
    """ShuffleNet V2 x1.0 (2.28M parameters, 0.3 GFLOPs), 1x3x224x224 → 1x1000 logits."""
    return seeded(ShuffleNetV2, seed=102, shapes=_IMAGE)


def mobilenet_v2() -> nn.Module:
    """MobileNetV2 (3.5M parameters, 0.6 GFLOPs), 1x3x224x224 → 1x1000 logits."""
    return seeded(MobileNetV2, seed=103, shapes=_IMAGE)


def resnet18() -> nn.Module:
    """ResNet-18 (11.7M parameters, 3.6 GFLOPs), 1x3x224x224 → 1x1000 logits."""
    return seeded(ResNet18, seed=104, shapes=_IMAGE)
