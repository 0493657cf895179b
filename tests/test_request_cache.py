"""The request cache's store: entries written aside and renamed, read whole or not at all; torn ones recomputed;
many writers at once; pruned by age or size; `careval cache stats|prune`."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from careval.cli import main
from careval.request_cache import RequestCache, digest, parse_age, parse_size

SRC = Path(__file__).resolve().parents[1] / "src"


def test_an_entry_reads_back_what_was_written_floats_exactly(tmp_path):
    cache = RequestCache(tmp_path / "cache")
    key = digest({"call": "loglikelihood", "args": [["a", "b"]]})
    value = {"value": [-0.1 + 0.2, -1e-300, 1 / 3, -math.inf], "usage": [[3, 0]]}
    assert cache.get(key) is None
    cache.put(key, value)
    assert cache.path(key) == tmp_path / "cache" / key[:2] / key
    got = cache.get(key)
    assert got["value"][:3] == value["value"][:3] and got["value"][3] == -math.inf  # repr round-trips exactly
    assert [p.name for p in cache.path(key).parent.iterdir()] == [key]  # nothing left beside it
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})  # keys in any order: one digest


def test_a_torn_entry_is_recomputed_with_a_warning_never_read(tmp_path, capsys):
    cache = RequestCache(tmp_path)
    cache.put("ab12", {"value": ["a long answer " * 50]})
    whole = cache.path("ab12").read_bytes()
    for torn in (whole[: len(whole) // 2], whole[:-1], whole.replace(b"long", b"lone", 1), b""):
        cache.path("ab12").write_bytes(torn)
        assert cache.get("ab12") is None
        want = f"cache: {cache.path('ab12')} is a torn entry ({len(torn)} bytes); removed and recomputed\n"
        assert capsys.readouterr().out == want
        assert not cache.path("ab12").exists()  # removed: the next writer puts it back whole


WRITER = """
import sys
from careval.request_cache import RequestCache
cache, key, rounds = RequestCache(sys.argv[1]), sys.argv[2], int(sys.argv[3])
value = {"value": ["x" * 200_000, list(range(20_000))]}
for _ in range(rounds):
    cache.put(key, value)
"""
READER = """
import sys, time
from careval.request_cache import RequestCache
cache, key, seconds = RequestCache(sys.argv[1]), sys.argv[2], float(sys.argv[3])
seen = whole = 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    got = cache.get(key)
    if got is not None:
        assert got == {"value": ["x" * 200_000, list(range(20_000))]}, "a partial entry was read"
        whole += 1
    seen += 1
print(seen, whole)
"""


def test_two_writers_and_a_reader_at_once_never_see_a_partial_entry(tmp_path):
    """Two processes write the same 300 kB entry over and over while a third reads it: every read is the whole entry
    or none (before the first rename), never part of one, and nothing is ever torn."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = [sys.executable, "-c"]
    key = "cd" + "0" * 62
    writers = [subprocess.Popen([*run, WRITER, str(tmp_path), key, "150"], env=env) for _ in range(2)]
    reader = subprocess.Popen([*run, READER, str(tmp_path), key, "4"], env=env, stdout=subprocess.PIPE, text=True)
    out, _ = reader.communicate(timeout=120)
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    assert reader.returncode == 0, out
    seen, whole = map(int, out.split())
    assert whole > 0 and seen >= whole  # it read the entry, whole, many times
    assert "torn" not in out
    assert [p.name for p in (tmp_path / key[:2]).iterdir()] == [key]  # no write left aside


def test_prune_drops_the_unused_then_the_least_recently_used(tmp_path):
    cache = RequestCache(tmp_path)
    now = time.time()
    for age, key in ((40, "aa1"), (10, "bb1"), (1, "cc1")):
        cache.put(key, {"value": "x" * 1000})
        os.utime(cache.path(key), (now - age * 86400, now - age * 86400))
    assert cache.stats().entries == 3
    assert cache.prune(older_than=parse_age("30d"), now=now) == (1, cache.path("bb1").stat().st_size)
    assert not cache.path("aa1").exists()
    size = cache.stats().bytes
    cache.get("bb1")  # a hit is a use: bb1 is now the most recent
    removed, _ = cache.prune(max_bytes=size - 1, now=time.time())
    assert removed == 1 and cache.path("bb1").exists() and not cache.path("cc1").exists()


def test_the_cache_command_says_the_size_and_prunes(tmp_path, capsys):
    cache = RequestCache(tmp_path / "c")
    cache.put("aa1", {"value": [1.5]})
    old = time.time() - 60 * 86400
    os.utime(cache.path("aa1"), (old, old))
    cache.put("bb2", {"value": [2.5]})
    assert main(["cache", "stats", "--dir", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'c'}: 2 entries, 0.0 MB; last used 0.0 to 60.0 days ago")
    assert main(["cache", "prune", "--dir", str(tmp_path / "c"), "--older-than", "30d"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'c'}: removed 1 entries") and ": 1 entries" in lines[1]
    assert main(["cache", "prune", "--dir", str(tmp_path / "c")]) == 2  # nothing said to drop
    assert main(["cache", "prune", "--dir", str(tmp_path / "c"), "--max-size", "lots"]) == 2
    assert "not a size: 'lots'" in capsys.readouterr().err
    demo = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({**demo, "resources": {**demo["resources"], "cache_dir": str(tmp_path / "c")}}))
    assert main(["cache", "stats", "--config", str(config)]) == 0
    assert ": 1 entries" in capsys.readouterr().out
    # a config whose runs keep no cache (resources.cache false) has no folder to show: the run's own rule
    off = {**demo, "resources": {**demo["resources"], "cache_dir": str(tmp_path / "c"), "cache": False}}
    config.write_text(yaml.safe_dump(off))
    assert main(["cache", "stats", "--config", str(config)]) == 2
    assert "resources.cache is false" in capsys.readouterr().err


def test_ages_and_sizes():
    assert (parse_age("30d"), parse_age("12h"), parse_age("90s")) == (30 * 86400, 12 * 3600, 90)
    assert (parse_size("10G"), parse_size("500m"), parse_size("64B")) == (10 * 2**30, 500 * 2**20, 64)
    assert (parse_age("0d"), parse_size("0G")) == (0, 0)
    with pytest.raises(ValueError, match="not an age"):
        parse_age("a week")


@pytest.mark.parametrize(
    ("option", "line"),
    [
        (
            "--max-size=-5G",
            "careval cache prune: --max-size: not a size: '-5G': it must be zero or more (50G, 500M, 64K, 100B)",
        ),
        (
            "--older-than=-1d",
            "careval cache prune: --older-than: not an age: '-1d': it must be zero or more (30d, 12h, 45m, 90s)",
        ),
        (
            "--older-than=30",
            "careval cache prune: --older-than: not an age: '30': a number needs its unit (30d, 12h, 45m, 90s)",
        ),
        (
            "--max-size=5",
            "careval cache prune: --max-size: not a size: '5': a number needs its unit (50G, 500M, 64K, 100B)",
        ),
        (
            "--older-than=nand",
            "careval cache prune: --older-than: not an age: 'nand': it must be zero or more (30d, 12h, 45m, 90s)",
        ),
    ],
)
def test_prune_refuses_a_negative_or_unitless_size_or_age_in_one_line(tmp_path, capsys, option, line):
    """Once: -5G removed every entry and exited 0, and 30 meant 30 seconds. Now one line, exit 2, nothing removed."""
    cache = RequestCache(tmp_path / "c")
    cache.put("aa1", {"value": [1.5]})
    assert main(["cache", "prune", "--dir", str(tmp_path / "c"), option]) == 2
    assert capsys.readouterr() == ("", line + "\n")
    assert cache.stats().entries == 1


def test_stats_on_a_missing_folder_says_so(tmp_path, capsys):
    """Once "0 entries, 0.0 MB" for a misspelt folder."""
    assert main(["cache", "stats", "--dir", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr() == (
        "",
        f"careval cache: {tmp_path / 'nowhere'} does not exist (no request cache there; --dir or --config say which)\n",
    )


@pytest.mark.parametrize(
    "resources, folder",
    [({}, "resources/cache"), ({"cache_dir": "elsewhere/cache"}, "elsewhere/cache"), ({"cache": False}, None)],
)
def test_the_cache_command_reads_the_folder_the_runs_jobs_use(tmp_path, resources, folder):
    """`careval cache --config` and the run's LLM jobs read one rule (careval.models.spec.cache_dir): the schema's
    default folder, a set one, or none where the cache is off; the jobs' folder read from the plan's model spec."""
    import argparse

    from careval.cli import cache_folder
    from careval.plan import load_plan

    repo = Path(__file__).resolve().parents[1]
    demo = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({**demo, "resources": {**demo.get("resources", {}), **resources}}))
    jobs = load_plan(config).infer_job("gemma3-270m", "demo_mcqa").model.cache_dir
    assert jobs == folder  # the schema's default, the config's folder, none
    args = argparse.Namespace(dir=None, config=str(config))
    if jobs is None:
        with pytest.raises(ValueError, match=r"resources\.cache is false"):
            cache_folder(args)
    else:
        assert cache_folder(args) == Path(jobs)
