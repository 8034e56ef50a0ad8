#!/usr/bin/env python3
"""Check that two builds of apache-advisor lint alike, byte for byte.

A speed change must not change a report. This runs `lint` of two installs
(say, the last release and a working tree installed elsewhere) on the rule
fixtures, the corpus samples and generated virtual-host trees, in every
output format, and compares stdout, stderr and the exit code.

    python bench/same_output.py --before /tmp/old/bin/apache-advisor \\
        --after /tmp/new/bin/apache-advisor [--vhosts 2000 --vhosts 20000]

The generated trees come in the shapes of bench/vhost_tree.py: the speed
benchmark's (plain, logged, fixable, tls), one with findings and a
suppression in every host, and the same with every host in the main file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vhost_tree import generate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("text", "json", "sarif", "github")


def fixture_cases() -> list[tuple[str, list[str], dict[str, str]]]:
    """Each rule fixture with the arguments its `# lint-args:` line gives."""
    cases = []
    for path in sorted((REPO / "corpus" / "rules").glob("*/*.conf")):
        args: list[str] = []
        for line in path.read_text(errors="replace").splitlines()[:5]:
            match = re.match(r"^#\s*lint-args:\s*(.*)$", line)
            if match:
                args = match.group(1).split()
        cases.append((str(path.relative_to(REPO)), [str(path.relative_to(REPO)), *args], {}))
    return cases


def sample_cases() -> list[tuple[str, list[str], dict[str, str]]]:
    """Each corpus sample, with its server root and envvars as the tests use them."""
    samples = REPO / "corpus" / "samples"
    cases = []
    for sample in json.loads((samples / "index.json").read_text())["samples"]:
        args = [str((samples / sample["main"]).relative_to(REPO))]
        if sample.get("server_root"):
            args += ["--server-root", str(samples / sample["server_root"])]
        env = {}
        if sample.get("envvars"):
            for line in (samples / sample["envvars"]).read_text().splitlines():
                match = re.match(r"^\s*export\s+(\w+)=(.*)$", line)
                if match:
                    env[match.group(1)] = match.group(2).strip().strip('"')
        cases.append((f"sample {sample['name']}", args, env))
    return cases


def tree_cases(directory: Path, sizes: list[int]) -> list[tuple[str, list[str], dict[str, str]]]:
    cases = []
    for count in sizes:
        for label, shape, inline in (("plain", "plain", False), ("noisy", "noisy", False),
                                     ("noisy-inline", "noisy", True), ("logged", "logged", False),
                                     ("fixable", "fixable", False), ("tls", "tls", False)):
            main = generate(directory / f"{label}-{count}", count, inline=inline, shape=shape)
            cases.append((f"{count} vhosts, {label}", [str(main)], {}))
    return cases


def run(advisor: str, args: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    completed = subprocess.run([advisor, "lint", "--no-cache", *args], cwd=REPO, env=env,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
    return completed.returncode, completed.stdout, completed.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the apache-advisor executable to compare against")
    parser.add_argument("--after", required=True, help="the apache-advisor executable under test")
    parser.add_argument("--vhosts", type=int, action="append",
                        help="size of the generated trees (repeat for several; default 2,000)")
    parser.add_argument("--keep", type=Path, help="write differing outputs here")
    args = parser.parse_args()
    sizes = args.vhosts or [2000]
    differences = 0
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = fixture_cases() + sample_cases() + tree_cases(Path(tmp), sizes)
        for label, lint_args, extra_env in cases:
            env = {**os.environ, **extra_env, "NO_COLOR": "1"}
            env.pop("APACHE_ADVISOR_NO_CACHE", None)
            for output_format in FORMATS:
                command = ["--format", output_format, *lint_args]
                before = run(args.before, command, env)
                after = run(args.after, command, env)
                compared += 1
                if before == after:
                    continue
                differences += 1
                what = [name for name, a, b in zip(("exit code", "stdout", "stderr"), before, after) if a != b]
                print(f"DIFFERENT ({', '.join(what)}): {label}, --format {output_format}", flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    stem = re.sub(r"[^A-Za-z0-9]+", "_", f"{label}_{output_format}")
                    for side, result in (("before", before), ("after", after)):
                        (args.keep / f"{stem}.{side}.out").write_bytes(result[1])
                        (args.keep / f"{stem}.{side}.err").write_bytes(result[2] + f"\nexit {result[0]}\n".encode())
    print(f"{compared} reports compared, {differences} different")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
