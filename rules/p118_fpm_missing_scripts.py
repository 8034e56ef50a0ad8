"""P118: every request for a .php name goes to php-fpm, the script there or not."""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

from advisor.config.fpm_pools import proxy_address
from advisor.config.model import Directive, Section
from advisor.lint.context import LintContext
from advisor.lint.rule import Doc, Report, Rule

from ._served import Site, deciding, owned, sites
from .e415_proxy_without_reverse import by_owner, owner_of

DOC = Doc(
    summary="PHP handed to php-fpm with no check that the script exists: missing ones cost a child",
    what=(
        "Finds the lines that hand PHP to php-fpm through mod_proxy_fcgi: `SetHandler "
        "\"proxy:...fcgi://...\"` in a <FilesMatch>, <Files> or <LocationMatch> that matches "
        "a .php name, `AddHandler \"proxy:...\" .php`, and a ProxyPassMatch of .php URLs to "
        "fcgi://. Flags the line unless an enclosing `<If \"-f %{REQUEST_FILENAME}\">` (or "
        "-s, -e) guards it, or every site it serves routes missing files itself (a "
        "`RewriteCond ... -f`, FallbackResource) or may do so in .htaccess (AllowOverride "
        "FileInfo or All on its DocumentRoot). Information for a handler, a warning for "
        "ProxyPassMatch, which never looks at the file system."
    ),
    why=(
        "httpd does not look for the script before it proxies: /wp-login.php on a site "
        "without it, and every other name a scanner tries, takes a connection to the pool "
        "and a php-fpm child, which stats the file, logs \"Primary script unknown\" and "
        "answers a bare \"File not found.\" instead of the site's 404 page. Almeida et al. "
        "(sec. 4.2) estimated the fixed cost of a zero-byte request at about 25 ms (parsing, "
        "logging, the header on the wire); here it is paid twice, in httpd and in php-fpm, for an answer httpd could "
        "give from one stat(). And the pool is a bounded server: Andersson et al. (2003) "
        "fitted K = 208 to 298 jobs for Apache itself, past which arrivals are blocked; "
        "scanner traffic spends those places. ProxyPassMatch also sends paths like "
        "/uploads/a.jpg/x.php, which php-fpm resolves to a.jpg with cgi.fix_pathinfo=1 "
        "when its security.limit_extensions has been widened."
    ),
    evidence=(
        "Almeida et al. (sec. 4.2): a fixed cost of about 25 ms per request; Andersson et al. "
        "(2003): a pool holds K = 208 to 298 jobs and blocks the rest."
    ),
    bad='<FilesMatch ".+\\.php$">\n    SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"\n</FilesMatch>',
    good=('<FilesMatch ".+\\.php$">\n    <If "-f %{REQUEST_FILENAME}">\n'
          '        SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"\n'
          '    </If>\n</FilesMatch>'),
    fix=(
        "Put the SetHandler inside `<If \"-f %{REQUEST_FILENAME}\">` (httpd 2.4.10 and later) "
        "so that httpd answers 404 itself; replace ProxyPassMatch with such a handler."
    ),
    references=(
        "Almeida et al., WebMonitor study of Apache, sec. 4.2 (fixed cost of a request)",
        "Andersson, Cao, Kihl & Nyberg 2003, MMPP/G/1/K*PS model of Apache (blocking at K)",
        "https://cwiki.apache.org/confluence/display/HTTPD/PHP-FPM",
        "https://httpd.apache.org/docs/2.4/mod/mod_proxy_fcgi.html",
        "https://www.php.net/manual/en/install.fpm.configuration.php (security.limit_extensions)",
    ),
)

_SCRIPT = "index.php"
_FILE_TEST = re.compile(r"(?:^|[\s(!])-[fseFU]\s")
_FILE_SECTIONS = frozenset(("files", "filesmatch", "locationmatch", "location"))


@lru_cache(maxsize=256)
def _matches_php(kind: str, pattern: tuple[str, ...]) -> bool:
    """Whether a section with these arguments applies to a .php name."""
    regex = kind.endswith("match") or (len(pattern) == 2 and pattern[0] == "~")
    text = pattern[-1] if pattern else ""
    target = _SCRIPT if kind.startswith("files") else "/" + _SCRIPT
    if regex:
        try:
            return re.search(text, target) is not None
        except re.error:
            return False
    if kind == "files":
        return fnmatch.fnmatchcase(_SCRIPT, text)
    return False  # <Location /path>: a prefix, not a script name


def _guarded(node: Directive) -> bool:
    """Inside an <If> (or <ElseIf>) that tests that a file exists."""
    return any(section.lname in ("if", "elseif") and _FILE_TEST.search(" " + " ".join(section.args) + " ")
               for section in node.enclosing())


def _handoffs(ctx: LintContext) -> list[tuple[Directive, str]]:
    """(line, kind) for each line that hands .php names to php-fpm."""
    found: list[tuple[Directive, str]] = []
    for node in ctx.directives("SetHandler"):
        if not node.args or not node.args[0].lower().startswith("proxy:") or proxy_address(node.args[0]) is None:
            continue
        section = next((s for s in node.enclosing() if s.lname in _FILE_SECTIONS), None)
        if section is not None and _matches_php(section.lname, tuple(section.args)):
            found.append((node, "handler"))
    for node in ctx.directives("AddHandler"):
        if (len(node.args) >= 2 and node.args[0].lower().startswith("proxy:")
                and proxy_address(node.args[0]) is not None
                and any(ext.lower().lstrip(".") == "php" for ext in node.args[1:])):
            found.append((node, "handler"))
    for node in ctx.directives("ProxyPassMatch"):
        if len(node.args) >= 2 and proxy_address(node.args[1]) is not None:
            if _matches_php("locationmatch", (node.args[0],)):
                found.append((node, "match"))
    return found


class _Servers:
    """Whether the sites a handoff line serves send missing scripts on: each
    grouping fetched once per run, each site judged once (a tree of 20,000
    hosts has a handoff line in thousands of them)."""

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.root = ctx.config.effective
        self.all_sites = sites(ctx)
        self.by_section = {site.section: site for site in self.all_sites[1:]}
        self.conditions = by_owner(ctx, "RewriteCond")
        self.fallbacks = by_owner(ctx, "FallbackResource")
        self.overrides = owned(ctx, "AllowOverride")
        self.verdicts: dict[Section, bool] = {}

    def routes_missing_files(self, owner: Section) -> bool:
        """A RewriteCond that tests for a file, or FallbackResource, in the server."""
        root = self.root
        for where in (owner, root) if owner is not root else (root,):
            for node in self.conditions.get(where, []):
                if len(node.args) >= 2 and node.args[1].lstrip("!") in ("-f", "-s", "-F", "-U"):
                    return True
            if self.fallbacks.get(where):
                return True
        return False

    def may_override(self, site: Site) -> bool:
        """AllowOverride lets .htaccess in the DocumentRoot rewrite (FileInfo or All)."""
        if not site.document_root:
            return False
        decided, _ = deciding(self.overrides, site, site.document_root)
        if decided is None:
            return False
        words = {arg.lower() for arg in decided.args}
        return "all" in words or "fileinfo" in words

    def unchecked(self, owner: Section) -> tuple[int, int]:
        """(sites that send missing scripts on, sites the line serves)."""
        root = self.root
        if owner is root:
            served = self.all_sites[1:] or self.all_sites[:1]
        else:
            site = self.by_section.get(owner)
            served = [site] if site is not None else []
        bad = 0
        for site in served:
            key = site.section if site.section is not None else root
            verdict = self.verdicts.get(key)
            if verdict is None:
                verdict = self.verdicts[key] = not (self.routes_missing_files(key) or self.may_override(site))
            bad += verdict
        return bad, len(served)


def check(ctx: LintContext, report: Report) -> None:
    if ctx.modules_known and not ctx.has_module("proxy_fcgi_module"):
        return
    handoffs = _handoffs(ctx)
    servers = _Servers(ctx) if handoffs else None
    for node, kind in handoffs:
        if _guarded(node):
            continue
        bad, total = servers.unchecked(owner_of(ctx, node))  # type: ignore[union-attr]
        if not bad:
            continue
        scope = "" if total < 2 else f" (all {total} sites)" if bad == total else f" ({bad} of {total} sites)"
        if kind == "match":
            report(node, f"ProxyPassMatch sends every URL ending in .php to php-fpm{scope} without looking "
                         "for the file: a missing script takes a php-fpm child and gets php-fpm's bare "
                         "\"File not found.\", and a path such as /uploads/a.jpg/x.php reaches it too. "
                         "Use a SetHandler guarded by <If \"-f %{REQUEST_FILENAME}\"> instead.",
                   fix='<FilesMatch "\\.php$"> <If "-f %{REQUEST_FILENAME}"> SetHandler "proxy:..." </If> </FilesMatch>',
                   severity="warning")
        else:
            report(node, f"{node.name} hands every .php name to php-fpm{scope} without checking that the "
                         "script exists: a request for a missing one (a scanner's /wp-login.php) takes a "
                         "php-fpm child and gets php-fpm's bare \"File not found.\" instead of httpd's 404.",
                   fix=f'<If "-f %{{REQUEST_FILENAME}}"> around this {node.name}')


RULE = Rule(code="P118", slug="fpm-unchecked-scripts", severity="info", category="performance",
            directives=("SetHandler", "AddHandler", "ProxyPassMatch", "RewriteCond", "FallbackResource"),
            doc=DOC, check=check)
