"""Shared fixtures: every kernel test runs on every instruction set this CPU can execute."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest
from engramdb import kernels

ISAS = kernels.available_isas()

# The hook processes the tests start answer in their own process: a resident reader
# (agents/resident.py) would outlive the test and answer the next test's hooks from its snapshot.
# tests/test_hook_resident.py turns it on for its own hooks, each with a runtime folder of its own.
os.environ.setdefault("ENGRAMDB_HOOK_RESIDENT", "0")


@pytest.fixture(params=ISAS)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test body with the kernels forced onto one instruction set."""
    with kernels.use_isa(request.param):
        yield request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
