"""Benchmark ``evalkit audit`` on 1M short texts with planted leaks, against datasketch.

Run: ``.venv/bin/python bench/bench_audit.py`` (``--n 1000000`` items,
``--reference-size 50000`` for the datasketch comparison, ``--keep DIR`` to
keep the generated files, ``--baseline-code DIR`` to time another checkout's
audit of the same files alternately with this one's, ``--repeats`` times;
``--n 100000 --process-ratio`` for the whole audit process against datasketch
on every text, wall and CPU seconds).

Data: ``n`` texts of 20-80 words drawn from a 50,000-word Zipf-like
vocabulary (common words repeat, as in real text, which makes more LSH
candidates than uniform words would), in conversations of 1-5 texts. Planted
leaks: 1% of the texts get a near copy (one word replaced, at random) and
1% an exact copy differing only in case and spacing, each copy in a
conversation of its own. Rows are split 80/10/10 at random into
train/val/test parquet files.

* The audit runs as ``evalkit audit`` in a fresh process (imports, reading,
  sha256, the search and writing ``--json`` included); wall time and peak
  resident memory (ru_maxrss of the child) are measured.
* Recall: a planted near copy is a true near duplicate only if the exact
  Jaccard of its word 3-shingles is >= 0.8 (a one-word change in a 20-word
  text is not: J = 15/21); that is computed here with Python sets. Recall is
  counted over the planted pairs that cross splits and are near duplicates by
  that definition, and separately over every planted exact copy.
* Reference, same run: datasketch (MinHash.bulk + MinHashLSH, 128
  permutations, threshold 0.8) and evalkit's library call on the same
  ``--reference-size`` subsample, which holds planted pairs; the throughput
  ratio is the figure that matters on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOCABULARY = 50_000
THRESHOLD = 0.8


def texts_from_words(word_ids: np.ndarray, lengths: np.ndarray) -> pl.Series:
    """Join word ids into texts ("w123 w7 ...") without a Python loop per text."""
    vocabulary = pa.array([f"w{i}" for i in range(VOCABULARY)] + ["changed"])
    words = vocabulary.take(pa.array(word_ids))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), words)
    return pl.Series("text", lists).list.join(" ")


def make_data(n: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows (id, conversation, text, split) and the planted pairs (a, b, kind)."""
    rng = np.random.default_rng(seed)
    n_near = n_exact = n // 100
    n_base = n - n_near - n_exact
    lengths = rng.integers(20, 81, n_base)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
    word_ids = rng.choice(VOCABULARY, size=int(lengths.sum()), p=weights / weights.sum())
    base = texts_from_words(word_ids, lengths)
    sources = rng.choice(n_base, size=n_near + n_exact, replace=False)
    near_source, exact_source = sources[:n_near], sources[n_near:]
    # Near copies: the same words with one replaced by a word outside the vocabulary.
    starts = np.zeros(n_base + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    near_lengths = lengths[near_source]
    near_words = np.concatenate([word_ids[starts[s] : starts[s + 1]] for s in near_source])
    near_starts = np.zeros(n_near + 1, dtype=np.int64)
    np.cumsum(near_lengths, out=near_starts[1:])
    near_words[near_starts[:-1] + rng.integers(0, near_lengths)] = VOCABULARY
    near = texts_from_words(near_words, near_lengths)
    # Exact copies: upper case and doubled spaces, which normalisation removes.
    exact = base.gather(exact_source).str.to_uppercase().str.replace_all(" ", "  ")
    text = pl.concat([base, near, exact])
    ids = [f"T{i:07d}" for i in range(n)]
    conversation_sizes = rng.integers(1, 6, n_base)
    conversation = np.repeat(np.arange(len(conversation_sizes)), conversation_sizes)[:n_base]
    conversation = np.concatenate(
        [conversation, conversation.max() + 1 + np.arange(n_near + n_exact)]
    )
    split = rng.choice(np.array(["train", "val", "test"]), size=n, p=[0.8, 0.1, 0.1])
    rows = pl.DataFrame(
        {
            "id": ids,
            "conversation_id": [f"C{c:07d}" for c in conversation],
            "text": text,
            "split": split,
        }
    )
    copies = np.arange(n_base, n)
    planted = pl.DataFrame(
        {
            "a": [ids[s] for s in sources],
            "b": [ids[c] for c in copies],
            "kind": ["near"] * n_near + ["exact"] * n_exact,
        }
    )
    return rows, planted


def shingle_set(text: str) -> set[tuple[str, ...]]:
    words = " ".join(text.lower().split()).split(" ")
    return {tuple(words[i : i + 3]) for i in range(max(len(words) - 2, 1))}


def truth(rows: pl.DataFrame, planted: pl.DataFrame) -> pl.DataFrame:
    """Planted pairs with their splits and exact Jaccard (computed with Python sets)."""
    text = dict(zip(rows["id"], rows["text"], strict=True))
    split = dict(zip(rows["id"], rows["split"], strict=True))
    jaccard = []
    for a, b in planted.select("a", "b").iter_rows():
        left, right = shingle_set(text[a]), shingle_set(text[b])
        jaccard.append(len(left & right) / len(left | right))
    return planted.with_columns(
        pl.Series("jaccard", jaccard),
        pl.Series(
            "crosses", [split[a] != split[b] for a, b in planted.select("a", "b").iter_rows()]
        ),
    )


def run_cli_audit(folder: Path, code: Path | None = None) -> tuple[float, float, dict]:
    """``evalkit audit`` in a fresh process: (seconds, peak MB, report).

    ``code`` runs the evalkit of another checkout (its folder first on the path).
    """
    out = folder / "audit.json"
    files = [str(folder / f"{name}.parquet") for name in ("train", "val", "test")]
    command = [
        sys.executable,
        "-m",
        "evalkit",
        "audit",
        *files,
        "--id",
        "id",
        "--text",
        "text",
        "--group",
        "conversation_id",
        "--json",
        str(out),
        "--force",
        "--quiet",
    ]
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    started = time.perf_counter()
    # ``python -m`` puts the working directory first on the path: run from the checkout.
    completed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=code)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"audit failed: {completed.stderr}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, peak_mb, json.loads(out.read_text())


def recall(report: dict, planted: pl.DataFrame) -> dict[str, float]:
    found = {
        frozenset((pair["a"], pair["b"]))
        for kind in ("exact_duplicates", "near_duplicates")
        for pair in report[kind]
    }
    crossing = planted.filter(pl.col("crosses"))
    near = crossing.filter((pl.col("kind") == "near") & (pl.col("jaccard") >= THRESHOLD))
    below = crossing.filter((pl.col("kind") == "near") & (pl.col("jaccard") < THRESHOLD))
    exact = crossing.filter(pl.col("kind") == "exact")

    def share(frame: pl.DataFrame) -> float:
        hits = sum(frozenset(pair) in found for pair in frame.select("a", "b").iter_rows())
        return hits / max(frame.height, 1)

    planted_pairs = {frozenset(pair) for pair in planted.select("a", "b").iter_rows()}
    return {
        "near_truth": near.height,
        "near_recall": share(near),
        "near_below_threshold": below.height,
        "near_below_reported": share(below),
        "exact_truth": exact.height,
        "exact_recall": share(exact),
        "unplanted_pairs": len(found - planted_pairs),
    }


def datasketch_search(texts: pl.Series) -> tuple[set[frozenset[int]], set[frozenset[int]]]:
    """datasketch's near pairs (MinHash estimate >= the threshold) and LSH candidates:
    ``MinHash.bulk`` over the same normalised word 3-shingles, ``MinHashLSH`` with the
    same 128 permutations and threshold."""
    from datasketch import MinHash, MinHashLSH

    from evalkit.leakage import normalize_texts

    normalized = normalize_texts(texts).to_list()
    shingles = [
        [" ".join(words[i : i + 3]).encode() for i in range(max(len(words) - 2, 1))]
        for words in (text.split(" ") for text in normalized)
    ]
    hashes = MinHash.bulk(shingles, num_perm=128)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128)
    for index, minhash in enumerate(hashes):
        lsh.insert(index, minhash)
    pairs, candidates = set(), set()
    for index, minhash in enumerate(hashes):
        for other in lsh.query(minhash):
            if other != index:
                candidates.add(frozenset((index, other)))
                if minhash.jaccard(hashes[other]) >= THRESHOLD:
                    pairs.add(frozenset((index, other)))
    return pairs, candidates


def process_ratio(folder: Path, rows: pl.DataFrame, baseline: Path | None, rounds: int) -> None:
    """The whole ``evalkit audit`` process against datasketch on every text, alternating.

    datasketch runs in this process after its imports (its algorithm alone);
    the audit as users run it (imports, reading, every check, writing). Wall
    and CPU seconds (user + system; the audit's include its threads) per round.
    """
    codes = {"this": ROOT} | ({"baseline": baseline} if baseline is not None else {})
    wall: dict[str, list[float]] = {name: [] for name in [*codes, "datasketch"]}
    cpu: dict[str, list[float]] = {name: [] for name in [*codes, "datasketch"]}
    import datasketch  # noqa: F401  (imported before the clock starts)

    print(f"whole process vs datasketch, {rows.height:,} texts; load {os.getloadavg()[0]:.1f}")
    for turn in range(rounds):
        order = list(codes.items()) if turn % 2 == 0 else list(codes.items())[::-1]
        for name, code in order:
            seconds, used, _ = timed_audit(folder, code)
            wall[name].append(seconds)
            cpu[name].append(used)
        started, used = time.perf_counter(), time.process_time()
        datasketch_search(rows["text"])
        wall["datasketch"].append(time.perf_counter() - started)
        cpu["datasketch"].append(time.process_time() - used)
        print(f"  round {turn + 1}: load {os.getloadavg()[0]:.1f}")
    for name in wall:
        print(
            f"{name}: wall {', '.join(f'{v:.2f}' for v in wall[name])} s (median "
            f"{statistics.median(wall[name]):.2f}); CPU {', '.join(f'{v:.2f}' for v in cpu[name])}"
            f" s (median {statistics.median(cpu[name]):.2f})"
        )
    for name in codes:
        print(
            f"datasketch / {name} audit: wall "
            f"{statistics.median(wall['datasketch']) / statistics.median(wall[name]):.1f}x, CPU "
            f"{statistics.median(cpu['datasketch']) / statistics.median(cpu[name]):.1f}x"
        )


def reference(rows: pl.DataFrame, planted: pl.DataFrame, size: int) -> dict[str, float]:
    """datasketch vs evalkit on the same subsample (both find near pairs at 0.8)."""
    from evalkit.leakage import duplicate_components

    members = planted.filter(pl.col("kind") == "near").head(size // 20)
    chosen = set(members["a"]) | set(members["b"])
    others = rows.filter(~pl.col("id").is_in(list(chosen))).head(size - len(chosen))
    sample = pl.concat([rows.filter(pl.col("id").is_in(list(chosen))), others])
    texts = sample["text"]

    started = time.perf_counter()
    datasketch_pairs, datasketch_candidates = datasketch_search(texts)
    datasketch_seconds = time.perf_counter() - started

    started = time.perf_counter()
    labels = duplicate_components(texts, THRESHOLD)
    evalkit_seconds = time.perf_counter() - started

    position = {value: i for i, value in enumerate(sample["id"])}
    truth_pairs = [
        (position[a], position[b])
        for a, b, j in members.select("a", "b", "jaccard").iter_rows()
        if j >= THRESHOLD
    ]
    return {
        "size": len(texts),
        "datasketch_seconds": datasketch_seconds,
        "evalkit_seconds": evalkit_seconds,
        "datasketch_recall": sum(frozenset(p) in datasketch_pairs for p in truth_pairs)
        / max(len(truth_pairs), 1),
        "datasketch_candidate_recall": sum(
            frozenset(p) in datasketch_candidates for p in truth_pairs
        )
        / max(len(truth_pairs), 1),
        "evalkit_recall": sum(labels[a] == labels[b] for a, b in truth_pairs)
        / max(len(truth_pairs), 1),
    }


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_audit(folder: Path, code: Path | None) -> tuple[float, float, dict]:
    """``evalkit audit`` of ``code``'s checkout: (wall seconds, CPU seconds, report).

    CPU time moves much less than wall time on a shared, loaded machine.
    """
    before = children_cpu()
    seconds, _, report = run_cli_audit(folder, code)
    return seconds, children_cpu() - before, report


def compare_code(folder: Path, baseline: Path, repeats: int) -> None:
    """This checkout's audit against another's on the same files, alternately; print both."""
    wall: dict[str, list[float]] = {"baseline": [], "this": []}
    cpu: dict[str, list[float]] = {"baseline": [], "this": []}
    for _ in range(repeats):
        for name, code in (("baseline", baseline), ("this", ROOT)):
            seconds, used, _ = timed_audit(folder, code)
            wall[name].append(seconds)
            cpu[name].append(used)
    report_ratio(wall, cpu)


def report_ratio(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    """Print each code's wall and CPU times and the ratios of the best ones."""
    for name in wall:
        walls = ", ".join(f"{value:.2f}" for value in wall[name])
        cpus = ", ".join(f"{value:.2f}" for value in cpu[name])
        print(f"audit by {name} code: wall {walls} s; CPU {cpus} s")
    if "baseline" in wall:
        print(
            f"best this / best baseline: wall {min(wall['this']) / min(wall['baseline']):.3f}, "
            f"CPU {min(cpu['this']) / min(cpu['baseline']):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reference-size", type=int, default=50_000)
    parser.add_argument("--keep", type=Path)
    parser.add_argument(
        "--baseline-code",
        type=Path,
        help="another checkout of evalkit (git worktree add DIR main): its audit of the same "
        "files runs alternately with this one's, --repeats times each, for a before/after ratio",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--process-ratio",
        action="store_true",
        help="only the whole audit process (and --baseline-code's) against datasketch on all "
        "--n texts, alternating, --repeats rounds: wall and CPU seconds and their ratios",
    )
    args = parser.parse_args()

    started = time.perf_counter()
    rows, planted = make_data(args.n)
    planted = truth(rows, planted)
    print(f"generated {rows.height:,} texts in {time.perf_counter() - started:.1f} s")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-"))
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train", "val", "test"):
        rows.filter(pl.col("split") == name).drop("split").write_parquet(folder / f"{name}.parquet")

    if args.process_ratio:
        try:
            process_ratio(folder, rows, args.baseline_code, args.repeats)
        finally:
            if args.keep is None:
                shutil.rmtree(folder, ignore_errors=True)
        return
    try:
        if args.baseline_code is not None:
            compare_code(folder, args.baseline_code, args.repeats)
        seconds, peak_mb, report = run_cli_audit(folder)
    finally:
        if args.keep is None:  # the generated files take about 200 MB
            shutil.rmtree(folder, ignore_errors=True)
    found = recall(report, planted)
    ref = reference(rows, planted, args.reference_size)
    load = os.getloadavg()[0]
    print(f"\n{date.today()}, {platform.machine()}, {os.cpu_count()} cores, load {load:.1f}")
    print(
        f"evalkit audit, {args.n:,} texts, 3 splits: {seconds:.1f} s "
        f"({args.n / seconds:,.0f} texts/s), peak {peak_mb:,.0f} MB"
    )
    print(
        f"  candidate pairs checked: {report['counts']['candidate_pairs_checked']:,}; "
        f"near pairs {report['counts']['near_duplicates']:,}, "
        f"exact pairs {report['counts']['exact_duplicates']:,}, "
        f"group leaks {report['counts']['group_leaks']:,}"
    )
    print(
        f"  planted near pairs across splits with J >= {THRESHOLD}: {found['near_truth']:,}, "
        f"recall {found['near_recall']:.4f}"
    )
    print(
        f"  planted near pairs across splits with J < {THRESHOLD} (not near duplicates): "
        f"{found['near_below_threshold']:,}, reported {found['near_below_reported']:.4f}"
    )
    print(
        f"  planted exact copies across splits: {found['exact_truth']:,}, "
        f"recall {found['exact_recall']:.4f}; unplanted pairs reported: "
        f"{found['unplanted_pairs']:,}"
    )
    print(
        f"reference on {ref['size']:,} texts: datasketch {ref['datasketch_seconds']:.1f} s "
        f"(recall {ref['datasketch_recall']:.4f}, of its LSH candidates before the "
        f"estimate check {ref['datasketch_candidate_recall']:.4f}), evalkit duplicate_components "
        f"{ref['evalkit_seconds']:.2f} s (recall {ref['evalkit_recall']:.4f}): "
        f"{ref['datasketch_seconds'] / ref['evalkit_seconds']:.0f}x"
    )
    print(
        f"  datasketch extrapolated to {args.n:,} texts: "
        f"{ref['datasketch_seconds'] * args.n / ref['size']:.0f} s"
    )


if __name__ == "__main__":
    main()
