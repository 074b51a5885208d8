"""The command line, the store demo the README's first command runs, and the kernel demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engramdb import cli
from engramdb.demo import run_demo
from engramdb.kernel_demo import run_demo as run_kernel_demo


def test_store_demo_builds_asks_and_keeps_the_store(tmp_path: Path) -> None:
    lines: list[str] = []
    out = run_demo(tmp_path / "demo", echo=lines.append)
    text = "\n".join(lines)
    assert "stored 40 turns from 4 sessions" in text
    assert "as of 2025-04-20: Maya: I got the bakery job!" in text  # the superseded fact, in the past
    assert out["now"][0].id == "s4-t0" and out["then"][0].id == "s2-t0"  # and not in the present
    assert out["first"] == 5, text  # every demo question: the default call puts the answer first
    assert out["stats"]["memories"] == 40 and (tmp_path / "demo" / "manifest.json").exists()
    again: list[str] = []
    run_demo(tmp_path / "demo", echo=again.append)  # a second run reuses the store
    assert again[0].startswith("reusing the demo store")


def test_demo_refuses_a_folder_that_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("do not delete")
    with pytest.raises(SystemExit, match="is not an engramdb store"):
        run_demo(tmp_path)
    assert (tmp_path / "precious.txt").read_text() == "do not delete"


def test_add_search_stats_export_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    assert cli.main(["add", "Biscuit the cat sleeps in boxes", "--path", path, "--namespace", "n",
                     "--valid-from", "2025-03-20T09:30:00+00:00"]) == 0
    mid = capsys.readouterr().out.strip()
    assert cli.main(["add", "The bakery opens at 4 am", "--path", path, "--namespace", "n"]) == 0
    capsys.readouterr()
    assert cli.main(["search", "cat in a box", "--path", path, "--namespace", "n", "-k", "1", "--json"]) == 0
    hit, = json.loads(capsys.readouterr().out)["hits"]
    assert hit["id"] == mid
    assert cli.main(["stats", "--path", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 2
    assert cli.main(["export", str(tmp_path / "out.jsonl"), "--path", path]) == 0
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 4  # the header, two memories, the last line
    assert cli.main(["add", "x", "--path", path, "--namespace", "n", "--valid-from", "2025-03-20"]) == 1
    assert "is a date without a time: give the time and its offset" in capsys.readouterr().err


def test_kernel_demo_runs_every_kernel_family_and_checks_itself() -> None:
    lines: list[str] = []
    results = run_kernel_demo(rows=3000, dim=48, repeat=1, echo=lines.append)
    text = "\n".join(lines)
    for name in ("dense top-10, 1 query", "int8 + f32 rescore", "hamming", "jaccard", "maxsim", "k-means", "centroid"):
        assert name in text
    assert results["int8_recall_at_10"] >= 0.95


def test_capabilities_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["capabilities", "--json"]) == 0
    caps = json.loads(capsys.readouterr().out)
    assert caps["isa"] in caps["available"]


def test_kernel_demo_refuses_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--kernels", "--rows", "10"]) == 2
    assert "--rows must be >= 1000" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["no-such-command"])


def test_search_explain_index_and_archive_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    assert cli.main(["add", "Biscuit the cat sleeps in boxes", "--path", path, "--namespace", "n"]) == 0
    mid = capsys.readouterr().out.strip()
    assert cli.main(["search", "cat", "--path", path, "--namespace", "n", "-k", "1", "--json", "--explain",
                     "--strategy", "exact"]) == 0
    hit, = json.loads(capsys.readouterr().out)["hits"]
    assert hit["id"] == mid and hit["explain"]["strategy"] == "exact" and hit["archived"] is False
    assert cli.main(["index", "--path", path, "--json"]) == 0  # one small namespace: nothing to index yet
    assert json.loads(capsys.readouterr().out)["namespaces"] == {}
    assert cli.main(["archive", "--path", path, "--older-than", "2999-01-01T00:00:00+00:00", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 1
    assert cli.main(["search", "cat", "--path", path, "--namespace", "n", "-k", "1"]) == 0
    assert "(archived)" in capsys.readouterr().out
    assert cli.main(["archive", "--path", path, "--older-than", "2999-01-01"]) == 1
    assert "is a date without a time: give the time and its offset" in capsys.readouterr().err


def test_fused_search_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    for text, typ in (("Biscuit the cat sleeps in boxes", "fact"), ("The dog chases the cat", "event"),
                      ("Tea is best without sugar", "preference")):
        assert cli.main(["add", text, "--path", path, "--namespace", "n", "--type", typ]) == 0
    capsys.readouterr()
    for strategy in ("bm25", "hybrid", "multi_space", "pipeline"):
        assert cli.main(["search", "cat boxes", "--path", path, "--namespace", "n", "-k", "2", "--json", "--explain",
                         "--strategy", strategy, "--weight", "bm25=1.5", "--type", "fact"]) == 0
        rows = json.loads(capsys.readouterr().out)["hits"]
        assert [r["content"] for r in rows] == ["Biscuit the cat sleeps in boxes"]  # --type fact only
        assert rows[0]["explain"]["strategy"] == strategy and "bm25" in rows[0]["explain"]["methods"]
        if strategy != "bm25":
            assert rows[0]["explain"]["weights"]["bm25"] == 1.5
    assert cli.main(["search", "cat boxes", "--path", path, "--namespace", "n", "--json", "--stats",
                     "--strategy", "pipeline"]) == 0
    doc = json.loads(capsys.readouterr().out)
    hits, st = doc["hits"], doc["stats"]
    assert hits and st["strategy"] == "pipeline" and st["namespace"] == "n" and st["failed"] == {}
    assert st["stages"]["fused"] >= len(hits) and set(st["stage_ms"]) == {"recall", "dense", "fuse", "rerank"}
    assert cli.main(["search", "cat", "--path", path, "--namespace", "n", "--strategy", "hybrid",
                     "--weight", "bm25"]) == 1
    assert "--weight must be NAME=NUMBER" in capsys.readouterr().err


def test_search_stage_option_sets_pipeline_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    for text in ("Biscuit the cat sleeps in boxes", "The dog chases the cat", "Tea is best without sugar"):
        assert cli.main(["add", text, "--path", path, "--namespace", "n"]) == 0
    capsys.readouterr()
    assert cli.main(["search", "cat boxes", "--path", path, "--namespace", "n", "--json", "--explain",
                     "--strategy", "pipeline", "--stage", "feedback=2", "--stage", "sparse=50"]) == 0
    rows = json.loads(capsys.readouterr().out)["hits"]
    assert rows[0]["explain"]["stages"]["feedback"] == 2 and rows[0]["explain"]["stages"]["sparse"] <= 50
    assert cli.main(["search", "cat", "--path", path, "--namespace", "n", "--strategy", "pipeline",
                     "--stage", "feedback=ten"]) == 1
    assert "--stage must be NAME=INTEGER" in capsys.readouterr().err
    assert cli.main(["search", "cat", "--path", path, "--namespace", "n", "--strategy", "pipeline",
                     "--stage", "sparse=0"]) == 1
    assert "stages['sparse'] must be an int >= 1, got 0" in capsys.readouterr().err


def test_search_command_quotes_the_passage_of_a_long_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    filler = "The market report covered rain in the hills and traffic on the ring road that week. "
    long = filler * 30 + "Maya finally bought the old bakery oven for her kitchen. " + filler * 10
    assert cli.main(["add", long, "--path", path, "--namespace", "n"]) == 0
    assert cli.main(["add", "Sam likes green tea", "--path", path, "--namespace", "n"]) == 0
    capsys.readouterr()
    assert cli.main(["search", "who bought the bakery oven", "--path", path, "--namespace", "n", "-k", "1"]) == 0
    line = capsys.readouterr().out
    assert "bakery oven" in line and len(line) < len(long) // 2  # the passage, not the whole memory
    assert cli.main(["search", "who bought the bakery oven", "--path", path, "--namespace", "n", "-k", "1",
                     "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)["hits"]
    a, b = row["passage"]
    assert "bakery oven" in row["content"][a:b]


def _used_store(path: str) -> None:
    import engramdb

    with engramdb.open(path) as db:
        db.add_many([{"id": f"m{i}", "content": f"violin lessons on day {i}", "namespace": "n"} for i in range(4)])
        for _ in range(3):
            hits = db.search("violin lessons", namespace="n", k=3)
            db.feedback(hits.query_id or "", used=[hits[0].id])
        db.importance.refresh()


def test_stats_dashboard_and_metrics_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    _used_store(path)
    assert cli.main(["stats", "--path", path]) == 0
    out = capsys.readouterr().out
    for part in ("top memories by ELO", "ELO tier", "lifecycle tier", "recent searches", "violin lessons",
                 "consolidation runs"):
        assert part in out
    assert cli.main(["stats", "--path", path, "--json"]) == 0
    board = json.loads(capsys.readouterr().out)["usage"]
    assert board["activity"]["searches"] == 3 and board["top"][0]["used"] == 3
    assert cli.main(["metrics", "--path", path]) == 0
    text = capsys.readouterr().out
    assert 'engramdb_memories{namespace="n"} 4.0' in text and "engramdb_searches_total 3.0" in text
    assert 'engramdb_elo_tier_memories{tier="MEDIUM"}' in text and "# TYPE engramdb_search_latency_seconds gauge" in text


def test_consolidate_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "mem")
    _used_store(path)
    assert cli.main(["consolidate", "--path", path, "--dry-run", "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["decisions"]
    assert {r["id"] for r in rows} == {"m0", "m1", "m2", "m3"} and all(r["action"] == "keep" for r in rows)
    assert "dry run: 4 memories" in captured.err  # every memory is in its 7-day grace
    assert cli.main(["consolidate", path]) == 0  # the folder as the first argument, for cron lines
    assert "4 memories (exponential decay)" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse names the choices
        cli.main(["consolidate", "--path", path, "--decay", "cubic"])
