"""Generate the benchmark tree: a main config plus 2,000 virtual-host files
(about 30,000 lines in all) that httpd accepts as it is.

`noisy` gives every host findings and a suppression comment, and the main
server a <Directory> for each host's document root: the shape that makes
rules, suppressions and the formatters work per host (a tree of inherited
sites, each with its own status page). `inline` writes the hosts into the
main file instead of one file each (one file with thousands of suppression
comments). `tls` writes each site as a certbot-style pair: a plain-HTTP
host that redirects to HTTPS and a TLS host (one shared self-signed
certificate, Mozilla-intermediate protocols and ciphers, HSTS), a third of
them proxying to a backend and a third handing PHP to php-fpm: the shape on
which the TLS and proxy rules do their per-host work."""

from __future__ import annotations

import argparse
import subprocess
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

# Mozilla's intermediate cipher list (ssl-config.mozilla.org, Apache).
INTERMEDIATE_CIPHERS = ":".join((
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"))

# A host's names, document root and its <Directory>, as the plain tree's hosts have them.
_NAMES_AND_ROOT = VHOST[VHOST.index("    ServerName"):VHOST.index("    Alias")]

# A site as certbot leaves it: port 80 redirects every request to HTTPS (its
# RewriteCond lines), the TLS host carries the certificate, the protocol and
# cipher lines of the intermediate profile and two years of HSTS.
TLS_VHOST = """# Site {n}: HTTPS only, plain HTTP redirected.
<VirtualHost 127.0.0.1:18080>
    ServerName site{n}.bench.test
    ServerAlias www.site{n}.bench.test
    RewriteEngine On
    RewriteCond %{{SERVER_NAME}} =site{n}.bench.test [OR]
    RewriteCond %{{SERVER_NAME}} =www.site{n}.bench.test
    RewriteRule ^ https://%{{SERVER_NAME}}%{{REQUEST_URI}} [END,NE,R=permanent]
</VirtualHost>
<VirtualHost 127.0.0.1:18443>
""" + _NAMES_AND_ROOT + """    SSLEngine on
    SSLCertificateFile {root}/tls/bench.crt
    SSLCertificateKeyFile {root}/tls/bench.key
    SSLProtocol -all +TLSv1.2 +TLSv1.3
    SSLCipherSuite {ciphers}
    SSLHonorCipherOrder off
    Header always set Strict-Transport-Security "max-age=63072000"
{handoff}</VirtualHost>
"""

# What every third host hands on: an application behind a reverse proxy (it
# is told the scheme and its redirects are mapped back), PHP to php-fpm as
# Debian's php-fpm conf does it, or (the rest) nothing.
TLS_HANDOFFS = (
    """    ProxyPass /app/ http://127.0.0.1:{backend}/
    ProxyPassReverse /app/ http://127.0.0.1:{backend}/
    RequestHeader set X-Forwarded-Proto "https"
""",
    """    <FilesMatch ".+\\.php$">
        SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"
    </FilesMatch>
""",
    "",
)

TLS_MODULES = ("ssl_module", "socache_shmcb_module", "proxy_module", "proxy_http_module", "proxy_fcgi_module")

TLS_SERVER = """Listen 127.0.0.1:18443
SSLSessionCache shmcb:{root}/logs/ssl_scache(512000)
SSLSessionCacheTimeout 300
SSLSessionTickets off
"""

SHAPES = ("plain", "noisy", "logged", "fixable", "tls")
"""`plain`: the default tree; `noisy`, `logged`, `fixable`, `tls`: see above."""



def _self_signed(directory: Path) -> None:
    """One certificate and key for every TLS host (httpd checks that the
    files exist when it reads the config, and loads them when it starts)."""
    directory.mkdir(exist_ok=True)
    if (directory / "bench.crt").exists() and (directory / "bench.key").exists():
        return
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "3650", "-subj", "/CN=bench.test",
                    "-addext", "subjectAltName=DNS:bench.test,DNS:*.bench.test",
                    "-keyout", str(directory / "bench.key"), "-out", str(directory / "bench.crt")],
                   check=True, capture_output=True)


def _host(shape: str, n: int, root: Path) -> str:
    if shape == "tls":
        handoff = TLS_HANDOFFS[n % 3].format(backend=8000 + n % 100)
        return TLS_VHOST.format(n=n, root=root, ciphers=INTERMEDIATE_CIPHERS, handoff=handoff)
    vhost = {"plain": VHOST, "noisy": NOISY_VHOST, "logged": LOGGED_VHOST, "fixable": FIXABLE_VHOST}[shape]
    return vhost.format(n=n, port=18080, root=root)


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
    wanted = MODULES + (("autoindex_module",) if noisy else ()) + (TLS_MODULES if shape == "tls" else ())
    lines += [f"LoadModule {m} {modules[m]}" for m in wanted if m in modules]
    lines += ["ServerName bench.test", "Listen 127.0.0.1:18080", f"PidFile {target}/logs/httpd.pid",
              f"ErrorLog {target}/logs/error.log", "ServerTokens Prod", "ServerSignature Off",
              "TraceEnable Off", "Timeout 30", "KeepAlive On", "KeepAliveTimeout 5",
              f"DocumentRoot {target}/htdocs"]
    text = "\n".join(lines) + "\n"
    if shape == "tls":
        _self_signed(target / "tls")
        text += TLS_SERVER.format(root=target)
    if shape in ("noisy", "logged"):
        for n in range(1, count + 1):
            (target / "srv" / f"site{n}").mkdir(parents=True, exist_ok=True)
    if noisy:
        text += "".join(NOISY_SERVER_DIRECTORY.format(n=n, root=target) for n in range(1, count + 1))
    if inline:
        text += "".join(_host(shape, n, target) for n in range(1, count + 1))
    else:
        text += "Include sites/*.conf\n"
        for n in range(1, count + 1):
            (target / "sites" / f"site{n:04d}.conf").write_text(_host(shape, n, target))
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
