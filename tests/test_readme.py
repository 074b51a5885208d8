"""The README's Python example runs as written and does what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "README has no python example"
    scope: dict = {}
    exec(compile(blocks[0], str(README), "exec"), scope)
    idx, scores, x = scope["idx"], scope["scores"], scope["x"]
    # the last line: int8 shortlist rescored exactly equals the float32 answer
    exact = np.argsort(-(x @ x[0]))[:10]
    assert set(idx.tolist()) == set(exact.tolist())
    np.testing.assert_allclose(scores, (x @ x[0])[idx], atol=1e-5)
