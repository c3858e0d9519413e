"""Fixtures for the remote targets: a real sshd on loopback (the "board")."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab_standin.board import LoopbackBoard, find_sshd
from benchlab.targets.ssh import SshTarget


@pytest.fixture(scope="session")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackBoard]:
    """An OpenSSH server on 127.0.0.1 with its own keys, and a client config naming it."""
    if find_sshd() is None:
        pytest.skip("sshd is not installed (apt-get install openssh-server)")
    with LoopbackBoard(Path(tmp_path_factory.mktemp("board"))) as running:
        yield running


@pytest.fixture
def ssh_target(board: LoopbackBoard) -> Iterator[SshTarget]:
    """The ``ssh`` target aimed at the loopback board, its Python being this interpreter."""
    target = SshTarget(host=board.alias, config=str(board.client_config), python=sys.executable)
    yield target
    target.close()
