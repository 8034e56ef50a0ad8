"""E410: an `<IfModule>` test that names no module httpd can know."""

from __future__ import annotations

import re
from functools import lru_cache

from advisor.config import catalog
from advisor.config.model import Section
from advisor.config.modules import DEBIAN_BUILTINS, MPM_NAMES, STOCK, source_name
from advisor.lint.context import LintContext
from advisor.lint.edits import Edit
from advisor.lint.rule import Doc, Report, Rule

# Names httpd 2.2 knew that 2.4 renamed: a 2.4 server never matches them.
_RENAMED_IN_24 = {
    "itk.c": ("mpm_itk.c", "itk.c is mpm-itk's name under httpd 2.2; under 2.4 it is mpm_itk.c"),
    "mod_disk_cache.c": ("mod_cache_disk.c", "mod_disk_cache of httpd 2.2 is mod_cache_disk in 2.4"),
    "disk_cache_module": ("cache_disk_module", "mod_disk_cache of httpd 2.2 is mod_cache_disk in 2.4"),
}

DOC = Doc(
    summary="<IfModule> names no module httpd knows: the test is always false (negated: always true)",
    what=(
        "Flags an <IfModule X> or <IfModule !X> whose X is a misspelt name of one of httpd's "
        "own modules: a shape of a module's name that httpd never answers to (`mpm_prefork` "
        "or `prefork` for mpm_prefork_module / prefork.c, `mod_ssl` or `ssl` for mod_ssl.c / "
        "ssl_module, the shared object's name `mod_ssl.so`, `mod_ldap.c` for util_ldap.c), "
        "a known name in other letter case (httpd compares case-sensitively), and the 2.2 "
        "names 2.4 renamed (`itk.c`, `mod_disk_cache.c`). httpd's own modules are those "
        "compiled in, every module Debian's apache2 ships and the MPMs, with their "
        "identifiers and source names. A name that is no shape of any of them (a "
        "third-party module such as mod_security2.c, mod_php7.c, mod_wsgi.c, pagespeed_module, "
        "or an old MPM like mpm_peruser_module) is never flagged: this rule cannot prove "
        "that no module has it. Names the config loads are always known. Only for httpd 2.4."
    ),
    why=(
        "httpd answers <IfModule> with a module's identifier (the first argument of "
        "LoadModule, `mpm_prefork_module`) or its source name (`prefork.c`), nothing else, "
        "and says nothing about a name that matches no module. The block is then skipped "
        "everywhere, or with `!` applied everywhere, whatever the server loads. Debian's "
        "older http2.conf guarded HTTP/2 with `<IfModule !mpm_prefork>`: since no module "
        "has that name, the guard held under prefork too and h2 stayed on where mod_http2 "
        "cannot serve it."
    ),
    evidence=(
        "Checked with Debian's httpd 2.4.71 (`apache2 -t -D DUMP_RUN_CFG` on Define lines "
        "inside each test): with prefork, mod_ssl and mod_ldap loaded, `mpm_prefork`, "
        "`prefork`, `ssl`, `mod_ssl`, `mod_ssl.so`, `Mod_ssl.c` and `mod_ldap.c` were all "
        "false and `!mpm_prefork` true; `mpm_prefork_module`, `prefork.c`, `mod_ssl.c`, "
        "`ssl_module` and `util_ldap.c` were true."
    ),
    bad="<IfModule !mpm_prefork>\n    Protocols h2 h2c http/1.1\n</IfModule>",
    good="<IfModule !mpm_prefork_module>\n    Protocols h2 h2c http/1.1\n</IfModule>",
    fix=(
        "Write the module's identifier (as on its LoadModule line, `mpm_prefork_module`) or "
        "its source name (`prefork.c`, `mod_ssl.c`); `apache2ctl -M` lists the identifiers."
    ),
    references=(
        "https://httpd.apache.org/docs/2.4/mod/core.html#ifmodule",
        "https://httpd.apache.org/docs/2.4/mod/mod_so.html#loadmodule",
    ),
)


@lru_cache(maxsize=1)
def _own_modules() -> tuple[tuple[str, str], ...]:
    """(identifier, source name) of httpd's own modules: compiled in, shipped, MPMs."""
    found = dict(DEBIAN_BUILTINS)
    for module_id, (_, source) in STOCK.shared.items():
        found[module_id] = source
    for module_id in MPM_NAMES:
        found.setdefault(module_id, source_name(module_id))
    return tuple(found.items())


@lru_cache(maxsize=1)
def _names_ever_known() -> frozenset[str]:
    """Lower-cased names some httpd module has or had (2.0 to 2.4): never a
    misspelling. The manual's catalog names modules by their page (mod_ldap),
    whose source name is `mod_<page>.c` except where the shipped module says
    otherwise (mod_ldap is util_ldap.c, as it was in 2.0 and 2.2)."""
    own = dict(_own_modules())
    names = {name.lower() for pair in own.items() for name in pair}
    for version in ("2.0", "2.2", "2.4"):
        for info in catalog.directives(version).values():
            for module in (info.module, *info.modules):
                if not module.startswith("mod_"):
                    names.add(f"{module}.c".lower())  # core, prefork, mpm_winnt...
                    continue
                module_id = f"{module[4:]}_module".lower()
                names.add(module_id)
                names.add(own.get(module_id, f"{module}.c").lower())
    return frozenset(names)


def _shapes(module_id: str, source: str) -> dict[str, str]:
    """Misspellings of one module's name -> the right name to write instead:
    the source name for a misspelt `.c` name or the source without its `.c`
    (where the source is a name people know: `mod_*.c` or an MPM's), else
    the identifier."""
    stem = module_id[:-len("_module")] if module_id.endswith("_module") else module_id
    source_stem = source[:-2] if source.endswith(".c") else source
    short = MPM_NAMES.get(module_id)
    like_source = source if short is not None or source.startswith("mod_") else module_id
    shapes = {
        f"mod_{stem}.so": module_id, f"mod_{stem}": module_id, f"mod_{stem}.c": like_source,
        f"mod_{stem}_module": module_id, f"{stem}.so": module_id, f"{stem}.c": like_source,
        f"{source_stem}_module": module_id, stem: module_id,
    }
    if short is not None:  # prefork, prefork_module, mpm_prefork.c
        shapes.update({short: source, f"{short}_module": module_id, f"mpm_{short}.c": source})
    if source_stem != stem:
        shapes[source_stem] = like_source
    return shapes


@lru_cache(maxsize=1)
def _misspellings() -> dict[str, str]:
    """Lower-cased misspelling -> the name meant, for every module of httpd's own;
    a case variant of a right name maps to that name."""
    ever = _names_ever_known()
    found: dict[str, str] = {}
    for module_id, source in _own_modules():
        for shape, meant in _shapes(module_id, source).items():
            if shape.lower() not in ever:
                found.setdefault(shape.lower(), meant)
    for module_id, source in _own_modules():
        found[module_id.lower()] = module_id
        found[source.lower()] = source
    return found


def misspelt_module(name: str, loaded: set[str]) -> tuple[str, str] | None:
    """(the name meant, why the written one matches nothing) or None when it may be real."""
    if name in loaded:
        return None
    renamed = _RENAMED_IN_24.get(name)
    if renamed is not None:
        return renamed
    meant = _misspellings().get(name.lower())
    if meant is None or meant == name:
        return None
    if meant.lower() == name.lower():
        return meant, f"httpd compares module names case-sensitively, and no module is called {name}"
    return meant, f"no module is called {name}"


_HEADER = re.compile(r"(\s*<\s*ifmodule\s+!?\s*)([^\s>]+)", re.IGNORECASE)


def _edit(ctx: LintContext, section: Section, written: str, meant: str) -> Edit | None:
    """Replace the name on the section's first line."""
    if not ctx.wants_edits:
        return None
    summary = f"<IfModule {written}> -> {meant}"
    if section.expansion is not None:
        return Edit(section.file, section.line, 0, 0, "", "", summary,
                    "the section comes from a <Macro>; change the macro by hand")
    text = ctx.config.sources.get(section.file)
    lines = text.split("\n") if text is not None else []
    if not 1 <= section.line <= len(lines):
        return Edit(section.file, section.line, 0, 0, "", "", summary,
                    f"the text of {section.file} was not kept by the reader")
    line = lines[section.line - 1]
    match = _HEADER.match(line)
    if match is None or match.group(2) != written:
        return Edit(section.file, section.line, 0, 0, "", "", summary,
                    "the name is not written plainly on the section's line (a variable or "
                    "quotes); change it by hand")
    return Edit(section.file, section.line, match.start(2), match.end(2), meant, line, summary)


def _message(word: str, reason: str, meant: str, loaded: set[str]) -> str:
    negated = word.startswith("!")
    if negated:
        outcome = "the test is always true and the block applies whatever is loaded"
        right = "with it the block would be skipped"
    else:
        outcome = "the test is always false and the block never applies"
        right = "with it the block would apply"
    tail = f", which this config loads: {right}." if meant in loaded else "."
    return f"<IfModule {word}>: {reason}, so {outcome}. Probably meant {meant}{tail}"


def check(ctx: LintContext, report: Report) -> None:
    if ctx.facts.version_key != "2.4":
        return
    loaded = ctx.config.modules
    verdicts: dict[str, tuple[str, str] | None] = {}
    for section in ctx.raw.sections.get("ifmodule", []):
        if not section.active or len(section.args) != 1:
            continue
        word = section.args[0]
        negated = word.startswith("!")
        name = word[1:] if negated else word
        if name not in verdicts:
            verdicts[name] = misspelt_module(name, loaded)
        verdict = verdicts[name]
        if verdict is None:
            continue
        meant, reason = verdict
        report(section, _message(word, reason, meant, loaded),
               fix=f"<IfModule {'!' if negated else ''}{meant}>", edit=_edit(ctx, section, name, meant))


RULE = Rule(code="E410", slug="ifmodule-unknown-module", severity="warning", category="correctness",
            directives=("IfModule",), doc=DOC, check=check, fixable=True)
