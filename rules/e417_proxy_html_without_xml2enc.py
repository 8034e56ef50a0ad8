"""E417: mod_proxy_html loaded without mod_xml2enc."""

from __future__ import annotations

import os

from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

DOC = Doc(
    summary="mod_proxy_html loaded without mod_xml2enc: non-ASCII text of proxied pages garbled",
    what=(
        "Flags the LoadModule line of proxy_html_module when xml2enc_module is not loaded. A "
        "warning when some ProxyHTMLEnable On puts the filter to work, information when "
        "nothing does (the module is then only loaded)."
    ),
    why=(
        "mod_proxy_html parses the backend's HTML with libxml2 and writes it back; finding "
        "out which character set a page is in, and converting to and from it, is "
        "mod_xml2enc's job. Without it httpd logs AH01425 at every start (\"I18n support in "
        "mod_proxy_html requires mod_xml2enc\"), and the filter parses every page without "
        "knowing its character set: accented letters and symbols of proxied pages are "
        "likely to come out mangled, as the message itself warns. Debian's "
        "proxy_html.load declares the dependency (`# Depends: proxy xml2enc`) for this "
        "reason; a hand-written LoadModule line misses it."
    ),
    evidence=(
        "httpd's mod_proxy_html manual: internationalisation needs mod_xml2enc; httpd logs "
        "AH01425 when it is missing."
    ),
    bad="LoadModule proxy_html_module modules/mod_proxy_html.so",
    good="LoadModule xml2enc_module modules/mod_xml2enc.so\nLoadModule proxy_html_module modules/mod_proxy_html.so",
    fix="Load mod_xml2enc as well (Debian: `a2enmod xml2enc`), or drop mod_proxy_html where nothing uses it.",
    references=(
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy_html.html",
        "https://httpd.apache.org/docs/2.4/mod/mod_xml2enc.html",
    ),
)


def check(ctx: LintContext, report: Report) -> None:
    if not ctx.has_module("proxy_html_module") or ctx.has_module("xml2enc_module", "mod_xml2enc.c"):
        return
    loaded = ctx.load_module_line("proxy_html_module")
    if loaded is None:
        return  # compiled in, or loaded by means the tree does not show
    directory = os.path.dirname(loaded.args[1]) if len(loaded.args) == 2 else "modules"
    fix = f"LoadModule xml2enc_module {os.path.join(directory, 'mod_xml2enc.so')}"
    enabled = [node for node in ctx.directives("ProxyHTMLEnable") if node.arg(0).lower() == "on"]
    if enabled:
        report(loaded, "mod_proxy_html is loaded without mod_xml2enc, and ProxyHTMLEnable On "
                       f"(line {enabled[0].line} of {os.path.basename(enabled[0].file)}) rewrites "
                       "proxied pages: httpd logs AH01425, and their non-ASCII characters are "
                       "likely to come out garbled.", fix=fix, severity="warning")
    else:
        report(loaded, "mod_proxy_html is loaded without mod_xml2enc (httpd logs AH01425 at every "
                       "start); nothing switches the filter on, so load mod_xml2enc or drop "
                       "mod_proxy_html.", fix=fix, severity="info")


RULE = Rule(code="E417", slug="proxy-html-without-xml2enc", severity="warning", category="correctness",
            directives=("LoadModule", "ProxyHTMLEnable"), doc=DOC, check=check)
