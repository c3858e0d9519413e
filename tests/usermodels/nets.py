"""Models a user might write, as the source of the files the tests write (never the zoo's)."""

from __future__ import annotations

import re
from pathlib import Path

#: The page whose examples tests/usermodels/test_pytorch_model.py runs as written.
YOUR_MODEL_DOC = Path(__file__).parents[2] / "docs" / "your-model.md"


def doc_block(marker: str) -> str:
    """The fenced block right after ``<!-- marker -->`` in :data:`YOUR_MODEL_DOC`."""
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```\w+\n(.*?)```",
                      YOUR_MODEL_DOC.read_text(), re.S)
    assert found, marker
    return found.group(1)


#: Conv, batch norm, linear: the issue's 12-line model. ``build()`` seeds with SEED, so a test
#: changes a weight by changing the seed.
MYNET = '''
import torch
from torch import nn

SEED = {seed}


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


def build():
    torch.manual_seed(SEED)
    return TinyNet().eval()
'''

#: A branch on a tensor's value: torch.export (and every format built on it) refuses it.
GATE = '''
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > 0:
            h = h * 2
        return self.b(torch.relu(h))


def build():
    return Gate().eval()
'''
GATE_BRANCH_LINE = 14  # the line of ``if h.sum() > 0`` in GATE's file

BROKEN = '''
def build():
    raise RuntimeError("weights.pt is missing")
'''


def write(folder: Path, name: str, source: str) -> Path:
    """``source`` as ``folder/name``; returns the path."""
    path = folder / name
    path.write_text(source)
    return path
