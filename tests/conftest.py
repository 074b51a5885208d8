"""Shared fixtures: every kernel test runs on every instruction set this CPU can execute."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from engramdb import kernels

ISAS = kernels.available_isas()


@pytest.fixture(params=ISAS)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test body with the kernels forced onto one instruction set."""
    with kernels.use_isa(request.param):
        yield request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
