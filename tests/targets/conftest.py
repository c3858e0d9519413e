"""Fixtures for the remote targets: the ssh target aimed at the loopback board (tests/conftest.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from benchlab_standin.board import LoopbackBoard
from benchlab.targets.ssh import SshTarget


@pytest.fixture
def ssh_target(board: LoopbackBoard) -> Iterator[SshTarget]:
    """The ``ssh`` target aimed at the loopback board, its Python being this interpreter."""
    target = SshTarget(host=board.alias, config=str(board.client_config), python=sys.executable)
    yield target
    target.close()
