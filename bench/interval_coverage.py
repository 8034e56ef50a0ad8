"""Coverage and power of the ratio's 95 % interval with 2 to 5 runs a side.

Prints markdown tables (docs/tune.md, "The gain's interval"): for known
ratios and noise levels, how often the session's interval (a t interval on
the log ratio, pooled and floored: tuner/stats/ratio.py) held the true
ratio and how often it excluded 1, beside the method it replaced
(Fieller's interval with Welch's degrees of freedom). Seeded: two runs
with the same options print the same tables. Pure arithmetic, a few
seconds; it measures nothing on the host.

    python bench/interval_coverage.py [--comparisons 4000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time


from advisor.tuner.stats.coverage import (NOISES, RATIOS, RUNS, binomial_margin, markdown_table,
                                          runs_needed, simulate)

VARIANT_RATIOS = (1.0, 1.5)
VARIANT_NOISES = (0.03, 0.10, 0.20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=4000, help="comparisons simulated in each cell")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.comparisons < 100:
        print("interval_coverage: --comparisons must be at least 100 (a share of fewer says little)", file=sys.stderr)
        return 2
    started = time.monotonic()
    print(f"Comparisons a cell: {args.comparisons:,} (seed {args.seed}); a coverage of 95 % reads within "
          f"±{binomial_margin(args.comparisons):.1%} of it by chance alone (3 standard errors). "
          "Noise: the deviation of one run's log figure. 'excludes 1' at ×1 is the false alarms.\n")
    print("Both sides equally noisy:\n")
    print("\n".join(markdown_table(simulate(RATIOS, NOISES, RUNS, ("equal",), args.comparisons, args.seed))))
    print("\nThe other side twice as noisy as the base:\n")
    print("\n".join(markdown_table(simulate(VARIANT_RATIOS, VARIANT_NOISES, RUNS, ("unequal",), args.comparisons,
                                            args.seed))))
    print("\nThe base's figures on a grid of knee rates 10 % apart (most of its runs identical at low noise):\n")
    print("\n".join(markdown_table(simulate(VARIANT_RATIOS, VARIANT_NOISES, RUNS, ("quantised",), args.comparisons,
                                            args.seed))))
    print("\nRuns a side for the interval to exclude 1 at ×1.5 (both sides equally noisy):\n")
    print("| noise (sd of log) | in 80 % of comparisons | in 95 % |")
    print("| ---: | ---: | ---: |")
    for noise in NOISES:
        needed = [runs_needed(1.5, noise, power, comparisons=args.comparisons, seed=args.seed) for power in (0.8, 0.95)]
        print(f"| {noise:.2f} | " + " | ".join("more than 10" if n is None else str(n) for n in needed) + " |")
    print(f"\n({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
