"""The README's first screen is a promise: keep its two commands true."""

from __future__ import annotations

import re

from conftest import REPO

README = (REPO / "README.md").read_text()
CI_RUN = (REPO / ".ci" / "run").read_text()


def _commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", README)


def test_first_screen_has_the_two_commands():
    first_screen = "\n".join(README.splitlines()[:30])
    commands = _commands()
    assert len(commands) >= 2
    assert commands[0] in first_screen and commands[1] in first_screen
    assert "apache-advisor lint" in commands[0]
    assert "pytest" in commands[1]


def test_the_user_install_is_a_regular_one():
    """A user's install is regular: an editable one costs start-up time on
    every run (its import finder) and ties the command to this checkout.
    Development keeps the editable install in .ci/install."""
    installs = re.findall(r"pip install ([^&|;]+)", _commands()[0])
    assert installs, _commands()[0]
    for arguments in installs:
        words = arguments.split()
        assert "." in words, arguments
        assert not {"-e", "--editable"} & set(words), f"editable install in the README: {arguments}"
        assert not any(word.startswith(("--editable=", "-e.")) for word in words), arguments


def test_ci_runs_exactly_the_readme_test_command():
    assert _commands()[1] in CI_RUN


def test_the_sample_the_readme_lints_exists():
    path = re.search(r"apache-advisor lint (\S+)", _commands()[0]).group(1)
    assert (REPO / path / "apache2.conf").is_file()
