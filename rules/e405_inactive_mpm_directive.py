"""E405: tuning written for an MPM that is not the one loaded."""

from __future__ import annotations


from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule
from advisor.config.model import Node

from ._mpm import MPM_DIRECTIVES, MPM_SPECIFIC, canonical_key

_MPM_OF = {
    "mpm_prefork_module": "prefork", "prefork.c": "prefork",
    "mpm_worker_module": "worker", "worker.c": "worker",
    "mpm_event_module": "event", "event.c": "event",
    "mpm_itk_module": "itk", "mpm_itk.c": "itk",
    "mpm_winnt_module": "winnt", "mpm_winnt.c": "winnt",
    "mpm_netware_module": "netware", "mpm_netware.c": "netware",
    "mpmt_os2_module": "mpmt_os2", "mpmt_os2.c": "mpmt_os2",
}
# The same knob under the other kind of MPM: a prefork block's MinSpareServers
# is answered by a worker block's MinSpareThreads.
_EQUIVALENT = {"minspareservers": "minsparethreads", "maxspareservers": "maxsparethreads",
               "minsparethreads": "minspareservers", "maxsparethreads": "maxspareservers"}
_COMMON = {"maxconnectionsperchild", "listenbacklog"}
# Sizing directives whose value matters; Listen, PidFile... are the same for all.
_TUNING = MPM_SPECIFIC | {"maxconnectionsperchild", "maxrequestsperchild", "listenbacklog"}

DOC = Doc(
    summary="Directive for an MPM that is not loaded (the tuning does nothing, or httpd refuses it)",
    what=(
        "Flags MPM tuning inside <IfModule> for an MPM that is not loaded when the loaded "
        "MPM gets no value for the same directive (httpd skips the block, so the server "
        "runs on defaults), and MPM-specific directives outside any guard that the loaded "
        "MPM does not have (ThreadsPerChild under prefork, MinSpareServers under event), "
        "which httpd refuses as invalid commands."
    ),
    why=(
        "A common upgrade trap: the admin tunes the <IfModule mpm_prefork_module> block "
        "after the distribution switched to event, and the server keeps running with "
        "default limits. Pool size is what decides overload behaviour: Arlitt & Williamson "
        "(2004, sec. 5.1.5) found MaxClients changes how the server fails under overload, "
        "and Kegel (1997) that the process count decides whether RAM suffices."
    ),
    evidence=(
        "Arlitt & Williamson (2004, sec. 5.1.5): the MaxClients setting decides how Apache "
        "behaves under overload, so a setting that never applies leaves that to defaults."
    ),
    bad=(
        "LoadModule mpm_event_module modules/mod_mpm_event.so\n<IfModule mpm_prefork_module>\n"
        "    MaxRequestWorkers 600\n</IfModule>"
    ),
    good=(
        "LoadModule mpm_event_module modules/mod_mpm_event.so\n<IfModule mpm_event_module>\n"
        "    ServerLimit 24\n    MaxRequestWorkers 600\n</IfModule>"
    ),
    fix="Move the values into a block for the MPM that is loaded (or unguarded), translating Servers to Threads.",
    references=(
        "Arlitt & Williamson 2004, sec. 5.1.5",
        "https://httpd.apache.org/docs/2.4/mpm.html",
        "https://httpd.apache.org/docs/2.4/mod/mpm_common.html",
    ),
)


MPM_LABELS = ("StartServers", "MinSpareServers", "MaxSpareServers", "MinSpareThreads",
              "MaxSpareThreads", "ThreadsPerChild", "ThreadLimit", "ServerLimit",
              "MaxRequestWorkers", "MaxConnectionsPerChild", "ListenBacklog",
              "AsyncRequestWorkerFactor")


def _guarding_mpm(node: Node) -> str | None:
    """The MPM named by the false <IfModule> that made `node` inactive: the
    nearest enclosing section that is itself active is the one that failed."""
    parent = node.parent
    while parent is not None and not parent.is_root and not parent.active:
        parent = parent.parent
    if parent is None or parent.is_root or parent.name.lower() != "ifmodule" or not parent.args:
        return None
    word = parent.args[0]
    if word.startswith("!"):
        return None
    return _MPM_OF.get(word)


def check(ctx: LintContext, report: Report) -> None:
    mpm = ctx.mpm
    if mpm not in MPM_DIRECTIVES:
        return
    own = MPM_DIRECTIVES[mpm]
    applied = {canonical_key(name) for name in ctx.effective.top if name in _TUNING}
    for node in ctx.raw_directives(*_TUNING, active_only=False):
        lname = node.name.lower()
        if node.active:
            if lname in MPM_SPECIFIC and lname not in own:
                report(node, f"{node.name} is not a directive of the {mpm} MPM that is loaded: "
                             "httpd refuses it as an invalid command. Remove it or guard it with "
                             f"<IfModule> for its MPM.", severity="error")
            continue
        other = _guarding_mpm(node)
        if other is None or other == mpm:
            continue
        key = canonical_key(lname)
        target = key if key in own or key in _COMMON else _EQUIVALENT.get(key)
        if target is None or not (target in own or target in _COMMON):
            continue  # a knob the loaded MPM does not have (ThreadsPerChild under prefork)
        if target in applied:
            continue  # the loaded MPM has its own value: this block is a template
        label = next((n for n in MPM_LABELS if n.lower() == target), target)
        report(node, f"{node.name} {node.raw_args} is set only for the {other} MPM, but {mpm} is "
                     f"loaded: httpd skips this block, so {label} stays at {mpm}'s default.")


RULE = Rule(code="E405", slug="inactive-mpm-directive", severity="warning", category="correctness",
            directives=("StartServers", "MinSpareServers", "MaxSpareServers", "MinSpareThreads",
                        "MaxSpareThreads", "ThreadsPerChild", "ThreadLimit", "ServerLimit",
                        "MaxRequestWorkers", "MaxConnectionsPerChild"), doc=DOC, check=check)
