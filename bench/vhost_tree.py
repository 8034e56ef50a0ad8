"""Generate the benchmark tree: a main config plus 2,000 virtual-host files
(about 30,000 lines in all) that httpd accepts as it is.

`noisy` gives every host findings and a suppression comment, and the main
server a <Directory> for each host's document root: the shape that makes
rules, suppressions and the formatters work per host (a tree of inherited
sites, each with its own status page). `inline` writes the hosts into the
main file instead of one file each (one file with thousands of suppression
comments)."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.config.oracle import available_modules

MODULES = ("authz_core_module", "authz_host_module", "alias_module", "mime_module", "dir_module",
           "rewrite_module", "headers_module", "reqtimeout_module", "status_module")

VHOST = """# Site {n}: static files with a rewrite and an alias.
<VirtualHost 127.0.0.1:{port}>
    ServerName site{n}.bench.test
    ServerAlias www.site{n}.bench.test
    DocumentRoot {root}/htdocs
    <Directory {root}/htdocs>
        Options -Indexes +FollowSymLinks
        AllowOverride None
        Require all granted
    </Directory>
    Alias /static {root}/htdocs
    RewriteEngine On
    RewriteRule ^/old/(.*)$ /new/$1 [R=301,L]
    Header set X-Site "site{n}"
    KeepAlive On
</VirtualHost>
"""

# Findings in every host: an open status page (S506) and a listing the main
# server turns on for the host's document root (S504); one suppressed (P109).
NOISY_VHOST = """# Site {n}: its own document root, status page and overrides.
<VirtualHost 127.0.0.1:{port}>
    ServerName site{n}.bench.test
    DocumentRoot {root}/srv/site{n}
    <Directory {root}/srv/site{n}>
        # apache-advisor: disable=P109 -- the site keeps its .htaccess rewrites
        AllowOverride FileInfo
        Require all granted
    </Directory>
    <Location /server-status>
        SetHandler server-status
    </Location>
    RewriteEngine On
    RewriteRule ^/old/(.*)$ /new/$1 [R=301,L]
    Header set X-Site "site{n}"
</VirtualHost>
"""

# Three findings in every host, each message naming the host's own paths (a
# mass-hosting tree: one file per customer): an unrestricted DocumentRoot
# (S509), symbolic links of any owner (S510) and an unbuffered access log (P106).
LOGGED_VHOST = """# Customer {n}: its own document root and access log.
<VirtualHost 127.0.0.1:{port}>
    ServerName site{n}.bench.test
    DocumentRoot {root}/srv/site{n}
    <Directory {root}/srv/site{n}>
        Options FollowSymLinks
        AllowOverride None
        Require all granted
    </Directory>
    CustomLog {root}/logs/site{n}.log combined
    RewriteEngine On
    RewriteRule ^/old/(.*)$ /new/$1 [R=301,L]
</VirtualHost>
"""

# Findings with a mechanical fix in every host (P102, P107): SARIF results
# that carry an edit (their own template in advisor/output/sarif.py).
FIXABLE_VHOST = VHOST.replace("    KeepAlive On\n", "    KeepAlive Off\n    HostnameLookups On\n")

SHAPES = ("plain", "noisy", "logged", "fixable")
"""`plain`: the default tree; `noisy`, `logged`, `fixable`: see above."""

NOISY_SERVER_DIRECTORY = """<Directory {root}/srv/site{n}>
    Options Indexes FollowSymLinks
</Directory>
"""


def generate(target: Path, count: int = 2000, noisy: bool = False, inline: bool = False,
             shape: str = "plain") -> Path:
    if noisy:
        shape = "noisy"
    noisy = shape == "noisy"
    target.mkdir(parents=True, exist_ok=True)
    (target / "sites").mkdir(exist_ok=True)
    (target / "htdocs").mkdir(exist_ok=True)
    (target / "logs").mkdir(exist_ok=True)
    modules = available_modules()
    lines = [f"ServerRoot {target}", f"LoadModule mpm_event_module {modules['mpm_event_module']}"]
    wanted = MODULES + (("autoindex_module",) if noisy else ())
    lines += [f"LoadModule {m} {modules[m]}" for m in wanted if m in modules]
    lines += ["ServerName bench.test", "Listen 127.0.0.1:18080", f"PidFile {target}/logs/httpd.pid",
              f"ErrorLog {target}/logs/error.log", "ServerTokens Prod", "ServerSignature Off",
              "TraceEnable Off", "Timeout 30", "KeepAlive On", "KeepAliveTimeout 5",
              f"DocumentRoot {target}/htdocs"]
    vhost = {"plain": VHOST, "noisy": NOISY_VHOST, "logged": LOGGED_VHOST, "fixable": FIXABLE_VHOST}[shape]
    text = "\n".join(lines) + "\n"
    if shape not in ("plain", "fixable"):
        for n in range(1, count + 1):
            (target / "srv" / f"site{n}").mkdir(parents=True, exist_ok=True)
    if noisy:
        text += "".join(NOISY_SERVER_DIRECTORY.format(n=n, root=target) for n in range(1, count + 1))
    if inline:
        text += "".join(vhost.format(n=n, port=18080, root=target) for n in range(1, count + 1))
    else:
        text += "Include sites/*.conf\n"
        for n in range(1, count + 1):
            (target / "sites" / f"site{n:04d}.conf").write_text(vhost.format(n=n, port=18080, root=target))
    main = target / "httpd.conf"
    main.write_text(text)
    return main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target", type=Path)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--noisy", action="store_true", help="findings and a suppression in every host")
    parser.add_argument("--shape", choices=SHAPES, default="plain", help="which host template")
    parser.add_argument("--inline", action="store_true", help="the hosts in the main file, not one file each")
    args = parser.parse_args()
    main_file = generate(args.target, args.count, args.noisy, args.inline, args.shape)
    total = sum(len(p.read_text().splitlines()) for p in args.target.rglob("*.conf"))
    print(f"{main_file}: {args.count} virtual hosts, {total} lines")


if __name__ == "__main__":
    main()
