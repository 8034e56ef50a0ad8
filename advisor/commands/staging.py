"""`apache-advisor staging up|down|status`: the private httpd that bench and tune measure.

Only Typer is imported at module level: the tuner (requests, psutil) loads
when one of these commands runs, not at CLI start-up.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer

from advisor.commands.options import fail
from advisor.errors import AdvisorError, UsageError

staging_app = typer.Typer(help="A private staging httpd on 127.0.0.1 for bench and tune.", no_args_is_help=True)

WORKDIR_HELP = "Sandbox work directory (default $APACHE_ADVISOR_STAGING_DIR or /tmp/apache-advisor-UID/staging)."


@staging_app.command("up")
def staging_up(
    config: Optional[str] = typer.Argument(None, help="An httpd.conf whose MPM and tuning directives the sandbox takes; default: stock."),
    workdir: Optional[str] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
    mpm: Optional[str] = typer.Option(None, "--mpm", help="prefork, worker or event (default: CONFIG's, else event)."),
    port: int = typer.Option(0, "--port", help="Port on 127.0.0.1 (default: a free one)."),
    server_cpus: Optional[str] = typer.Option(None, "--server-cpus", help="Cores for httpd, e.g. 0 (default: 0 on a multi-core host)."),
    httpd_bin: Optional[str] = typer.Option(None, "--httpd-bin", help="The httpd binary (default: apache2 or httpd)."),
    netns: Optional[str] = typer.Option(None, "--netns", help="Run httpd inside this network namespace (one you created)."),
    listen_host: str = typer.Option("127.0.0.1", "--listen-host", help="Address to listen on (127.0.0.1, or one inside --netns)."),
    status_allow: Optional[list[str]] = typer.Option(None, "--status-allow", help="Extra address allowed to read mod_status."),
    extended_status: bool = typer.Option(False, "--extended-status", help="Turn ExtendedStatus on."),
    isolated: bool = typer.Option(False, "--isolated", help="Run httpd in a network namespace the tool makes, reached over one veth pair (root): bench and tune may then put WAN conditions on that link (--wan-delay, --wan-rate...)."),
    tls: bool = typer.Option(False, "--tls", help="Serve HTTPS with mod_ssl as Debian's ssl.conf sets it up: a key and self-signed certificate made now, the shmcb session cache, TLS 1.2 and 1.3."),
    tls_key: Optional[str] = typer.Option(None, "--tls-key", help="The key type with --tls: ecdsa-p256 (default) or rsa2048."),
    h2: bool = typer.Option(False, "--h2", help="With --tls: load mod_http2 and offer `Protocols h2 http/1.1`, as Debian's http2.conf does (without h2c). Under prefork httpd starts but negotiates HTTP/1.1 only (AH10034), and says so."),
    cpu_quota: Optional[float] = typer.Option(None, "--cpu-quota", help="Let httpd use at most this % of one core (a cgroup; needs root), so that it saturates before httperf does."),
    php_fpm: bool = typer.Option(False, "--php-fpm", help="Run a php-fpm pool beside httpd (Debian's php-fpm package) and hand *.php to it through mod_proxy_fcgi; the workload script is /work.php."),
    fpm_children: Optional[int] = typer.Option(None, "--fpm-children", help="pm.max_children of the --php-fpm pool (pm = static; default 5, Debian's)."),
    output_format: str = typer.Option("text", "--format", help="text or json."),
) -> None:
    """Start the staging sandbox."""
    from advisor.tuner.staging.sandbox import Sandbox, parse_cpus

    try:
        if listen_host != "127.0.0.1" and not netns:
            raise UsageError("--listen-host other than 127.0.0.1 needs --netns",
                             hint="the sandbox only listens on loopback or inside a namespace you made")
        if tls_key is not None and not tls:
            raise UsageError("--tls-key without --tls", hint="add --tls to serve HTTPS with that key")
        if fpm_children is not None and not php_fpm:
            raise UsageError("--fpm-children without --php-fpm", hint="add --php-fpm to run the pool")
        cpus = parse_cpus(server_cpus)
        if cpus is None and (os.cpu_count() or 1) >= 2:
            cpus = [0]
        allow = ["127.0.0.1", "::1"] + list(status_allow or [])
        state = Sandbox(workdir, binary=httpd_bin).up(
            source_config=config, mpm=mpm, port=port, host=listen_host, server_cpus=cpus, netns=netns,
            status_allow=allow, extended_status=extended_status, cpu_quota_pct=cpu_quota, isolated=isolated,
            tls=tls, tls_key=tls_key, h2=h2,
            php_fpm_children=(fpm_children if fpm_children is not None else 5) if php_fpm else None)
    except AdvisorError as error:
        fail(error)
        return
    _print_up(state, output_format)


def _print_up(state, output_format: str) -> None:
    """What `staging up` started; on stderr, the one line that says h2 is offered but will not be negotiated."""
    if state.h2_inactive_reason:
        sys.stderr.write(f"apache-advisor: warning: --h2: HTTP/2 will not be negotiated: {state.h2_inactive_reason}\n")
    if output_format == "json":
        print(json.dumps({"url": state.base_url, "pid": state.pid, "mpm": state.mpm, "work_dir": state.work_dir,
                          "server_cpus": state.server_cpus, "cpu_quota_pct": state.cpu_quota_pct,
                          "managed": state.managed, "isolated": state.isolated, "tls_key": state.tls_key,
                          "php_fpm": state.php_fpm, "protocols": state.protocols,
                          "h2_inactive_reason": state.h2_inactive_reason}))
    else:
        quota = f", at most {state.cpu_quota_pct:g} % of a core" if state.cpu_quota_pct else ""
        tls_text = f", TLS 1.2/1.3 with a self-signed {state.tls_key} certificate" if state.tls else ""
        if state.h2_offered:
            tls_text += ", offering " + " ".join(state.protocols)
        print(f"staging httpd ({state.mpm}) up at {state.base_url}, pid {state.pid}, cores {state.server_cpus or 'all'}"
              f"{quota}{tls_text}")
        print(f"work dir {state.work_dir}; managed include {state.managed}")
        if state.php_fpm:
            fpm = state.php_fpm
            print(f"php-fpm pool {fpm['pool']}: pm = static, {fpm['children']} children on {fpm['address']}; "
                  f"status on {fpm['status_socket']}; workload {state.base_url}/work.php")
        if state.isolated:
            link = state.isolated
            print(f"isolated: namespace {link['netns']}, reached from {link['client_addr']} over "
                  f"{link['client_if']} (the clients' end, where --wan-* applies)")


@staging_app.command("down")
def staging_down(workdir: Optional[str] = typer.Option(None, "--workdir", help=WORKDIR_HELP)) -> None:
    """Stop the staging sandbox (restoring its managed include first); return when all of it is gone."""
    from advisor.tuner.staging.sandbox import Sandbox

    try:
        sandbox = Sandbox(workdir)
        _restore_file_only(sandbox)
        stopped = sandbox.down()
    except AdvisorError as error:
        fail(error)
        return
    if not stopped:
        print(f"no staging httpd was running in {sandbox.work_dir}")
        return
    print("staging httpd stopped; no process of it is left")
    if stopped.stragglers:
        print(f"killed {len(stopped.stragglers)} process(es) that outlived httpd's own stop: "
              + "; ".join(stopped.stragglers))


def _restore_file_only(sandbox) -> None:
    """A journal left by a killed bench: put the original file back before stopping."""
    from pathlib import Path

    from advisor.tuner.staging.managed_config import Journal

    journal_path = Path(sandbox.managed_path.name + ".journal")
    journal_path = sandbox.managed_path.with_name(journal_path.name)
    if journal_path.exists():
        journal = Journal(**json.loads(journal_path.read_text()))
        for path, text in journal.files.items():  # an MPM switch's edits (tune --allow-mpm-switch)
            if path in {str(p) for p in sandbox.mpm_switch_files()} and text is not None:
                Path(path).write_text(text)
        if journal.original is None:
            sandbox.managed_path.unlink(missing_ok=True)
        else:
            sandbox.managed_path.write_text(journal.original)
        journal_path.unlink()


@staging_app.command("status")
def staging_status(
    workdir: Optional[str] = typer.Option(None, "--workdir", help=WORKDIR_HELP),
    output_format: str = typer.Option("text", "--format", help="text or json."),
) -> None:
    """Report whether the sandbox runs, where, and its workers."""
    from advisor.tuner.staging.sandbox import Sandbox

    try:
        sandbox = Sandbox(workdir)
        info = sandbox.status()
        info["journal_pending"] = sandbox.managed_path.with_name(sandbox.managed_path.name + ".journal").exists()
    except AdvisorError as error:
        fail(error)
        return
    if output_format == "json":
        print(json.dumps(info))
        return
    if not info["running"]:
        print(f"staging httpd is not running (work dir {info['work_dir']})")
        return
    tls_text = f", HTTPS (TLS 1.2/1.3, {info['tls_key']} key)" if info.get("tls_key") else ""
    print(f"staging httpd ({info.get('mpm')}) running at {info.get('url')}, pid {info['pid']}, "
          f"cores {info.get('server_cpus') or 'all'}{tls_text}")
    print(_protocols_text(info))
    if "busy_workers" in info:
        print(f"workers busy {info['busy_workers']} idle {info['idle_workers']}, config generation {info['generation']}")
    if info["journal_pending"]:
        print("a journal from an interrupted bench is pending: the next bench restores the original first")


def _protocols_text(info: dict) -> str:
    """status's line on the protocols offered and whether HTTP/2 is what a browser gets."""
    offered = " ".join(info.get("protocols") or ["http/1.1"])
    h2 = info.get("h2") or {}
    if not h2.get("offered"):
        return f"protocols offered: {offered}"
    if h2.get("active"):
        return f"protocols offered: {offered}; HTTP/2 active (a client offering h2 gets h2)"
    return f"protocols offered: {offered}; HTTP/2 inactive: {h2.get('inactive_reason')}"


def register(app: typer.Typer) -> None:
    app.add_typer(staging_app, name="staging")
