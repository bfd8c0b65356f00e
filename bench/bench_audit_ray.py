"""Benchmark ``evalkit audit --engine ray`` beside ``--engine local`` at 1M and 2M texts.

Run: ``.venv/bin/python bench/bench_audit_ray.py`` (``--sizes 1000000,2000000``;
``--cpus 2`` for the Ray cluster; ``--keep DIR`` keeps the generated files).

Data: ``bench/bench_audit.py``'s texts (20-80 words, Zipf-like vocabulary,
1% planted near copies and 1% exact copies, conversations of 1-5 texts),
split 80/10/10 at random into train/val/test **JSONL** files, which the Ray
engine reads in blocks on its workers.

A Ray cluster is started on this machine with ``ray start --head`` (its
files in a temporary folder), and each audit runs as a fresh process:
``evalkit audit … --engine local`` and ``evalkit audit … --engine ray
--ray-address 127.0.0.1:PORT``. Measured per run: wall time, the **driver's**
peak resident memory (``VmHWM`` of the audit process, polled), for Ray the
peak summed resident memory of the cluster's processes, and whether both
reports are equal byte for byte but for ``options.engine``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_audit import make_data  # noqa: E402

PORT = 6391
RAY = Path(sys.executable).with_name("ray")
# A cluster of this benchmark's own on the loopback: no token to share through ~/.ray.
os.environ["RAY_AUTH_MODE"] = "disabled"


def peak_kb(pid: int) -> int:
    """The process's resident high-water mark so far (kB), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def cluster_rss_kb(marker: str) -> int:
    """Summed resident memory of the Ray cluster's processes (those under its folder)."""
    import psutil

    total = 0
    roots = [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(marker in part for part in (p.info["cmdline"] or []))
    ]
    seen: set[int] = set()
    for root in roots:
        try:
            family = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for process in family:
            if process.pid in seen:
                continue
            seen.add(process.pid)
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss // 1024
    return total


def run_audit(folder: Path, engine: str, marker: str | None) -> dict:
    """One ``evalkit audit`` process: seconds, driver peak MB, cluster peak MB, the report."""
    out = folder / f"audit-{engine}.json"
    files = [str(folder / f"{name}.jsonl") for name in ("train", "val", "test")]
    command = [sys.executable, "-m", "evalkit", "audit", *files, "--id", "id", "--text", "text",
               "--group", "conversation_id", "--json", str(out), "--force", "--quiet",
               "--engine", engine]  # fmt: skip
    if engine == "ray":
        command += ["--ray-address", f"127.0.0.1:{PORT}"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    driver, cluster = 0, 0
    done = threading.Event()

    def sample() -> None:
        nonlocal driver, cluster
        while not done.is_set():
            driver = max(driver, peak_kb(process.pid))
            if marker is not None:
                cluster = max(cluster, cluster_rss_kb(marker))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, stderr = process.communicate()
    done.set()
    sampler.join()
    seconds = time.perf_counter() - started
    if process.returncode not in (0, 1):
        raise SystemExit(f"audit --engine {engine} failed: {stderr}")
    return {
        "seconds": seconds,
        "driver_mb": driver / 1024,
        "cluster_mb": cluster / 1024,
        "text": out.read_text(),
    }


def start_cluster(cpus: int, folder: Path) -> None:
    subprocess.run(
        [str(RAY), "start", "--head", f"--port={PORT}", f"--num-cpus={cpus}",
         "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={folder}"],
        check=True, capture_output=True,
    )  # fmt: skip


def stop_cluster() -> None:
    subprocess.run([str(RAY), "stop", "--force"], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,2000000")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    ray_folder = Path(tempfile.mkdtemp(prefix="ekb-ray-"))
    start_cluster(args.cpus, ray_folder)
    results = []
    try:
        for n in (int(size) for size in args.sizes.split(",")):
            rows, _ = make_data(n)
            folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-ray-"))
            folder.mkdir(parents=True, exist_ok=True)
            for name in ("train", "val", "test"):
                split = rows.filter(pl.col("split") == name).drop("split")
                split.write_ndjson(folder / f"{name}.jsonl")
            size_mb = sum((folder / f"{s}.jsonl").stat().st_size for s in ("train", "val", "test"))
            del rows
            try:
                local = run_audit(folder, "local", None)
                ray = run_audit(folder, "ray", str(ray_folder))
            finally:
                if args.keep is None:
                    shutil.rmtree(folder, ignore_errors=True)
            same = ray["text"].replace('"engine": "ray"', '"engine": "local"') == local["text"]
            counts = json.loads(local["text"])["counts"]
            results.append((n, size_mb / 1e6, local, ray, same, counts))
            print(f"{n:,} texts done", flush=True)
    finally:
        stop_cluster()
        shutil.rmtree(ray_folder, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"\n{date.today()}, {platform.machine()}, {os.cpu_count()} cores, load {load:.1f}; "
          f"Ray cluster of {args.cpus} CPUs on this machine")  # fmt: skip
    for n, size_mb, local, ray, same, counts in results:
        print(
            f"{n:,} texts ({size_mb:,.0f} MB of JSONL): local {local['seconds']:.1f} s, driver "
            f"{local['driver_mb']:,.0f} MB | ray {ray['seconds']:.1f} s, driver "
            f"{ray['driver_mb']:,.0f} MB ({ray['driver_mb'] / local['driver_mb']:.2f} of local), "
            f"cluster peak {ray['cluster_mb']:,.0f} MB | same report: {same}"
        )
        print(
            f"  candidates {counts['candidate_pairs_checked']:,}, near pairs "
            f"{counts['near_duplicates']:,}, exact pairs {counts['exact_duplicates']:,}, group "
            f"leaks {counts['group_leaks']:,}"
        )


if __name__ == "__main__":
    main()
