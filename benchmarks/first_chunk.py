"""How soon a review's first chunk is ready to send (issue 25, item 1), against a running server.

    python benchmarks/first_chunk.py --base-url http://127.0.0.1:PORT/v1 --diff CHANGE.diff \
        [--tokenizer tokenizer.json] [--repeat 2]
    python benchmarks/first_chunk.py --base-url ... --diff CHANGE.diff --reviews 16 [--exact-all]

For each counter (the server's /tokenize alone; with --tokenizer, that file for the diff's
pieces as `reviewbot` uses it when it counts as the server does, and the file forced even when
it does not): seconds until the first fitted chunk, until all of them, and how many.

With --reviews N, N reviews of the change are fitted at once, each in its own thread with its
own engine, as a burst of merge requests meets one listener: when each one's first chunk was
ready. --exact-all counts every chunk's whole request again before it goes, as every chunk was
counted before `fitting.EXACT_NEAR`.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import replace
from pathlib import Path

from reviewbot import diff
from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.engine import filters, fitting
from reviewbot.engine.build import make_engine
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import DegradingCounter, LocalTokenCounter

# the forced call: the figures in docs/performance.md were measured with it
TOOL = {"findings_format": "tool"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--diff", type=Path, required=True)
    ap.add_argument("--tokenizer")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--reviews", type=int, default=1)
    ap.add_argument("--exact-all", action="store_true")
    args = ap.parse_args()
    raw = args.diff.read_bytes()
    if args.exact_all:
        fitting.EXACT_NEAR = 1.0
    if args.reviews > 1:
        for _ in range(args.repeat):
            at_once(args.base_url, raw, args.reviews)
        return
    ways = [("server", {}, False)]
    if args.tokenizer:
        ways += [("server + tokenizer.json", {"tokenizer": args.tokenizer}, False),
                 ("tokenizer.json forced", {}, True)]
    for _ in range(args.repeat):
        for name, extra, forced in ways:
            settings = resolve({"base_url": args.base_url, "verify": False, **TOOL, **extra}, env={},
                               config_path="/dev/null")
            engine = make_engine(settings)
            if forced:
                assert isinstance(engine.counter, DegradingCounter)
                engine = replace(engine, counter=DegradingCounter(
                    engine.counter._primary, texts=LocalTokenCounter(args.tokenizer)))
            reviewed, _ = filters.split(diff.parse(raw), settings.exclude)
            t0 = time.monotonic()
            fitted = engine.fitting.fitted(reviewed, Context())
            next(fitted.chunks)
            first = time.monotonic() - t0
            rest = sum(1 for _ in fitted.chunks)
            print(f"{name}: first chunk {first:.3f} s, all {time.monotonic() - t0:.3f} s, "
                  f"{1 + rest} chunks")


def at_once(base_url: str, raw: bytes, reviews: int) -> None:
    settings = resolve({"base_url": base_url, "verify": False, **TOOL}, env={},
                       config_path="/dev/null")
    engines = [make_engine(settings) for _ in range(reviews)]
    firsts: list[float] = []
    t0 = time.monotonic()

    def one(engine: Engine) -> None:
        reviewed, _ = filters.split(diff.parse(raw), settings.exclude)
        next(engine.fitting.fitted(reviewed, Context()).chunks)
        firsts.append(time.monotonic() - t0)

    threads = [threading.Thread(target=one, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{reviews} at once: first chunks ready at "
          + ", ".join(f"{s:.2f}" for s in sorted(firsts)) + " s")


if __name__ == "__main__":
    main()
