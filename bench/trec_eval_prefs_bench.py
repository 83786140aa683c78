"""Benchmark: `ragtriage trec-eval -R qrels_prefs / -R prefs -m all_prefs` against trec_eval, same bytes.

    python bench/trec_eval_prefs_bench.py --trec-eval /path/to/trec_eval [--dir DIR]

Two seeded file pairs: ``qrels_prefs`` (200 queries x about 1,000 judged documents, 10% relevant, a run of 600
judged and 400 unjudged documents per query, scores with ties) and ``prefs`` (30 queries, 3 judgment groups of 3
sub-groups of 120 documents each, levels from one hidden order per group). Each program runs once per pair
(``/usr/bin/time``-like figures from ``resource``); stdout is compared byte for byte. The figures are quoted in
docs/trec_eval.md.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import time
from pathlib import Path


def _write(folder: Path) -> list[tuple[str, Path, Path]]:
    rng = random.Random(1)
    qrels, run = folder / "qrels_prefs.txt", folder / "qrels_prefs_run.txt"
    with qrels.open("w") as q, run.open("w") as r:
        for t in range(200):
            docs = list(dict.fromkeys(f"D{rng.randint(0, 10**7)}" for _ in range(1000)))
            q.writelines(f"{t} 0 {d} {rng.choice([0] * 8 + [1, 2])}\n" for d in docs)
            listed = rng.sample(docs, 600) + [f"X{rng.randint(0, 10**7)}" for _ in range(400)]
            r.writelines(f"{t} Q0 {d} {i} {rng.randint(0, 500) / 10} run\n" for i, d in enumerate(listed, 1))
    rng = random.Random(2)
    prefs, prun = folder / "prefs.txt", folder / "prefs_run.txt"
    with prefs.open("w") as q, prun.open("w") as r:
        for t in range(30):
            docs = list(dict.fromkeys(f"D{rng.randint(0, 10**6)}" for _ in range(300)))
            truth = {d: rng.choice([0, 0, 0, 1, 2, 3, 4]) for d in docs}
            for g in range(3):
                for s in range(3):
                    q.writelines(f"{t} g{g} s{s} {d} {truth[d]}\n" for d in rng.sample(docs, 120))
            listed = rng.sample(docs, 200) + [f"X{rng.randint(0, 10**6)}" for _ in range(100)]
            r.writelines(f"{t} Q0 {d} {i} {rng.randint(0, 300) / 10} run\n" for i, d in enumerate(listed, 1))
    return [("qrels_prefs", qrels, run), ("prefs", prefs, prun)]


def _timed(cmd: list[str]) -> tuple[bytes, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return out, time.perf_counter() - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec-eval", required=True, help="path of a trec_eval binary")
    parser.add_argument("--dir", type=Path, default=Path("bench/data/trec-eval-prefs"))
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    for fmt, rel, run in _write(args.dir):
        flags = ["-q", "-m", "all_prefs", "-R", fmt, str(rel), str(run)]
        theirs, t_wall, t_cpu = _timed([args.trec_eval, *flags])
        ours, o_wall, o_cpu = _timed([sys.executable, "-m", "ragtriage.trec_eval", *flags])
        same = "same bytes" if ours == theirs else "DIFFERENT BYTES"
        print(f"{fmt}: trec_eval {t_wall:.1f} s wall / {t_cpu:.1f} s CPU; "
              f"ragtriage {o_wall:.1f} s / {o_cpu:.1f} s; {same}")  # fmt: skip


if __name__ == "__main__":
    main()
