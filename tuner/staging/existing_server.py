"""A staging server the admin runs, named by its URL: ExistingServerTarget
(restart and the MPM switch, shared with the remote target,
advisor.tuner.staging.remote_target) and LocalServerTarget, a server on
this host driven by its own config and reload command."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from advisor.errors import AdvisorError, ConfigError, UsageError
from advisor.tuner.measure.status import wait_healthy
from advisor.tuner.staging.httpd_binary import config_test_error, find_httpd
from advisor.tuner.staging.target import StagingTarget, read_text_or_none, write_text_atomically


class ExistingServerTarget(StagingTarget):
    """A staging httpd the admin runs (here or on another host), named by its URL."""

    def _set_url(self, url: str, status_url: str | None) -> None:
        self._base, self._path = split_url(url)
        self._status = status_url or f"{self._base}/server-status?auto"

    @property
    def base_url(self) -> str:
        return self._base

    @property
    def status_url(self) -> str | None:
        return self._status

    def health_url(self) -> str:
        return self._base + self._path

    def use_https(self) -> None:
        """--tls over an http:// URL: the same host and port, spoken to in TLS."""
        status = self._status
        if status and status.lower().startswith("http:"):
            status = "https:" + status[5:]
        self._set_url("https:" + (self._base + self._path)[5:], status)

    # -- restart and the MPM switch ----------------------------------------------
    # The switch edits the one line that loads the MPM, where the admin wrote
    # it (on Debian, mods-enabled/mpm_prefork.load), in place: a symlink stays
    # a symlink, and the restore writes the file's original text back.

    restart_cmd: str | None = None
    _mpm_line: tuple[str, int] | None = None
    """(file, line) of the LoadModule that loads the MPM, once check_mpm_switch found it."""

    def can_restart(self) -> bool:
        return bool(self.restart_cmd)

    @property
    def can_switch_mpm(self) -> bool:
        return bool(self.restart_cmd)

    def restart(self) -> None:
        if not self.restart_cmd:
            super().restart()
        result = self._run_command(self.restart_cmd)
        if result.returncode != 0:
            said = " ".join((result.stderr or result.stdout).split()[-12:])
            raise AdvisorError(f"restart command refused: {said or f'exit {result.returncode}'}",
                               file=self._where(self._config_path()), hint=f"check --restart-cmd ({self.restart_cmd})")
        wait_healthy(self.health_url(), timeout=20.0)
        self._pin_again()

    pin_cpus: list[int] | None = None
    """Cores --server-cpus pinned the server to: a restarted server is pinned again."""

    def _pin_again(self) -> None:
        pid = self.server_pid() if self.pin_cpus and self.on_this_machine else None
        if pid is not None and self.pin_cpus:
            pin_tree(pid, self.pin_cpus)

    def check_mpm_switch(self, cfg) -> None:
        import posixpath

        from advisor.tuner.search.space import MPMS
        from advisor.tuner.search.space_derive import loaded_mpm_line

        if not self.restart_cmd:
            raise mpm_switch_needs_restart()
        node = loaded_mpm_line(cfg)
        if node is None or len(node.args) < 2:
            raise UsageError(f"no LoadModule line of the config loads the {cfg.mpm} MPM", file=cfg.main_file,
                             hint="load the MPM with LoadModule (an MPM built into httpd cannot be switched)")
        module = node.args[1] if posixpath.isabs(node.args[1]) else posixpath.join(cfg.server_root, node.args[1])
        directory = posixpath.dirname(module)
        for mpm in MPMS:
            name = f"mod_mpm_{mpm}.so"
            if not self._file_exists(posixpath.join(directory, name)):
                raise UsageError(f"{name} is not in {directory}: the {mpm} MPM cannot be loaded",
                                 file=self._where(node.file), line=node.line,
                                 hint="install it (Debian's apache2-bin ships all three MPMs), or leave out "
                                      "--allow-mpm-switch")
        self._mpm_line = (node.file, node.line)

    def configured_mpm(self) -> str | None:
        if self._mpm_line is None:
            return None
        import re

        file, number = self._mpm_line
        lines = (self.read_config_file(file) or "").splitlines()
        found = re.search(r"\bmpm_(\w+)_module\b", lines[number - 1]) if 0 < number <= len(lines) else None
        return found.group(1).lower() if found else None

    def mpm_files(self) -> dict[str, str | None]:
        if self._mpm_line is None:
            return {}
        return {self._mpm_line[0]: self.read_config_file(self._mpm_line[0])}

    def switch_mpm(self, mpm: str) -> None:
        import re

        if self._mpm_line is None:
            raise AdvisorError("the MPM switch was not checked (check_mpm_switch) before the first switch")
        file, number = self._mpm_line
        text = self.read_config_file(file) or ""
        lines = text.splitlines(keepends=True)
        if not 0 < number <= len(lines) or not re.search(r"\bmpm_\w+_module\b", lines[number - 1]):
            raise AdvisorError(f"line {number} no longer loads an MPM", file=self._where(file),
                               hint="the file changed during the session; restore it and run tune again")
        line = re.sub(r"\bmpm_\w+_module\b", f"mpm_{mpm}_module", lines[number - 1])
        lines[number - 1] = re.sub(r"\bmod_mpm_\w+?\.so\b", f"mod_mpm_{mpm}.so", line)
        self.write_config_file(file, "".join(lines))

    def _config_path(self) -> str:
        return str(getattr(self, "config", ""))

    def _where(self, path: str) -> str:
        return path

    def _file_exists(self, path: str) -> bool:
        return os.path.isfile(path)

    def _run_command(self, command: str) -> subprocess.CompletedProcess:
        return _run(shlex.split(command))


class LocalServerTarget(ExistingServerTarget):
    """An existing staging httpd on this host, driven by its own config and reload command."""

    kind = "local"

    def __init__(self, config: str, url: str, reload_cmd: str = "apachectl graceful",
                 managed: str | None = None, test_cmd: str | None = None, status_url: str | None = None,
                 restart_cmd: str | None = None):
        if not os.path.isfile(config):
            raise ConfigError("config file not found", file=config, hint="pass the config the staging server reads")
        self.config = os.path.abspath(config)
        self.url = url.rstrip("/")
        self.reload_cmd = reload_cmd
        self.restart_cmd = restart_cmd
        self.test_cmd = test_cmd
        self._managed = Path(managed) if managed else Path(self.config).parent / "apache-advisor-managed.conf"
        self._set_url(url, status_url)
        text = Path(self.config).read_text(errors="replace")
        if str(self._managed) not in text:
            raise ConfigError(
                f"the config does not include the managed file {self._managed}",
                file=self.config,
                hint=f"add `IncludeOptional {self._managed}` as its last line; the tool writes only that file",
            )

    @property
    def managed_path(self) -> Path:
        return self._managed

    @property
    def config_file(self) -> Path | None:
        return Path(self.config)

    def read_managed(self) -> str | None:
        return read_text_or_none(self._managed)

    def write_managed(self, text: str | None) -> None:
        write_text_atomically(self._managed, text)

    def validate(self) -> None:
        command = shlex.split(self.test_cmd) if self.test_cmd else [find_httpd(), "-t", "-f", self.config]
        result = _run(command)
        if result.returncode != 0:
            raise config_test_error(result.stderr + result.stdout, self.config)

    def reload(self) -> None:
        result = _run(shlex.split(self.reload_cmd))
        if result.returncode != 0:
            raise AdvisorError(f"reload command refused: {' '.join(result.stdout.split()[-12:]) or result.stderr.strip()[-200:]}",
                               file=self.config, hint=f"check --reload-cmd ({self.reload_cmd})")

    def server_pid(self) -> int | None:
        import psutil

        fallback = None
        for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline"]):
            name = proc.info["name"] or ""
            if name not in ("apache2", "httpd"):
                continue
            try:
                parent_name = psutil.Process(proc.info["ppid"]).name()
            except psutil.Error:
                parent_name = ""
            if parent_name in ("apache2", "httpd"):
                continue
            if self.config in (proc.info["cmdline"] or []):
                return proc.info["pid"]
            fallback = fallback or proc.info["pid"]
        return fallback

    def describe(self) -> dict[str, object]:
        info = super().describe()
        info.update(config=self.config, reload_cmd=self.reload_cmd)
        if self.restart_cmd:
            info["restart_cmd"] = self.restart_cmd
        return info

    def write_config_file(self, path: str, text: str | None) -> None:
        if text is None:
            Path(path).unlink(missing_ok=True)
            return
        with open(path, "w") as handle:  # in place, through a symlink
            handle.write(text)


def pin_tree(pid: int, cpus: list[int]) -> None:
    """Pin a server on this machine: the parent (future children) and every current child."""
    import psutil

    try:
        parent = psutil.Process(pid)
        for process in [parent, *parent.children(recursive=True)]:
            try:
                process.cpu_affinity(cpus)
            except psutil.Error:
                continue
    except psutil.Error as exc:
        raise AdvisorError(f"cannot pin the server to cores {cpus}: {exc}") from None


def mpm_switch_needs_restart() -> UsageError:
    return UsageError("--allow-mpm-switch on an existing server needs --restart-cmd: a graceful reload "
                      "cannot change the MPM",
                      hint="give the command that stops and starts the server (--restart-cmd "
                           "'systemctl restart apache2'), or leave out --allow-mpm-switch")


def split_url(url: str) -> tuple[str, str]:
    """`http://host:port/path` -> ("http://host:port", "/path"); UsageError when it is no such URL."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad --url {url!r}", hint="write it like http://127.0.0.1:8080/")
    return f"{parts.scheme}://{parts.netloc}", parts.path or "/"


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise UsageError(f"command not found: {command[0]}", hint="check --reload-cmd / --test-cmd") from None
    except subprocess.TimeoutExpired:
        raise AdvisorError(f"command timed out: {' '.join(command)}") from None
