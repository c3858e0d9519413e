"""An SSDLite object detector (Sandler et al., 2018) with seeded weights.

The network ends at decoded boxes and per-class scores for all 3234 default boxes. Non-maximum
suppression is left out on purpose: its data-dependent output size does not export to every
format (TFLite, ExecuTorch), and a benchmark of the network should not depend on how many boxes
random weights happen to produce.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from benchlab.zoo.archs._common import ConvBNAct, mobilenet_v2_layers, seeded

__all__ = ["SSDLite", "default_boxes", "ssdlite"]

_IMAGE_SIZE = 320
_NUM_CLASSES = 91  # COCO's 90 category ids plus background, as in torchvision's SSD models
_ANCHORS_PER_CELL = 6
# Box-coding variances of the original SSD: centre offsets x0.1, log-sizes x0.2.
_CENTER_VARIANCE, _SIZE_VARIANCE = 0.1, 0.2
_MAX_LOG_SIZE = math.log(1000.0 / 16)


def _extra_block(cin: int, cout: int) -> nn.Sequential:
    """SSDLite's extra feature layer: 1x1 squeeze, depthwise 3x3 stride 2, 1x1 expand."""
    mid = cout // 2
    return nn.Sequential(
        ConvBNAct(cin, mid, 1), ConvBNAct(mid, mid, 3, 2, groups=mid), ConvBNAct(mid, cout, 1)
    )


def _head(cin: int, cout: int) -> nn.Sequential:
    """SSDLite's prediction head: depthwise 3x3 (BN, ReLU6), then a 1x1 convolution with bias."""
    return nn.Sequential(ConvBNAct(cin, cin, 3, groups=cin), nn.Conv2d(cin, cout, 1))


def default_boxes(sizes: list[int], s_min: float = 0.2, s_max: float = 0.95) -> torch.Tensor:
    """SSD's default boxes as ``(cx, cy, w, h)`` in [0, 1], ordered by map, row, column, box.

    Six per cell: aspect ratios 1, 2, 1/2, 3, 1/3 at the map's scale, and ratio 1 at the
    geometric mean of this map's scale and the next one's.
    """
    scales = [s_min + (s_max - s_min) * k / (len(sizes) - 1) for k in range(len(sizes))] + [1.0]
    boxes = []
    for k, size in enumerate(sizes):
        s = scales[k]
        shapes = [(s * math.sqrt(r), s / math.sqrt(r)) for r in (1.0, 2.0, 0.5, 3.0, 1.0 / 3)]
        shapes.append((math.sqrt(s * scales[k + 1]),) * 2)
        wh = torch.tensor(shapes)
        centres = (torch.arange(size, dtype=torch.float32) + 0.5) / size
        cy, cx = torch.meshgrid(centres, centres, indexing="ij")
        cxcy = torch.stack([cx, cy], dim=-1).reshape(-1, 1, 2).expand(-1, len(shapes), 2)
        boxes.append(torch.cat([cxcy, wh.expand(size * size, -1, 2)], dim=-1).reshape(-1, 4))
    return torch.cat(boxes).clamp(0.0, 1.0)


class SSDLite(nn.Module):
    """SSDLite-MobileNetV2: six feature maps (20, 10, 5, 3, 2, 1 cells at 320x320).

    The first map is the expansion output of the first stride-32 block (576 channels at stride
    16), the second the backbone's last 1x1 conv (1280); four extra blocks go down to 1x1.
    ``forward`` returns ``(boxes, scores)``: ``N x 3234 x 4`` corners ``(x1, y1, x2, y2)`` in
    [0, 1] image coordinates (not clipped) and ``N x 3234 x 91`` softmax class scores (class 0
    is background). There is no NMS: callers filter and suppress boxes themselves.
    """

    def __init__(self, num_classes: int = _NUM_CLASSES) -> None:
        super().__init__()
        layers = mobilenet_v2_layers()
        split = layers[14]  # the first 160-channel (stride 2) inverted residual block
        self.stage1 = nn.Sequential(*layers[:14], split.conv[0])
        self.stage2 = nn.Sequential(*split.conv[1:], *layers[15:])
        self.extras = nn.ModuleList(
            [_extra_block(1280, 512), _extra_block(512, 256), _extra_block(256, 256),
             _extra_block(256, 128)]
        )
        channels = (576, 1280, 512, 256, 256, 128)
        a = _ANCHORS_PER_CELL
        self.num_classes = num_classes
        self.cls_heads = nn.ModuleList(_head(c, a * num_classes) for c in channels)
        self.box_heads = nn.ModuleList(_head(c, a * 4) for c in channels)
        sizes = [_IMAGE_SIZE // 16, _IMAGE_SIZE // 32, 5, 3, 2, 1]
        self.register_buffer("anchors", default_boxes(sizes), persistent=False)

    @staticmethod
    def _flatten(x: torch.Tensor, width: int) -> torch.Tensor:
        # N x (A*K) x H x W → N x (H*W*A) x K, matching default_boxes' order.
        return x.permute(0, 2, 3, 1).reshape(x.shape[0], -1, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(boxes, scores)`` for every default box, before any thresholding or NMS."""
        features = [self.stage1(x)]
        features.append(self.stage2(features[0]))
        for extra in self.extras:
            features.append(extra(features[-1]))
        cls_maps = zip(self.cls_heads, features, strict=True)
        box_maps = zip(self.box_heads, features, strict=True)
        logits = torch.cat([self._flatten(h(f), self.num_classes) for h, f in cls_maps], dim=1)
        deltas = torch.cat([self._flatten(h(f), 4) for h, f in box_maps], dim=1)
        anchor_xy, anchor_wh = self.anchors[:, :2], self.anchors[:, 2:]
        centres = anchor_xy + deltas[..., :2] * _CENTER_VARIANCE * anchor_wh
        sizes = anchor_wh * torch.exp(
            torch.clamp(deltas[..., 2:] * _SIZE_VARIANCE, max=_MAX_LOG_SIZE)
        )
        boxes = torch.cat([centres - 0.5 * sizes, centres + 0.5 * sizes], dim=-1)
        return boxes, torch.softmax(logits, dim=-1)


def ssdlite() -> nn.Module:
    """SSDLite with a MobileNetV2 backbone, 1x3x320x320 → (1x3234x4 boxes, 1x3234x91 scores).

    Raw outputs without non-maximum suppression (which does not export to every format).
    """
    return seeded(SSDLite, seed=301, shapes=[[1, 3, _IMAGE_SIZE, _IMAGE_SIZE]])
