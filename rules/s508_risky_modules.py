"""S508: WebDAV, CGI and server-side includes loaded, used or not."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from advisor.config.model import Directive
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="mod_dav/dav_fs, mod_cgi/cgid or mod_include loaded (warning when nothing uses it)",
    what=(
        "Looks at the modules the config really loads: dav_module, dav_fs_module, "
        "cgi_module, cgid_module and include_module. A module nothing in the config uses "
        "(no `Dav On`; no ScriptAlias or cgi-script handler; no INCLUDES filter, "
        "server-parsed handler or XBitHack) is a warning on its LoadModule line; a module "
        "in use is noted as information, with the directive that uses it."
    ),
    why=(
        "These three modules let a request do more than read a file: WebDAV lets clients "
        "write, move and delete files, CGI runs a program per request, and server-side "
        "includes run directives (and with `exec`, commands) found in the pages. A loaded "
        "but unused module is attack surface with no benefit: an Options or handler line "
        "added later, or in an .htaccess file, switches it on. When the site needs one, the "
        "finding is only a reminder to keep what it runs audited. dev-sec's apache-baseline "
        "(apache-08) fails on any of these LoadModule lines and CIS's benchmark asks to "
        "disable WebDAV; the rule tells used from unused instead of failing both alike."
    ),
    evidence=(
        "CIS Apache HTTP Server 2.4 Benchmark 2.3 (disable the WebDAV modules); dev-sec "
        "apache-baseline apache-08 (no dav, cgi, cgid or include modules)."
    ),
    bad="LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so\n# ...and no ScriptAlias anywhere",
    good=(
        "LoadModule cgid_module /usr/lib/apache2/modules/mod_cgid.so\n"
        "ScriptAlias /cgi-bin/ /usr/lib/cgi-bin/"
    ),
    fix=(
        "Disable what nothing uses (Debian: `a2dismod dav_fs dav cgid cgi include`). Where a "
        "module is needed, confine it: ScriptAlias to one directory rather than ExecCGI on "
        "content, `Options IncludesNOEXEC` rather than Includes, Dav On only where clients "
        "must write, behind authentication."
    ),
    references=(
        "dev-sec apache-baseline apache-08 (Should not load certain modules)",
        "CIS Apache HTTP Server 2.4 Benchmark 2.3 (Ensure the WebDAV modules are disabled)",
        "https://httpd.apache.org/docs/2.4/mod/mod_dav.html",
        "https://httpd.apache.org/docs/2.4/mod/mod_cgi.html",
        "https://httpd.apache.org/docs/2.4/mod/mod_include.html",
    ),
)


def _dav_user(node: Directive) -> bool:
    return node.lname == "dav" and bool(node.args) and node.arg(0).lower() != "off"


def _cgi_user(node: Directive) -> bool:
    if node.lname in ("scriptalias", "scriptaliasmatch"):
        return True
    return bool(node.args) and node.arg(0).lower() == "cgi-script"


def _include_user(node: Directive) -> bool:
    if node.lname == "xbithack":
        return bool(node.args) and node.arg(0).lower() != "off"
    if node.lname in ("addhandler", "sethandler"):
        return bool(node.args) and node.arg(0).lower() == "server-parsed"
    words = " ".join(node.args).upper().replace(";", " ").replace(",", " ").split()
    return "INCLUDES" in words


@dataclass(frozen=True)
class RiskyModule:
    module_id: str
    label: str
    does: str
    users: tuple[str, ...]
    """Directives that can put the module to work."""
    uses: Callable[[Directive], bool]


RISKY = (
    RiskyModule("dav_module", "mod_dav", "lets clients write, move and delete files",
                ("Dav",), _dav_user),
    RiskyModule("dav_fs_module", "mod_dav_fs", "stores what WebDAV clients write",
                ("Dav",), _dav_user),
    RiskyModule("cgi_module", "mod_cgi", "runs a program for every CGI request",
                ("ScriptAlias", "ScriptAliasMatch", "SetHandler", "AddHandler"), _cgi_user),
    RiskyModule("cgid_module", "mod_cgid", "runs a program for every CGI request",
                ("ScriptAlias", "ScriptAliasMatch", "SetHandler", "AddHandler"), _cgi_user),
    RiskyModule("include_module", "mod_include", "runs directives (and with exec, commands) in pages",
                ("AddOutputFilter", "SetOutputFilter", "AddOutputFilterByType", "FilterProvider",
                 "AddHandler", "SetHandler", "XBitHack"), _include_user),
)


def _includes_skipped(ctx: LintContext) -> bool:
    """Whether the reader left out a missing Include: what uses a module may be there."""
    return any(diagnostic.message.endswith("(skipped: httpd would refuse to start)")
               for diagnostic in ctx.config.diagnostics)


def check(ctx: LintContext, report: Report) -> None:
    for risky in RISKY:
        if not ctx.has_module(risky.module_id):
            continue
        line = ctx.load_module_line(risky.module_id)
        if line is None:
            if not ctx.modules_known:
                continue
            where: Directive | tuple[str, int] = ctx.main_location()
        else:
            where = line
        user = next((node for node in ctx.directives(*risky.users) if risky.uses(node)), None)
        if user is None and _includes_skipped(ctx):
            report(where, f"{risky.label} is loaded and no directive read uses it, but an "
                          "Include was skipped (--allow-missing-includes) and may; it "
                          f"{risky.does}.", severity="info")
        elif user is None:
            report(where, f"{risky.label} is loaded but nothing in the config uses it; it "
                          f"{risky.does}. Disable it (a2dismod) unless something needs it.",
                   severity="warning")
        else:
            report(where, f"{risky.label} is loaded and used ({user.name} at "
                          f"{os.path.basename(user.file)}:{user.line}); it {risky.does}: keep what it serves "
                          "confined and audited.", severity="info")


RULE = Rule(code="S508", slug="risky-modules", severity="warning", category="security",
            directives=("LoadModule", "Dav", "ScriptAlias", "ScriptAliasMatch", "AddHandler",
                        "SetHandler", "AddOutputFilter", "SetOutputFilter", "XBitHack"),
            doc=DOC, check=check, baseline=("apache-08",))
