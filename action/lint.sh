#!/usr/bin/env bash
# The shell steps of the GitHub Action (action.yml at the repository's top),
# kept here so that tests/test_github_action.py runs them as the action does.
#
#   lint.sh install   make a venv and install apache-advisor into it
#   lint.sh lint      lint, write SARIF, print workflow annotations, and exit
#                     as `apache-advisor lint` exits (0, 1 at --fail-on, 2)
#
# Inputs come as the action passes them, in INPUT_* variables: INPUT_PATH
# (one or more paths, shell-quoted), INPUT_ARGS (more lint options,
# shell-quoted), INPUT_FAIL_ON, INPUT_SARIF_FILE, INPUT_ANNOTATIONS (true or
# false). GITHUB_OUTPUT receives sarif-file and exit-code.
#
# ADVISOR_VENV (default: $RUNNER_TEMP/apache-advisor-venv) is where the tool
# is installed; ADVISOR_PACKAGE (default: the action's own checkout) is what
# pip installs; ADVISOR_PIP_ARGS adds pip options (a pinned index, --no-deps).
set -euo pipefail

step="${1:-}"
venv="${ADVISOR_VENV:-${RUNNER_TEMP:-/tmp}/apache-advisor-venv}"
python="${ADVISOR_PYTHON:-python3}"

say() { printf 'apache-advisor action: %s\n' "$*" >&2; }

# Split a shell-quoted input into words without evaluating it: the words are
# options and paths, never commands.
split_words() {
    "$venv/bin/python" -c 'import shlex, sys; print("\0".join(shlex.split(sys.argv[1])), end="")' "$1"
}

case "$step" in
install)
    package="${ADVISOR_PACKAGE:-${GITHUB_ACTION_PATH:-}}"
    if [ -z "$package" ]; then
        say "nothing to install: set GITHUB_ACTION_PATH (the action does) or ADVISOR_PACKAGE"
        exit 2
    fi
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    read -r -a pip_args <<< "${ADVISOR_PIP_ARGS:-}"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pip_args[@]}" "$package"
    "$venv/bin/apache-advisor" --version
    ;;
lint)
    if [ ! -x "$venv/bin/apache-advisor" ]; then
        say "apache-advisor is not installed in $venv: run the install step first"
        exit 2
    fi
    sarif="${INPUT_SARIF_FILE:-apache-advisor.sarif}"
    fail_on="${INPUT_FAIL_ON:-warning}"
    mapfile -d '' -t paths < <(split_words "${INPUT_PATH:-.}")
    mapfile -d '' -t extra < <(split_words "${INPUT_ARGS:-}")
    if [ "${#paths[@]}" -eq 0 ]; then
        say "the path input is empty: name the main config file or its directory"
        exit 2
    fi
    mkdir -p "$(dirname "$sarif")"
    status=0
    "$venv/bin/apache-advisor" lint --format sarif --output "$sarif" --fail-on "$fail_on" \
        "${extra[@]}" -- "${paths[@]}" || status=$?
    if [ "$status" -le 1 ] && [ "${INPUT_ANNOTATIONS:-true}" = "true" ]; then
        # The same findings as annotations on the pull request's diff; the
        # exit code that counts is the SARIF run's above.
        "$venv/bin/apache-advisor" lint --format github --fail-on never "${extra[@]}" -- "${paths[@]}" || true
    fi
    if [ -n "${GITHUB_OUTPUT:-}" ]; then
        [ "$status" -le 1 ] && echo "sarif-file=$sarif" >> "$GITHUB_OUTPUT"
        echo "exit-code=$status" >> "$GITHUB_OUTPUT"
    fi
    case "$status" in
    0) say "no finding at or above $fail_on; SARIF in $sarif" ;;
    1) say "findings at or above $fail_on (see the annotations); SARIF in $sarif" ;;
    *) say "lint stopped before linting (its message is above); no SARIF written" ;;
    esac
    exit "$status"
    ;;
*)
    say "usage: lint.sh install|lint"
    exit 2
    ;;
esac
