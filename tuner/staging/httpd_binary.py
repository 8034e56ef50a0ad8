"""The system's httpd as the staging code finds and hears it: the binary
(apache2 or httpd), its modules directory, and its config test's complaint
turned into one file:line error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from advisor.errors import AdvisorError, ConfigError


def find_httpd(explicit: str | None = None) -> str:
    """The system httpd binary: apache2 (Debian) or httpd (Red Hat)."""
    candidates = [explicit] if explicit else [os.environ.get("APACHE_ADVISOR_HTTPD")]
    if not explicit:
        candidates += ["/usr/sbin/apache2", "/usr/sbin/httpd", shutil.which("apache2"), shutil.which("httpd")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    where = explicit or "apache2/httpd"
    raise AdvisorError(
        f"httpd binary not found: {where}",
        hint="install apache2 (apt-get install apache2) or pass --httpd-bin PATH",
    )


def find_modules_dir(binary: str) -> str:
    """The directory the sandbox loads httpd's modules from: $APACHE_ADVISOR_MODULES_DIR
    when set (a build of one's own, or a copy with a module left out), else the
    distribution's, else the binary's compiled-in root's."""
    override = os.environ.get("APACHE_ADVISOR_MODULES_DIR")
    if override:
        if os.path.isfile(os.path.join(override, "mod_status.so")):
            return override
        raise AdvisorError(f"APACHE_ADVISOR_MODULES_DIR={override} holds no mod_status.so",
                           hint="name the directory that holds httpd's modules, or unset it")
    for candidate in ("/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules"):
        if os.path.isfile(os.path.join(candidate, "mod_status.so")):
            return candidate
    root = _compile_setting(binary, "HTTPD_ROOT")
    if root and os.path.isfile(os.path.join(root, "modules", "mod_status.so")):
        return os.path.join(root, "modules")
    raise AdvisorError(
        f"cannot find httpd's modules directory for {binary}",
        hint="install the package that ships mod_status.so (apache2-bin or httpd)",
    )


def _compile_setting(binary: str, name: str) -> str | None:
    try:
        out = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(rf'-D {name}="([^"]*)"', out)
    return match.group(1) if match else None


def config_test_error(output: str, default_file: str) -> ConfigError:
    """Turn httpd's -t complaint into one file:line error."""
    # An error inside an included file is reported once per level of
    # inclusion, outermost first: the last one names the line to fix.
    matches = list(re.finditer(r"Syntax error on line (\d+) of ([^:\n]+):[ \t]*\n?", output))
    if matches:
        last = matches[-1]
        rest = output[last.end():].strip().splitlines()
        return ConfigError(rest[0].strip() if rest else "syntax error", file=last.group(2),
                           line=int(last.group(1)), hint="httpd refused the configuration; fix or remove that line")
    return ConfigError(f"httpd refused the configuration: {last_output_line(output)}", file=default_file,
                       hint="run the config test by hand to see all of it")


def last_output_line(text: str) -> str:
    """The last line of a command's output that is not blank ("no output" when none is)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
