"""The staging sandbox's config files: httpd.conf rendered from
assets/httpd.conf.in, site.conf with the tuning directives `staging up
CONFIG` takes from an admin's config, the TLS and worker user's lines, and
the MPM switch's rewrite of the lines that load the MPM and the CGI module."""

from __future__ import annotations

import os
import pwd
import re
from importlib import resources
from pathlib import Path
from string import Template

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.load import workload
from advisor.tuner.staging.sandbox_layout import SandboxLayout

# Server-scope directives that shape performance and carry no host paths or
# addresses: these are what `staging up CONFIG` takes from an admin's config.
TUNING_DIRECTIVES = (
    "StartServers", "MinSpareServers", "MaxSpareServers", "MinSpareThreads",
    "MaxSpareThreads", "ThreadsPerChild", "ThreadLimit", "ServerLimit",
    "MaxRequestWorkers", "MaxClients", "MaxConnectionsPerChild",
    "MaxRequestsPerChild", "AsyncRequestWorkerFactor", "KeepAlive",
    "KeepAliveTimeout", "MaxKeepAliveRequests", "Timeout", "ListenBacklog",
    "EnableSendfile", "EnableMMAP", "HostnameLookups", "ExtendedStatus",
    "MaxMemFree", "ThreadStackSize",
)
MPMS = ("prefork", "worker", "event")

MPM_LINE = re.compile(r'^LoadModule mpm_(\w+)_module "[^"\n]*"$', re.M)
CGI_LINES = re.compile(r'^LoadModule cgid?_module "[^"\n]*"\n(?:ScriptSock "[^"\n]*"\n)?', re.M)
# Server-scope directives that exist under some MPMs only: httpd refuses the
# others' (prefork has no threads; only event parks connections).
MPM_ONLY_DIRECTIVES: dict[str, str] = {
    "minspareservers": "mpm_prefork_module", "maxspareservers": "mpm_prefork_module",
    "threadsperchild": "!mpm_prefork_module", "threadlimit": "!mpm_prefork_module",
    "minsparethreads": "!mpm_prefork_module", "maxsparethreads": "!mpm_prefork_module",
    "threadstacksize": "!mpm_prefork_module", "asyncrequestworkerfactor": "mpm_event_module",
}


def site_tuning(source_config: str | None, mpm: str | None) -> tuple[str, list[str]]:
    """The MPM the sandbox runs (the one asked for, else the admin's config's,
    else event) and the tuning directives taken from that config."""
    site: list[str] = []
    if source_config:
        config_mpm, site = read_tuning_directives(source_config)
        mpm = mpm or config_mpm
    mpm = mpm or "event"
    if mpm not in MPMS:
        raise UsageError(f"unknown MPM {mpm!r}", hint="choose prefork, worker or event")
    return mpm, site


def tls_config_lines(layout: SandboxLayout, tls: bool, tls_key: str | None, modules_dir: str, host: str,
                     port: int) -> tuple[str | None, str]:
    """`up --tls`: the key type and httpd.conf's TLS lines (a comment over plain HTTP)."""
    tls_text = "# plain HTTP (staging up --tls serves HTTPS)"
    if tls or tls_key is not None:
        from advisor.tuner.staging import tls_setup

        tls_key = tls_setup.check_key_type(tls_key)
        tls_setup.check_modules(modules_dir)
        # Made before anything is written: a key openssl cannot make leaves the work dir as it was.
        cert, key = tls_setup.make_key_and_cert(layout.conf_dir / "tls", tls_key, host)
        tls_text = tls_setup.config_lines(modules_dir, layout.work_dir / "run", host, port, cert, key)
    return tls_key, tls_text


def http2_config_lines(h2: bool, tls: bool, modules_dir: str) -> tuple[list[str], str]:
    """`up --h2`: the protocols offered and httpd.conf's mod_http2 lines (a
    comment without --h2). Refused before anything is written: --h2 without
    --tls, and a modules directory without mod_http2."""
    from advisor.tuner.staging import http2_setup

    if not h2:
        return list(http2_setup.HTTP1_ONLY), "# HTTP/1.1 only (staging up --tls --h2 offers HTTP/2)"
    if not tls:
        raise UsageError("--h2 without --tls: browsers speak HTTP/2 only over TLS",
                         hint="add --tls (the sandbox does not offer h2c, HTTP/2 over plain TCP)")
    http2_setup.check_module(modules_dir)
    return list(http2_setup.OFFERED), http2_setup.config_lines(modules_dir)


def write_httpd_conf(layout: SandboxLayout, *, host: str, port: int, mpm: str, modules_dir: str,
                     user_group: str, extended_status: bool, status_allow: list[str] | None, tls_text: str,
                     http2_text: str, fpm_text: str, site: list[str], source_config: str | None) -> None:
    """site.conf, then httpd.conf from the template, which includes site.conf,
    the managed include and the instrument include in that order."""
    allow = " ".join(status_allow or ["127.0.0.1", "::1"])
    cgi = cgi_module_lines(mpm, modules_dir, layout.work_dir / "run")
    # The mixed workload's in-process endpoint; without mod_lua it answers 404.
    lua = (f'LoadModule lua_module "{modules_dir}/mod_lua.so"\n'
           f'<Files "{workload.MIXED_SCRIPT}">\n    SetHandler lua-script\n</Files>'
           if os.path.exists(os.path.join(modules_dir, "mod_lua.so"))
           else "# mod_lua is not installed: the mixed workload is not served")
    template = Template((resources.files("advisor.tuner.staging") / "assets" / "httpd.conf.in").read_text())
    text = template.substitute(
        server_root=layout.work_dir,
        server_name=host,
        run_dir=layout.work_dir / "run",
        log_dir=layout.work_dir / "logs",
        user_group=user_group,
        mpm=mpm,
        modules_dir=modules_dir,
        cgi_module=cgi,
        lua_module=lua,
        listen=f"Listen {host}:{port}",
        mime_types="/etc/mime.types" if os.path.exists("/etc/mime.types") else "/dev/null",
        docroot=layout.work_dir / "docroot",
        cgi_dir=layout.work_dir / "cgi-bin",
        extended_status="On" if extended_status else "Off",
        status_allow=allow,
        tls=tls_text,
        http2=http2_text,
        php_fpm=fpm_text,
        managed=layout.managed_path,
    )
    site_path = layout.conf_dir / "site.conf"
    site_path.write_text("# Tuning directives taken from %s\n%s" % (source_config or "(none: stock)", "".join(f"{d}\n" for d in site)))
    text = text.replace(f'IncludeOptional "{layout.managed_path}"',
                        f'Include "{site_path}"\nIncludeOptional "{layout.managed_path}"\n'
                        f'IncludeOptional "{layout.instrument_path}"')
    layout.config_path.write_text(text)


def cgi_module_lines(mpm: str, modules_dir: str, run_dir: Path) -> str:
    """mod_cgi under prefork; mod_cgid (one CGI daemon, no fork of a threaded child) otherwise."""
    if mpm == "prefork":
        return f'LoadModule cgi_module "{modules_dir}/mod_cgi.so"'
    return f'LoadModule cgid_module "{modules_dir}/mod_cgid.so"\nScriptSock "{run_dir}/cgid.sock"'


def write_mpm_switch(layout: SandboxLayout, mpm: str, modules_dir: str) -> None:
    """httpd.conf's MPM and CGI lines rewritten for `mpm`, and site.conf's
    MPM-only directives guarded (Sandbox.switch_mpm)."""
    text = layout.config_path.read_text()
    if not MPM_LINE.search(text) or not CGI_LINES.search(text):
        raise AdvisorError("the sandbox's config has no MPM or CGI line to switch", file=str(layout.config_path),
                           hint="run `apache-advisor staging down` and `up` again")
    text = MPM_LINE.sub(f'LoadModule mpm_{mpm}_module "{modules_dir}/mod_mpm_{mpm}.so"', text, count=1)
    text = CGI_LINES.sub(cgi_module_lines(mpm, modules_dir, layout.work_dir / "run") + "\n", text, count=1)
    _write_atomically(layout.config_path, text)
    site = layout.conf_dir / "site.conf"
    if site.exists():
        _write_atomically(site, guard_mpm_directives(site.read_text()))


def guard_mpm_directives(text: str) -> str:
    """Each MPM-only line of a flat directive file inside the <IfModule> of the
    MPMs that have it; a file already guarded is left as it is."""
    if "<IfModule" in text:
        return text
    out = []
    for line in text.splitlines():
        guard = MPM_ONLY_DIRECTIVES.get(line.split(None, 1)[0].lower()) if line.strip() else None
        out.append(f"<IfModule {guard}>\n    {line}\n</IfModule>" if guard else line)
    return "".join(f"{line}\n" for line in out)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_tuning_directives(path: str) -> tuple[str | None, list[str]]:
    """The MPM and the server-scope tuning directives of an admin's config."""
    if not os.path.isfile(path):
        raise ConfigError("config file not found", file=path, hint="give the path of an httpd.conf")
    try:
        from advisor.config.load_options import LoadOptions
        from advisor.config.loader import load_config
    except ImportError:  # the config model is not there: read the one file ourselves
        return _read_tuning_plain(path)
    cfg = load_config(path, LoadOptions(apache_version="2.4"))
    lines: list[str] = []
    for name in TUNING_DIRECTIVES:
        directive = cfg.server_value(name)
        if directive is not None:
            lines.append(f"{name} {directive.raw_args}")
    return cfg.mpm, lines


def _read_tuning_plain(path: str) -> tuple[str | None, list[str]]:
    wanted = {name.lower(): name for name in TUNING_DIRECTIVES}
    found: dict[str, str] = {}
    mpm = None
    depth = 0
    for raw in Path(path).read_text(errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("</"):
            depth = max(0, depth - 1)
            continue
        if line.startswith("<"):
            if not line.lower().startswith("<ifmodule"):
                depth += 1
            continue
        word, _, rest = line.partition(" ")
        match = re.match(r"loadmodule\s+mpm_(\w+)_module", line, re.I)
        if match:
            mpm = match.group(1).lower()
        if depth == 0 and word.lower() in wanted:
            found[word.lower()] = f"{wanted[word.lower()]} {rest.strip()}"
    return mpm, list(found.values())


def user_group_lines(work_dir: Path) -> str:
    """As root, httpd drops to an unprivileged user that must read the docroot."""
    if os.getuid() != 0:
        return "# not root: workers run as the invoking user"
    for name in ("www-data", "apache", "daemon", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        _make_traversable(work_dir)
        import grp

        group = grp.getgrgid(entry.pw_gid).gr_name
        return f"User {name}\nGroup {group}"
    return "# no unprivileged user found"


def _make_traversable(work_dir: Path) -> None:
    """Let the worker user walk down to the docroot.

    The work directory is ours to open up; its ancestors are not, so one that
    others cannot enter is an error with a hint rather than a chmod.
    """
    path = work_dir.resolve()
    os.chmod(path, path.stat().st_mode | 0o005)
    for directory in path.parents:
        if not directory.stat().st_mode & 0o001:
            raise UsageError(
                f"the httpd workers cannot enter {directory}",
                hint="use a --workdir under /tmp or another directory others may enter",
            )
