"""One multiplexed OpenSSH connection to a staging host.

We drive the system's `ssh` rather than a library: it reads the admin's
~/.ssh/config, agent and known_hosts as they expect. Every command shares
one master connection (ControlMaster, kept for ControlPersist seconds after
the last use), so a command costs a round trip, not a handshake. BatchMode
is always on: a password or host-key prompt would hang a trial, so ssh
fails instead and the failure becomes one AdvisorError line that says what
to do.

With `become` (a user name), every command, file read and file write runs
on the host under `sudo -n -u USER`: the wrapping is done here, in argv(),
so no caller can forget it. -n because sudo must never ask for a password
(there is no terminal to type it in); when it would, or refuses, the
command's failure becomes one BecomeError line that says what to set.

The control socket's path is derived from the destination and the options,
so a run killed with -9 leaves a master that the next run with the same
options reuses (and that exits by itself after ControlPersist).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError, UsageError

SSH_FAILED = 255  # ssh's own exit status for a connection or authentication failure
PERSIST_S = 60


@dataclass(frozen=True)
class HostSpec:
    """`[user@]host[:port]`; an IPv6 address with a port goes in brackets."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> "HostSpec":
        raw = text.strip()
        user = None
        if "@" in raw:
            user, raw = raw.rsplit("@", 1)
            if not user:
                raise UsageError(f"bad --host {text!r}: empty user", hint="write it like [user@]host[:port]")
        port_text = None
        if raw.startswith("["):
            host, sep, rest = raw[1:].partition("]")
            if not sep or (rest and not rest.startswith(":")):
                raise UsageError(f"bad --host {text!r}", hint="write an IPv6 address like [2001:db8::1]:22")
            port_text = rest[1:] if rest else None
        elif raw.count(":") == 1:
            host, port_text = raw.split(":")
        else:
            host = raw  # a name, an IPv4 address, or a bare IPv6 address (no port)
        if not host or host.startswith("-") or any(c.isspace() for c in host):
            raise UsageError(f"bad --host {text!r}", hint="write it like [user@]host[:port]")
        if user is not None and (user.startswith("-") or any(c.isspace() for c in user)):
            raise UsageError(f"bad user in --host {text!r}", hint="write it like [user@]host[:port]")
        port = None
        if port_text is not None:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise UsageError(f"bad port in --host {text!r}", hint="a port is a number from 1 to 65535")
            port = int(port_text)
        return cls(host=host, user=user, port=port)

    @property
    def destination(self) -> str:
        """What ssh takes as its destination argument (the port goes in -p)."""
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and self.port else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")


class SshError(AdvisorError):
    """ssh itself failed: host unreachable, authentication refused, connection lost."""


class BecomeError(AdvisorError):
    """sudo on the host would not run the command: it wants a password, or refuses."""


def check_become_user(user: str, where: str = "--become-user") -> str:
    """A user name sudo's -u takes as one word; UsageError otherwise."""
    if not user or user.startswith("-") or any(c.isspace() or c in "'\"\\;&|`$<>()" for c in user):
        raise UsageError(f"bad {where} {user!r}", hint="give a user name of the host, e.g. root or www-data")
    return user


def become_wrapped(command: str | list[str], user: str) -> str:
    """The remote command line that runs `command` under `sudo -n -u user`.
    A shell string goes through `sh -c` so its redirections and `;` run as
    that user too, not as the login user around sudo."""
    inner = ["sh", "-c", command] if isinstance(command, str) else list(command)
    return shlex.join(["sudo", "-n", "-u", user, "--", *inner])


@dataclass
class SshConnection:
    """Commands and files on one host over one multiplexed ssh connection."""

    spec: HostSpec
    options: list[str] = field(default_factory=list)  # `-o` values, e.g. "UserKnownHostsFile=/x"
    identity: str | None = None
    connect_timeout_s: float = 10.0
    ssh_bin: str = "ssh"
    become: str | None = None
    """The user commands run as on the host through `sudo -n` (None: the login user)."""
    multiplex: bool = True
    """False: no master of our own (ControlMaster=no), for a caller that sends
    one command: a fleet's reading, where the master's fork, the mux client and
    `-O exit` cost the controller about 25 ms a host and save nothing."""
    _control_dir: Path | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for option in self.options:
            if "=" not in option and " " not in option.strip():
                raise UsageError(f"bad --ssh-option {option!r}", hint="write it like ServerAliveInterval=5, as for ssh -o")
        if self.identity is not None and not os.path.isfile(self.identity):
            raise UsageError(f"identity file not found: {self.identity}", hint="pass the private key ssh should use")
        if self.become is not None:
            check_become_user(self.become)

    # -- the command line --------------------------------------------------------
    @property
    def control_path(self) -> Path:
        """The master's socket: one per destination and option set, under a private directory."""
        if self._control_dir is None:
            base = Path(tempfile.gettempdir()) / f"apache-advisor-{os.getuid()}" / "ssh"
            base.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(base, 0o700)
            self._control_dir = base
        key = "\0".join([self.spec.destination, str(self.spec.port or ""), self.identity or "", *self.options])
        # Short on purpose: a unix socket's path is limited to about 104 bytes.
        return self._control_dir / hashlib.sha1(key.encode()).hexdigest()[:16]

    def base_argv(self) -> list[str]:
        # The first value ssh reads for an option wins: BatchMode comes before the
        # user's options so it cannot be turned off; our defaults come after them.
        argv = [self.ssh_bin, "-o", "BatchMode=yes"]
        for option in self.options:
            argv += ["-o", option]
        if self.multiplex:
            argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_path}",
                     "-o", f"ControlPersist={PERSIST_S}"]
        else:
            argv += ["-o", "ControlMaster=no"]
        argv += ["-o", f"ConnectTimeout={int(self.connect_timeout_s)}",
                 "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.identity:
            argv += ["-i", self.identity, "-o", "IdentitiesOnly=yes"]
        if self.spec.port:
            argv += ["-p", str(self.spec.port)]
        return argv

    def argv(self, command: str | list[str]) -> list[str]:
        """The local command line that runs `command` (a shell string, or argv) remotely."""
        if self.become is not None:
            remote = become_wrapped(command, self.become)
        else:
            remote = command if isinstance(command, str) else shlex.join(command)
        return [*self.base_argv(), "--", self.spec.destination, remote]

    # -- connection --------------------------------------------------------------
    def connect(self, require_python: bool = True, probe: bool = True) -> None:
        """Open (or reuse) the master connection; check python3 is there when asked.
        With probe=False no command is sent: the master opens with the first run()
        (a round trip saved where the first command says enough when it fails)."""
        if shutil.which(self.ssh_bin) is None:
            raise UsageError(f"ssh client not found: {self.ssh_bin}", hint="install openssh-client")
        if self.multiplex and self.control_path.exists() and not self.master_alive():
            self.control_path.unlink(missing_ok=True)  # left by a master that died; ssh would not replace it
        if not probe:
            return
        probe = "command -v python3 >/dev/null 2>&1 && echo python3=yes || echo python3=no"
        result = self.run(probe, timeout=self.connect_timeout_s + 20)
        if require_python and "python3=yes" not in result.stdout:
            self.close()
            raise AdvisorError(f"python3 not found on {self.spec}: the metrics sampler runs there",
                               hint="install it on the staging host (apt-get install python3-minimal)")

    def master_alive(self) -> bool:
        result = subprocess.run([*self.base_argv(), "-O", "check", "--", self.spec.destination],
                                capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        return result.returncode == 0

    def close(self) -> None:
        """End the master connection (a no-op when there is none)."""
        if self.multiplex and self.control_path.exists():
            subprocess.run([*self.base_argv(), "-O", "exit", "--", self.spec.destination],
                           capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)

    # -- commands and files -------------------------------------------------------
    def run(self, command: str | list[str], *, input: str | None = None, timeout: float = 60.0,
            check: bool = False) -> subprocess.CompletedProcess:
        """Run a command remotely; SshError when ssh itself failed, and with
        check=True an AdvisorError when the command exited non-zero."""
        try:
            result = subprocess.run(self.argv(command), input=input, capture_output=True, text=True,
                                    timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise SshError(f"ssh to {self.spec} timed out after {timeout:.0f} s",
                           hint="check the host answers, or raise ConnectTimeout with --ssh-option") from None
        if result.returncode == SSH_FAILED:
            raise ssh_failure(self.spec, result.stderr)
        if self.become is not None and result.returncode != 0:
            refused = become_failure(self.spec, self.become, result.returncode, result.stderr)
            if refused is not None:
                raise refused
        if check and result.returncode != 0:
            shown = command if isinstance(command, str) else shlex.join(command)
            raise AdvisorError(f"on {self.spec}: `{shown}` failed: {_last_line(result.stderr or result.stdout)}")
        return result

    def read_file(self, path: str) -> str | None:
        """The file's text, or None when it does not exist."""
        quoted = shlex.quote(path)
        result = self.run(f"if [ -e {quoted} ]; then cat -- {quoted}; else exit 3; fi")
        if result.returncode == 3:
            return None
        if result.returncode != 0:
            raise AdvisorError(f"cannot read {self.spec}:{path}: {_last_line(result.stderr)}",
                               hint="check the path and that the ssh user may read it (or pass --become)")
        return result.stdout

    def write_file(self, path: str, text: str | None, mode: int = 0o644) -> None:
        """Replace the file atomically: a temporary file beside it, then rename.
        A file that exists keeps its owner, group and mode; a new one gets
        `mode`, owned by whoever writes it (with `become`, that user). None
        removes it."""
        quoted = shlex.quote(path)
        if text is None:
            script = f"rm -f -- {quoted}"
        else:
            # mktemp in the same directory, so the rename stays on one file system;
            # it makes the file 0600, so the text is never readable by others
            # before the mode is set. chown to the old owner works only for root
            # (with become): the login user writes its own files as before.
            script = (f"set -e; tmp=$(mktemp {shlex.quote(path + '.tmp.')}XXXXXX); "
                      "trap 'rm -f -- \"$tmp\"' EXIT; cat > \"$tmp\"; "
                      f"if [ -e {quoted} ]; then chown --reference={quoted} \"$tmp\" 2>/dev/null || true; "
                      f"chmod --reference={quoted} \"$tmp\"; else chmod {mode:o} \"$tmp\"; fi; "
                      f"mv -f -- \"$tmp\" {quoted}; trap - EXIT")
        result = self.run(script, input=text if text is not None else "")
        if result.returncode != 0:
            raise AdvisorError(f"cannot write {self.spec}:{path}: {_last_line(result.stderr)}",
                               hint="check the directory exists and the ssh user may write it (or pass --become)")


def ssh_failure(spec: HostSpec, stderr: str) -> SshError:
    """ssh's complaint as one line with what to do."""
    text = stderr.strip()
    last = _last_line(text)
    if "Permission denied" in text:
        return SshError(f"ssh to {spec}: authentication refused ({last})",
                        hint="install your key there (ssh-copy-id) or pass --identity KEY; "
                             "passwords are not asked for (BatchMode)")
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return SshError(f"ssh to {spec}: the host key is not known or has changed",
                        hint="check the key and add it to known_hosts (ssh-keyscan), or pass "
                             "--ssh-option UserKnownHostsFile=FILE")
    if re.search(r"Connection refused|timed out|No route to host|Could not resolve|Network is unreachable|"
                 r"Name or service not known|Connection closed|Connection reset", text):
        return SshError(f"ssh to {spec}: host unreachable ({last})",
                        hint="check the address and port, and that sshd runs there")
    return SshError(f"ssh to {spec} failed: {last or 'exit status 255'}",
                    hint="run the same ssh command by hand to see why")


def become_failure(spec: HostSpec, user: str, returncode: int, stderr: str) -> BecomeError | None:
    """sudo's own refusal in a failed command's stderr, as one line naming the
    host and what to set there; None when the command itself failed."""
    login = spec.user or "the ssh user"
    text = stderr.strip()
    if returncode == 127 and re.search(r"sudo: (command )?not found", text):
        return BecomeError(f"{spec}: --become needs sudo there, and it is not installed",
                           hint="install sudo on the host (apt-get install sudo), or log in as root without --become")
    # With -n, sudo says a password is required also where it would refuse
    # after one (no rule for the user, or none for these commands).
    if "a password is required" in text or "a terminal is required" in text:
        return BecomeError(f"{spec}: sudo wants a password for {login} to run commands as {user} "
                           "(--become runs sudo -n, which never asks for one), or has no rule letting it",
                           hint=f"give {login} a NOPASSWD rule in the host's sudoers, e.g. "
                                f"`{login} ALL=({user}) NOPASSWD: ALL`, or set --become-user / ansible_become_user "
                                "to a user it may become without one")
    if "is not in the sudoers file" in text or "is not allowed to execute" in text \
            or "may not run sudo" in text:
        return BecomeError(f"{spec}: sudo refuses to let {login} run commands as {user}",
                           hint=f"add a sudoers rule for {login} (e.g. `{login} ALL=({user}) NOPASSWD: ALL`), "
                                "or set --become-user / ansible_become_user to a user it may become")
    if re.search(r"^sudo: unknown user", text, re.M):
        return BecomeError(f"{spec}: sudo knows no user {user} there",
                           hint="set --become-user / ansible_become_user to a user of the host")
    if re.search(r"^sudo: sorry, you must have a tty", text, re.M):
        return BecomeError(f"{spec}: sudo there requires a terminal (Defaults requiretty)",
                           hint=f"add `Defaults:{login} !requiretty` to the host's sudoers")
    return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
