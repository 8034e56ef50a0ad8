"""What the live-host rules (S513-S518) share: the snapshot of the running
host in the host facts (advisor.lint.host.collect_live_facts), read only."""

from __future__ import annotations

from advisor.lint.context import LintContext


def snapshot(ctx: LintContext) -> dict | None:
    """The running host's facts, or None when the host was not read live."""
    live = ctx.facts.live
    return live if isinstance(live, dict) else None


def stat_of(live: dict, path: str | None) -> tuple[int, int, int, bool] | None:
    """(uid, gid, permission bits, is a directory) of `path` on the host."""
    if not path:
        return None
    found = live.get("stats", {}).get(path)
    if not found or len(found) < 4:
        return None
    return int(found[0]), int(found[1]), int(found[2]), bool(found[3])


def mode_text(mode: int) -> str:
    return f"{mode:04o}"


def owner_text(uid: int, gid: int) -> str:
    return f"{'root' if uid == 0 else f'uid {uid}'}:{'root' if gid == 0 else f'gid {gid}'}"


def at_directive(ctx: LintContext, name: str, value: str | None = None):
    """The server-scope line that sets `name` (to `value` when given), else the
    main file's location: where a finding about that setting points."""
    if value is not None:
        for node in ctx.directives(name):
            if node.args and node.arg(0).rstrip("/") == value.rstrip("/"):
                return node
    node = ctx.server_value(name)
    return node if node is not None else ctx.main_location()


def inside(path: str, directory: str) -> bool:
    directory = directory.rstrip("/")
    return path == directory or path.startswith(directory + "/")
