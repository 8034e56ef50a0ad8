"""Generate the benchmark tree: a main config plus 2,000 virtual-host files
(about 30,000 lines in all) that httpd accepts as it is."""

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


def generate(target: Path, count: int = 2000) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    (target / "sites").mkdir(exist_ok=True)
    (target / "htdocs").mkdir(exist_ok=True)
    (target / "logs").mkdir(exist_ok=True)
    modules = available_modules()
    lines = [f"ServerRoot {target}", f"LoadModule mpm_event_module {modules['mpm_event_module']}"]
    lines += [f"LoadModule {m} {modules[m]}" for m in MODULES if m in modules]
    lines += ["ServerName bench.test", "Listen 127.0.0.1:18080", f"PidFile {target}/logs/httpd.pid",
              f"ErrorLog {target}/logs/error.log", "ServerTokens Prod", "ServerSignature Off",
              "TraceEnable Off", "Timeout 30", "KeepAlive On", "KeepAliveTimeout 5",
              f"DocumentRoot {target}/htdocs", "Include sites/*.conf"]
    main = target / "httpd.conf"
    main.write_text("\n".join(lines) + "\n")
    for n in range(1, count + 1):
        (target / "sites" / f"site{n:04d}.conf").write_text(VHOST.format(n=n, port=18080, root=target))
    return main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target", type=Path)
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    main_file = generate(args.target, args.count)
    total = sum(len(p.read_text().splitlines()) for p in args.target.rglob("*.conf"))
    print(f"{main_file}: {args.count} virtual hosts, {total} lines")


if __name__ == "__main__":
    main()
