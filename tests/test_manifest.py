"""S6: the manifest is replaced atomically and its format_version is checked on open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engramdb.storage.columns import FORMAT_VERSION
from engramdb.storage.manifest import FormatError, Manifest, read_manifest, write_manifest


def test_round_trip_and_no_temp_left(tmp_path: Path) -> None:
    m = Manifest(segments=[{"file": "seg-000001.arrow", "rows": 10}], next_segment=2, spaces={"dense": {"dim": 384}})
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path) == m
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_a_new_folder_has_no_manifest(tmp_path: Path) -> None:
    assert read_manifest(tmp_path) is None


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "unreadable or not JSON"),
        ("[]", "no format_version"),
        ('{"segments": []}', "no format_version"),
        ('{"format_version": "one"}', "is not a positive integer"),
        (json.dumps({"format_version": FORMAT_VERSION + 1}), f"newer engramdb \\(format_version {FORMAT_VERSION + 1}\\)"),
    ],
)
def test_bad_manifests_say_why(tmp_path: Path, content: str, match: str) -> None:
    (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(FormatError, match=match):
        read_manifest(tmp_path)


def test_unknown_keys_from_a_same_version_writer_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 1, "future_field": 3, "next_segment": 4}))
    m = read_manifest(tmp_path)
    assert m is not None and m.next_segment == 4
