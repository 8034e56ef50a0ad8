"""Workloads: the files a sandbox serves and the request mix httperf sends.

Each workload is a recipe for httperf (one URI, or a URI list) plus the files
it needs in a docroot. The sandbox writes the files; for an existing staging
server the admin must provide the same paths under `--url`.
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from advisor.errors import UsageError

ONE_KB = 1024
ONE_MB = 1024 * 1024

# Almeida et al. (1996), Table 1, "workload A": per class the number of files,
# their total size in KB and the class's total access probability.
ALMEIDA_WORKLOAD_A: tuple[tuple[str, str, int, int, float], ...] = (
    # (class, extension, files, total KB, access probability)
    ("html", "html", 24, 180, 0.192),
    ("images", "gif", 29, 385, 0.754),
    ("sound", "wav", 20, 3580, 0.05),
    ("video", "mpg", 4, 9216, 0.004),
)

# Fixed seed: every sandbox gets the same file sizes and the same URI order,
# so two trials of the same workload are comparable.
ALMEIDA_SEED = 1996
ALMEIDA_URI_COUNT = 4000

WORKLOAD_NAMES = ("1k", "1m", "almeida", "browser", "cgi", "slow", "mixed", "mixed-cgi", "php", "url")
# `staging up --php-fpm`'s script (advisor.tuner.staging.phpfpm): the mixed
# shape in a php-fpm child, behind mod_proxy_fcgi.
PHP_SCRIPT = "work.php"
# The mixed workload runs in the worker under mod_lua, not as a CGI: when a
# request ends before its CGI process is reaped, APR sends the process
# SIGTERM and sleeps 47 ms before it looks again, and under CPU contention
# that struck 36-40 % of the requests of a pool that computes and waits
# (docs/capacity.md, section 3b): a cost of mod_cgi, not of computing and
# waiting. `mixed-cgi` keeps the CGI form for measuring that cost.
MIXED_SCRIPT = "mixed.lua"


@dataclass(frozen=True)
class Workload:
    """What httperf asks for: one URI or a NUL-separated URI list (--wlog)."""

    name: str
    uri: str = "/"
    uri_list: str | None = None  # path of an httperf --wlog file
    description: str = ""
    expected_bytes: int | None = None  # content length of one reply, if fixed
    extra: dict[str, str] = field(default_factory=dict)


def heavy_tailed_sizes(count: int, total_bytes: int, rng: random.Random) -> list[int]:
    """`count` Pareto-distributed sizes (shape 1.2) scaled to sum to `total_bytes`.

    A shape near 1 gives the heavy tail Almeida et al. describe: most files
    small, a few much larger, while the class total matches Table 1 exactly.
    """
    if count <= 0:
        return []
    raw = [rng.paretovariate(1.2) for _ in range(count)]
    scale = total_bytes / sum(raw)
    sizes = [max(64, int(value * scale)) for value in raw]
    sizes[-1] += total_bytes - sum(sizes)  # absorb rounding so the total is exact
    if sizes[-1] < 64:
        sizes[-1] = 64
    return sizes


def write_docroot(docroot: Path, cgi_dir: Path) -> None:
    """Create every workload file the sandbox serves (idempotent)."""
    docroot.mkdir(parents=True, exist_ok=True)
    cgi_dir.mkdir(parents=True, exist_ok=True)
    write_pattern(docroot / "1k.html", ONE_KB)
    write_pattern(docroot / "1m.bin", ONE_MB)
    (docroot / "index.html").write_text("apache-advisor sandbox\n")
    rng = random.Random(ALMEIDA_SEED)
    uris: list[str] = []
    weights: list[float] = []
    for klass, ext, files, total_kb, probability in ALMEIDA_WORKLOAD_A:
        class_dir = docroot / "almeida" / klass
        class_dir.mkdir(parents=True, exist_ok=True)
        for index, size in enumerate(heavy_tailed_sizes(files, total_kb * ONE_KB, rng)):
            name = f"{klass}{index:02d}.{ext}"
            write_pattern(class_dir / name, size)
            uris.append(f"/almeida/{klass}/{name}")
            weights.append(probability / files)  # equal share within a class
    picks = rng.choices(uris, weights=weights, k=ALMEIDA_URI_COUNT)
    # httperf --wlog reads NUL-terminated URIs.
    (docroot.parent / "almeida.wlog").write_bytes(b"".join(u.encode() + b"\0" for u in picks))
    assets = resources.files("advisor.tuner.load") / "assets"
    for script in ("sum.cgi", "sleep.cgi"):
        target = cgi_dir / script
        with resources.as_file(assets / script) as source:
            shutil.copyfile(source, target)
        os.chmod(target, 0o755)
    with resources.as_file(assets / MIXED_SCRIPT) as source:
        shutil.copyfile(source, docroot / MIXED_SCRIPT)


def write_pattern(path: Path, size: int) -> None:
    """A filler file of exactly `size` bytes (left alone when one of that size is there)."""
    if path.exists() and path.stat().st_size == size:
        return
    line = b"apache-advisor workload file; bytes are filler.\n"
    data = (line * (size // len(line) + 1))[:size]
    path.write_bytes(data)


def make_workload(
    name: str,
    work_dir: Path | None,
    *,
    cgi_n: int = 100000,
    sleep_ms: int = 1000,
    uri: str | None = None,
) -> Workload:
    """Resolve a workload name to what httperf sends.

    `work_dir` is the sandbox directory holding `almeida.wlog`; for an existing
    server the list is generated next to the journal instead.
    """
    if name == "1k":
        return Workload("1k", "/1k.html", description="1 KB static file (Arlitt)", expected_bytes=ONE_KB)
    if name == "1m":
        return Workload("1m", "/1m.bin", description="1 MB static file (Arlitt)", expected_bytes=ONE_MB)
    if name == "cgi":
        return Workload("cgi", f"/cgi-bin/sum.cgi?n={cgi_n}", description=f"CPU-bound CGI summing {cgi_n} random numbers (Andersson)")
    if name == "slow":
        return Workload("slow", f"/cgi-bin/sleep.cgi?ms={sleep_ms}", description=f"slow endpoint sleeping {sleep_ms} ms")
    if name == "mixed":
        # In the worker (mod_lua), as mod_php runs: see MIXED_SCRIPT.
        return Workload("mixed", f"/{MIXED_SCRIPT}?n={cgi_n}&ms={sleep_ms}",
                        description=f"in-process endpoint (mod_lua) summing {cgi_n} random numbers, "
                                    f"then sleeping {sleep_ms} ms")
    if name == "mixed-cgi":
        return Workload("mixed-cgi", f"/cgi-bin/sleep.cgi?n={cgi_n}&ms={sleep_ms}",
                        description=f"CGI summing {cgi_n} random numbers, then sleeping {sleep_ms} ms")
    if name == "php":
        return Workload("php", f"/{PHP_SCRIPT}?n={cgi_n}&wait_ms={sleep_ms}",
                        description=f"PHP in php-fpm (staging up --php-fpm) summing {cgi_n} square roots, "
                                    f"then sleeping {sleep_ms} ms")
    if name in ("almeida", "browser"):
        if work_dir is None:
            raise UsageError(f"the {name} workload needs a sandbox or a work directory")
        wlog = work_dir / "almeida.wlog"
        if not wlog.exists():
            write_docroot(work_dir / "docroot", work_dir / "cgi-bin")
        if name == "browser":
            return Workload("browser", "/", uri_list=str(wlog),
                            description="visits of pages and their assets over Almeida's workload A file set, "
                                        "fetched as a browser does (advisor.tuner.load.browser_pages)")
        return Workload("almeida", "/", uri_list=str(wlog), description="heavy-tailed file set, Almeida workload A proportions")
    if name == "url":
        return Workload("url", uri or "/", description="the path of --url")
    raise UsageError(f"unknown workload {name!r}", hint=f"choose one of {', '.join(WORKLOAD_NAMES)}")


# Sessions cut from a URI list: enough distinct ones that a trial seldom
# repeats one (httperf reuses the file's sessions round-robin past the end).
SESSION_LOG_SESSIONS = 800


def session_log(uri_list: str, calls: int, sessions: int = SESSION_LOG_SESSIONS) -> str:
    """An httperf --wsesslog file: sessions of `calls` requests taken in order from `uri_list`.

    httperf's --wsess sends one --uri in every call, so a session workload
    over a URI list (almeida) needs the session-log generator instead. Each
    request is a burst of its own (no line starts with whitespace), so the
    think time given on the command line separates every pair of requests,
    as it does with --wsess --burst-length=1. Written once next to the list
    (the name carries the call count); the URI list itself never changes
    for a sandbox, whose file set comes from a fixed seed.
    """
    source = Path(uri_list)
    target = source.with_name(f"{source.stem}.{calls}calls.sesslog")
    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
        return str(target)
    uris = [u for u in source.read_bytes().split(b"\0") if u]
    if not uris:
        raise UsageError(f"{uri_list}: the URI list is empty", hint="recreate the sandbox's files (staging up)")
    lines: list[str] = []
    for index in range(sessions):
        for call in range(calls):
            lines.append(uris[(index * calls + call) % len(uris)].decode())
        lines.append("")  # a blank line ends a session
    tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, target)
    return str(target)
