"""Write sites/*.conf: forty virtual hosts in four shapes (run from this directory)."""

from pathlib import Path

SHAPES = ("static", "tls", "redirect", "proxy")


def site(number: int) -> str:
    shape = SHAPES[number % len(SHAPES)]
    name = f"site{number:02d}.example.test"
    if shape == "static":
        return f"""<VirtualHost *:80>
    ServerName {name}
    ServerAlias www.{name}
    DocumentRoot /srv/www/{name}
    <Directory /srv/www/{name}>
        Options FollowSymLinks
        AllowOverride None
        Require all granted
    </Directory>
</VirtualHost>
"""
    if shape == "tls":
        return f"""<VirtualHost *:443>
    ServerName {name}
    DocumentRoot /srv/www/{name}
    SSLEngine on
    SSLCertificateFile ssl/example.crt
    SSLCertificateKeyFile ssl/example.key
    Header always set Strict-Transport-Security "max-age=31536000"
    <Directory /srv/www/{name}>
        Options FollowSymLinks
        AllowOverride None
        Require all granted
    </Directory>
</VirtualHost>
"""
    if shape == "redirect":
        return f"""<VirtualHost *:80>
    ServerName {name}
    RewriteEngine On
    RewriteRule ^/(.*)$ https://{name}/$1 [R=301,L]
</VirtualHost>
"""
    return f"""<VirtualHost *:80>
    ServerName {name}
    ProxyPreserveHost On
    ProxyPass        /api/ http://127.0.0.1:{8000 + number}/
    ProxyPassReverse /api/ http://127.0.0.1:{8000 + number}/
    <Location /api/>
        Require ip 10.0.0.0/8 192.168.0.0/16
    </Location>
</VirtualHost>
"""


def main() -> None:
    sites = Path("sites")
    sites.mkdir(exist_ok=True)
    for number in range(1, 41):
        (sites / f"{number:02d}-site{number:02d}.conf").write_text(site(number))


if __name__ == "__main__":
    main()
