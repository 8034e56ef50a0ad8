"""Conditional sections with quoted or padded arguments are read as httpd 2.4 reads them.

httpd is the oracle: each case defines a name inside a conditional section,
and `apache2 -t -D DUMP_RUN_CFG` lists the names whose section held.
"""

from __future__ import annotations

import subprocess

import pytest

from advisor.config.loader import load_config

MODULES = "/usr/lib/apache2/modules"
CASES = {
    "MOD_DOUBLE_QUOTED": '<IfModule "mod_authz_core.c">',
    "MOD_SINGLE_QUOTED_ID": "<IfModule 'authz_core_module'>",
    "MOD_BANG_INSIDE_QUOTES": '<IfModule "!mod_ssl.c">',
    "MOD_BANG_OUTSIDE_QUOTES": '<IfModule !"mod_ssl.c">',
    "MOD_QUOTED_ABSENT": '<IfModule "mod_ssl.c">',
    "MOD_NEGATED_QUOTED_LOADED": "<IfModule !'mod_authz_core.c'>",
    "MOD_TRAILING_BLANK": "<IfModule mod_authz_core.c >",
    "DEFINE_QUOTED": '<IfDefine "QUOTED_BASE">',
    "DEFINE_NEGATED_QUOTED": '<IfDefine !"NOT_DEFINED_ANYWHERE">',
    "DIRECTIVE_QUOTED": '<IfDirective "ServerName">',
    "SECTION_QUOTED": '<IfSection "VirtualHost">',
    "FILE_QUOTED": '<IfFile "/etc/hostname">',
}


def _config(tmp_path) -> str:
    closing = {"IfModule": "</IfModule>", "IfDefine": "</IfDefine>", "IfDirective": "</IfDirective>",
               "IfSection": "</IfSection>", "IfFile": "</IfFile>"}
    lines = [f"LoadModule mpm_event_module {MODULES}/mod_mpm_event.so",
             f"LoadModule authz_core_module {MODULES}/mod_authz_core.so",
             "ServerName quoted.test", f"ErrorLog {tmp_path}/error.log", "Define QUOTED_BASE"]
    for name, opening in CASES.items():
        lines += [opening, f"Define {name}", closing[opening[1:].split()[0]]]
    path = tmp_path / "httpd.conf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.httpd
def test_quoted_conditions_hold_exactly_where_httpd_says(httpd, tmp_path):
    config = _config(tmp_path)
    dumped = subprocess.run([httpd, "-t", "-f", config, "-D", "DUMP_RUN_CFG"], capture_output=True, text=True,
                            timeout=30, stdin=subprocess.DEVNULL)
    held_by_httpd = {line.split(":", 1)[1].strip() for line in dumped.stdout.splitlines()
                     if line.startswith("Define:")} & set(CASES)
    # The oracle itself tells quoted names apart: some hold, some do not.
    assert "MOD_DOUBLE_QUOTED" in held_by_httpd and "MOD_BANG_INSIDE_QUOTES" not in held_by_httpd
    held_by_reader = set(load_config(config).defines) & set(CASES)
    assert held_by_reader == held_by_httpd
