"""R302: nothing limits how slowly a client may send its request."""

from __future__ import annotations

import os
import re

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

_DISABLED = re.compile(r"^(header|body|handshake)=0$", re.IGNORECASE)

DOC = Doc(
    summary="No request read timeout (mod_reqtimeout not loaded, or its limits off)",
    what=(
        "Flags a config that does not load mod_reqtimeout, a RequestReadTimeout that turns "
        "the header or body limit off (`header=0`, `body=0`), and, for targets before "
        "2.3.15 where the module has no defaults, a loaded mod_reqtimeout with no "
        "RequestReadTimeout. On 2.4 the module's defaults (header=20-40,MinRate=500 "
        "body=20,MinRate=500) apply when it is loaded, so an absent directive is fine there."
    ),
    why=(
        "Without a read timeout a client that sends its headers a byte at a time "
        "(slowloris) holds a worker for the whole Timeout on every read, and a few hundred "
        "such connections fill any pool. Andersson et al. (2003) model Apache as holding at "
        "most K jobs and blocking the rest (K = 208-298 in their simulations, values reused "
        "from the authors' earlier study, sec. III.C, Table 2); that slots held by slow "
        "clients are then slots refused to others is our reading of the model. Kegel (1997) "
        "relied on thttpd's 5-second header timeout for the same reason."
    ),
    evidence=(
        "Andersson et al. (2003, sec. II, Table 2): a server holding at most K jobs (K = "
        "208-298) blocks every request beyond K; slow clients that never finish a request "
        "hold some of those K (our inference)."
    ),
    bad="# mod_reqtimeout not loaded",
    good=(
        "LoadModule reqtimeout_module modules/mod_reqtimeout.so\n"
        "RequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500"
    ),
    fix="Load mod_reqtimeout (Debian: `a2enmod reqtimeout`) and keep non-zero header and body limits.",
    references=(
        "Andersson, Cao, Kihl & Nyberg 2003, sec. II (blocking)",
        "Kegel 1997 (thttpd header timeout)",
        "https://httpd.apache.org/docs/2.4/mod/mod_reqtimeout.html",
    ),
)


def _module_path(ctx: LintContext) -> str:
    for node in ctx.raw_directives("LoadModule"):
        if len(node.args) == 2:
            return os.path.join(os.path.dirname(node.args[1]), "mod_reqtimeout.so")
    return "modules/mod_reqtimeout.so"


def check(ctx: LintContext, report: Report) -> None:
    if not ctx.modules_known:
        return
    if not ctx.has_module("reqtimeout_module", "mod_reqtimeout.c"):
        report(ctx.main_location(),
               "mod_reqtimeout is not loaded: nothing limits how slowly a client may send its "
               "request headers and body, so slow clients can hold every worker.",
               fix=f"LoadModule reqtimeout_module {_module_path(ctx)}")
        return
    settings = ctx.directives("RequestReadTimeout")
    for node in settings:
        off = [arg for arg in node.args if _DISABLED.match(arg) and not arg.lower().startswith("handshake")]
        if off:
            report(node, f"RequestReadTimeout {' '.join(off)} turns the read limit off: slow "
                         "clients can hold workers for the whole Timeout on every read.")
    if not settings and not ctx.at_least(2, 3, 15):
        loaded = ctx.load_module_line("reqtimeout_module")
        report(loaded or ctx.main_location(),
               "mod_reqtimeout is loaded without RequestReadTimeout; before 2.3.15 it has no "
               "default limits, so it does nothing.",
               fix="RequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500")


RULE = Rule(code="R302", slug="no-request-read-timeout", severity="warning",
            category="reliability", directives=("RequestReadTimeout", "LoadModule"), doc=DOC,
            check=check)
