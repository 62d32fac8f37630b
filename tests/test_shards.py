"""Nights on many machines: a Redis example database that every shard shares (and that may go
away mid-night), `fuzz --shard K/N`, and `merge`. The tests start a real redis-server on a
free port of 127.0.0.1 (the Debian package; .ci/run installs it) and skip where it is missing."""

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.cli import main
from conformance.night.config import NightConfig, Shard, parse_shard
from conformance.night.worker import Worker
from tests.test_night import fuzz, fuzz_here, summary

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (apt-get install "
                                 "redis-server; .ci/run installs it)")
SPEC = "conformance.backends.faulty:perturbs_outputs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_server(tmp_path):
    import redis

    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(200):  # up in a few milliseconds; a loaded machine may take a second or two
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield SimpleNamespace(url=f"redis://127.0.0.1:{port}/0", proc=proc, client=client)
    proc.kill()
    proc.wait()


def shard_night(folder: Path, shard: str, seed: int, *extra) -> subprocess.CompletedProcess:
    return fuzz_here("--backend", SPEC, "--max-examples", "30", "--seed", str(seed), "--shard", shard,
                "--report-dir", str(folder), *extra, sweep=True)


def test_shards_divide_the_sweep_and_the_baseline_between_them_without_overlap():
    items = list(range(23))
    picks = [Worker.mine(SimpleNamespace(cfg=NightConfig("eager", 1, workers=w, shard=Shard(k, 3)), wid=i), items)
             for k, w in ((1, 2), (2, 1), (3, 3)) for i in range(w)]
    assert sorted(x for p in picks for x in p) == items
    assert str(parse_shard("2/4")) == "2/4"
    for bad in ("0/2", "3/2", "2", "a/b", "1/"):
        with pytest.raises(ValueError):
            parse_shard(bad)


@pytest.mark.slow
@needs_redis
def test_two_shards_on_one_redis_and_a_merge_make_one_report(tmp_path, redis_server):
    parts = [tmp_path / "s1", tmp_path / "s2"]
    for k, folder in enumerate(parts, 1):
        proc = shard_night(folder, f"{k}/2", 5, "--db", redis_server.url)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert summary(folder)["shard"] == f"{k}/2" and summary(folder)["database"]["lost"] == []
    assert redis_server.client.keys("hypothesis-example:*"), "the shards saved their failures in Redis"
    out = tmp_path / "merged"
    assert main(["merge", *map(str, parts), "--report-dir", str(out)]) == 1
    merged = summary(out)
    shards = [summary(p) for p in parts]
    assert merged["examples"] == sum(s["examples"] for s in shards)
    bugs = [(m["signature"], m["known_issue"]) for m in merged["mismatches"]]
    assert len(bugs) == len(set(bugs)), "one entry per bug"
    assert set(bugs) == {(m["signature"], m["known_issue"]) for s in shards for m in s["mismatches"]}
    folders = [p for p in out.iterdir() if (p / "repro.py").exists()]
    assert len(folders) == len(bugs), "no duplicate folders"
    for m in merged["mismatches"]:  # the smallest repro of the shards' is kept
        assert m["statements"] == min(x["statements"] for s in shards for x in s["mismatches"]
                                      if x["signature"] == m["signature"])
    # The next night of a shard replays what any shard saved before it draws anything new.
    again = shard_night(tmp_path / "again", "2/2", 6, "--db", redis_server.url)
    assert min(m["found_after_examples"] for m in summary(tmp_path / "again")["mismatches"]) <= 1, again.stdout


@pytest.mark.slow
@needs_redis
def test_a_redis_that_goes_away_mid_night_loses_no_finding(tmp_path, redis_server):
    env = dict(os.environ, CONFORMANCE_TEST_REDIS_PID=str(redis_server.proc.pid))
    folder = tmp_path / "night"
    proc = fuzz("--backend", "tests.fake_backends:kills_redis", "--max-examples", "40", "--seed", "3",
                "--db", redis_server.url, "--report-dir", str(folder), env=env)
    assert redis_server.proc.wait(timeout=10) is not None, "the backend killed Redis"
    assert proc.returncode == 1, proc.stdout + proc.stderr
    s = summary(folder)
    (lost,) = s["database"]["lost"]
    assert lost["worker"] == "w0" and "Connection" in lost["error"], lost
    assert any(m["oracle"] == "outputs" for m in s["mismatches"])
    assert any((folder / "findings" / "w0" / "database").rglob("*")), "failures went on to the local folder"


def test_a_redis_that_cannot_be_reached_ends_the_night_before_it_starts(tmp_path, capsys):
    pytest.importorskip("redis")
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    assert main(["fuzz", "--backend", "eager", "--seconds", "5", "--db", url, "--report-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Redis cannot be reached" in err[0] and url in err[0], err


def _report(folder: Path, backend="eager", run="r1") -> Path:
    (folder / "findings").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"backend": backend, "mismatches": [], "run": run}))
    return folder


@pytest.mark.parametrize("case", ["same folder twice", "one night copied", "two backends", "not a report",
                                  "merged into a part"])
def test_a_merge_refuses_folders_it_cannot_join_with_one_line(tmp_path, capsys, case):
    a = _report(tmp_path / "a")
    folders, out = {
        "same folder twice": lambda: ([a, a], tmp_path / "out"),
        "one night copied": lambda: ([a, _report(tmp_path / "copy", run="r1")], tmp_path / "out"),
        "two backends": lambda: ([a, _report(tmp_path / "b", backend="thunder", run="r2")], tmp_path / "out"),
        "not a report": lambda: ([a, tmp_path], tmp_path / "out"),
        "merged into a part": lambda: ([a, _report(tmp_path / "b", run="r2")], a),
    }[case]()
    assert main(["merge", *map(str, folders), "--report-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m conformance merge: error:"), err
