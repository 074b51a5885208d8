"""Themes (H8, issue 29): dense groups of what memories say, each holding together and apart from
the rest. DBSCAN at the densest of a few scales (SPEC's eps 0.15 first) whose themes are two or
more and hold a tenth of the memories, every member at least twice as near its own theme as any
other (silhouette >= 0.5).

bench/eval_topics_raw.py measures the same on LoCoMo's conversations, notes and document chunks."""

from __future__ import annotations

import random

import engramdb
import numpy as np
import pytest
from engramdb.kernels import dbscan_cosine, silhouette_cosine
from engramdb.topics import themes
from engramdb.topics.themes import theme_groups

SUBJECTS = {"bread": "my sourdough starter loaf crust oven", "violin": "violin lesson scales bow rosin concerto",
            "garden": "tomato seedlings balcony compost watering basil", "chess": "chess club opening endgame rook bishop"}
WORDS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
         "slowly", "happily", "early", "late", "twice", "carefully", "badly"]
SMALL_TALK = ["Wow, that's awesome!", "Thanks so much!", "How about you?", "Haha yeah, totally!", "Take care, bye!",
              "Sounds good, see you soon!"]


def _chat() -> list[dict[str, object]]:
    """Short turns about four subjects, each with three words of its own (when, how), between
    small talk: no three turns of a subject are near-paraphrases (cosine distance <= 0.15)."""
    rng = random.Random(0)
    out: list[dict[str, object]] = []
    for k, (subject, words) in enumerate(SUBJECTS.items()):
        for i in range(6):
            out.append({"id": f"{subject}{i}", "content": f"{words} {' '.join(rng.sample(WORDS, 3))}",
                        "role": ("Ana", "Ben")[i % 2], "namespace": "c"})
            out.append({"id": f"small{k}-{i}", "content": SMALL_TALK[(i + k) % len(SMALL_TALK)],
                        "role": ("Ben", "Ana")[i % 2], "namespace": "c"})
    return out


def test_chat_turns_about_a_few_subjects_have_themes_that_stand_apart() -> None:
    """At SPEC's eps 0.15 alone these turns had no theme (chat is rarely paraphrase): LoCoMo's
    conversations had none in the default profile."""
    db = engramdb.open(None)
    db.add_many(_chat())
    themes = db.topics.themes("c", refresh=True)
    assert len(themes) >= 2, themes
    for t in themes:
        assert t.silhouette >= 0.5 and t.confidence >= 0.6, t
        assert len({m.rstrip("0123456789") for m in t.members}) == 1, t.members  # one subject each
        assert not any(m.startswith("small") for m in t.members), t.members


def _at(degrees: float, dim: int = 8) -> np.ndarray:
    """A unit vector at an angle in the plane of the first two axes (cosine distance 1 - cos)."""
    v = np.zeros(dim)
    v[0], v[1] = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return v


def test_a_member_nearer_another_theme_than_twice_its_own_is_in_no_theme() -> None:
    """DBSCAN (eps 0.15) puts the row at 38 degrees in the first group, through its one
    neighbour at 8 degrees; it sits about as near the second group: it is in neither theme."""
    rows = np.array([_at(a) for a in (-8, 0, 8, 38, 70, 78, 86)])
    assert dbscan_cosine(rows, 0.15, 3).tolist() == [0, 0, 0, 0, 1, 1, 1]  # what DBSCAN alone finds
    groups, overall = theme_groups(rows)
    assert sorted(m for m, _, _ in groups) == [[0, 1, 2], [4, 5, 6]]
    assert all(sil >= 0.5 for _, sil, _ in groups) and overall is not None and overall >= 0.5


def test_a_lone_theme_has_its_silhouette_against_the_rest() -> None:
    """One theme among memories that form none: its silhouette compares it with them (it was 0:
    a silhouette needs another cluster)."""
    rows = np.array([_at(a) for a in (0, 4, 8)] + [_at(a) for a in (90, 140, 200, 260)])
    groups, overall = theme_groups(rows)
    assert [m for m, _, _ in groups] == [[0, 1, 2]]
    assert groups[0][1] > 0.9 and overall == groups[0][1]


def test_a_namespace_that_is_one_theme_is_one_theme() -> None:
    """Nothing to stand apart from: the theme is kept as DBSCAN found it, silhouette 0."""
    rows = np.array([_at(a) for a in (0, 3, 6, 9, 12)])
    groups, _ = theme_groups(rows)
    assert [(m, sil) for m, sil, _ in groups] == [([0, 1, 2, 3, 4], 0.0)]


def test_the_densest_scale_with_two_themes_is_kept() -> None:
    """SPEC's eps 0.15 first: where it finds two themes, a looser group (pairwise 0.17) is none,
    and the themes are DBSCAN's clusters at 0.15 exactly."""
    rows = np.array([_at(a) for a in (0, 6, 12)] + [_at(a) for a in (90, 96, 102)]
                    + [_at(a) for a in (180, 214, 248)])  # 34 degrees apart: cosine distance 0.171
    groups, _ = theme_groups(rows)
    assert sorted(m for m, _, _ in groups) == [[0, 1, 2], [3, 4, 5]]


def _tight_and_loose(seed: int = 3) -> np.ndarray:
    """Two triples of near-paraphrases (rows 0-5), eight looser groups of six (rows 6-53,
    pairwise cosine distances 0.17-0.28) and 60 scattered rows."""
    rng = np.random.default_rng(seed)

    def group(n: int, distance: float) -> np.ndarray:
        centre = rng.standard_normal(64)
        return centre / np.linalg.norm(centre) + np.sqrt(distance / (1 - distance) / 64) * rng.standard_normal((n, 64))

    return np.vstack([group(3, 0.03), group(3, 0.03)] + [group(6, 0.2) for _ in range(8)]
                     + [rng.standard_normal((60, 64))])


def test_a_few_near_paraphrases_do_not_hide_a_larger_namespaces_themes() -> None:
    """Two triples of near-paraphrases among 114 memories hold under a tenth of them: the scale
    widens until the eight looser groups are themes too."""
    groups, _ = theme_groups(_tight_and_loose())
    members = [set(m) for m, _, _ in groups]
    assert {0, 1, 2} in members and {3, 4, 5} in members
    for g in range(8):
        mine = set(range(6 + 6 * g, 12 + 6 * g))
        assert any(len(m & mine) >= 4 and m <= mine for m in members), (g, members)
    assert all(sil >= 0.5 for _, sil, _ in groups)


def test_past_the_pairs_it_may_hold_the_wider_scales_are_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large dense namespace never holds every pair within the widest scale: past PAIRS_HELD,
    the themes come from the scales whose pairs fit (here only the densest, SPEC's 0.15)."""
    rows = _tight_and_loose()
    assert len(theme_groups(rows)[0]) == 10
    monkeypatch.setattr(themes, "PAIRS_HELD", 40)  # the 24 pairs within 0.15 fit, the 120 within 0.20 do not
    labels = dbscan_cosine(rows, 0.15, 3)
    groups, _ = theme_groups(rows)
    assert sorted(m for m, _, _ in groups) == sorted(np.flatnonzero(labels == k).tolist() for k in set(labels.tolist()) - {-1})


def test_themes_found_at_spec_eps_are_dbscans_clusters_with_their_silhouettes() -> None:
    """Where DBSCAN at 0.15 finds two clusters or more whose members all stand apart (silhouette
    >= 0.5, by scikit-learn's definition: kernels.silhouette_cosine), they are the themes."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(30):
        centres = rng.standard_normal((4, 16))
        rows = np.vstack([c + 0.1 * rng.standard_normal((int(rng.integers(3, 9)), 16)) for c in centres]
                         + [rng.standard_normal((10, 16))])
        labels = dbscan_cosine(rows, 0.15, 3)
        inside = labels >= 0
        if len(set(labels[inside].tolist())) < 2:
            continue
        sil = silhouette_cosine(rows[inside], labels[inside])
        if sil.min() < 0.5:
            continue
        expected = sorted((np.flatnonzero(labels == k).tolist(), float(sil[labels[inside] == k].mean()))
                          for k in set(labels[inside].tolist()))
        groups, _ = theme_groups(rows)
        got = sorted((m, s) for m, s, _ in groups)
        assert [m for m, _ in got] == [m for m, _ in expected]
        assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-9)
        checked += 1
    assert checked >= 10
