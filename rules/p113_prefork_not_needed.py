"""P113: prefork kept although nothing needs it."""

from __future__ import annotations

import os

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

# Modules that are not thread-safe and therefore need prefork.
NEEDS_PREFORK = ("php_module", "php5_module", "php7_module", "php8_module", "python_module",
                 "ruid2_module", "mpm_itk_module")

DOC = Doc(
    summary="prefork MPM although no loaded module needs it",
    what=(
        "Notes the prefork MPM when none of the loaded modules is one that needs it "
        "(mod_php, mod_python, mod_ruid2)."
    ),
    why=(
        "prefork gives each connection a whole process, including connections that sit "
        "idle between keep-alive requests. Kegel (1997) found the single-process, "
        "event-driven thttpd needed far less RAM than process-per-connection Apache (with "
        "64 MB it did no disk I/O where Apache still thrashed); the event MPM brings that "
        "design to httpd by parking idle keep-alive connections in a listener thread. "
        "Arlitt & Williamson (2004, sec. 5.1.6) saw persistent connections tie up more "
        "processes, the cost event avoids."
    ),
    evidence=(
        "Kegel (1997): an event-driven server served the same load in far less RAM than "
        "process-per-connection Apache, which needed 64 MB and still thrashed."
    ),
    bad="LoadModule mpm_prefork_module modules/mod_mpm_prefork.so",
    good="LoadModule mpm_event_module modules/mod_mpm_event.so",
    fix=(
        "Load mpm_event instead of mpm_prefork (Debian: `a2dismod mpm_prefork && a2enmod "
        "mpm_event`), and convert StartServers/MinSpareServers/MaxSpareServers to their "
        "thread equivalents."
    ),
    references=(
        "Kegel 1997, 'Fixing an overloaded web server' (thttpd vs Apache)",
        "Arlitt & Williamson 2004, sec. 5.1.6",
        "https://httpd.apache.org/docs/2.4/mod/event.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    if ctx.mpm != "prefork" or ctx.facts.version_key != "2.4":
        return
    if ctx.has_module(*NEEDS_PREFORK):
        return
    loaded = ctx.load_module_line("mpm_prefork_module")
    fix = None
    if loaded is not None and len(loaded.args) == 2:
        directory = os.path.dirname(loaded.args[1])
        fix = f"LoadModule mpm_event_module {os.path.join(directory, 'mod_mpm_event.so')}"
    report(loaded or ctx.main_location(),
           "prefork MPM with no module that needs it: every keep-alive connection holds a "
           "process; the event MPM would park idle connections without a worker.",
           fix=fix)


RULE = Rule(code="P113", slug="prefork-not-needed", severity="info", category="performance",
            directives=("LoadModule",), doc=DOC, check=check)
