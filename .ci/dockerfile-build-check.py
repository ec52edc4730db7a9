#!/usr/bin/env python3
"""Proves that the Dockerfile's build stages still build, on a machine without a Docker engine.

Interprets every stage before the last (the runtime stage) in a scratch directory, with the
machine's toolchain standing in for the stages' base images:

- `FROM <image|stage> [AS name]`: a fresh, empty root for an image; a copy of that stage's
  root for an earlier stage.
- `WORKDIR <dir>`, `ENV K=V ...` / `ENV K V`: kept per stage, inherited through `FROM <stage>`.
- `ARG K[=default]`: no `--build-arg` is given here, so the default (if any) is in the
  environment of the stage's later `RUN`s, as in `docker build` (not inherited, as in Docker).
- `COPY [--from=<stage>] <src>... <dest>`: from the build context (the repository filtered by
  `.dockerignore`) or from an earlier stage's root; a directory's contents are copied, with
  their modification times, as Docker does.
- `RUN <command>`: run with bash in the mapped workdir; any failure fails the check.
- LABEL, EXPOSE, USER, CMD, ENTRYPOINT, HEALTHCHECK, STOPSIGNAL change nothing a build needs and
  are skipped; any other instruction fails the check, since it would go uninterpreted.

The runtime stage is not run (it needs its base image's system), but every `COPY --from=<stage>`
source it names must exist in that stage: the image gets what it copies.

Limits: RUN commands execute on the host, so absolute container paths inside them are not
mapped (the Dockerfile's commands use relative ones). Two things are cached under
`target/dockerfile-check/` to keep reruns cheap: `cargo install` goes to a root there
(`CARGO_INSTALL_ROOT`, on PATH), and each workdir's `target/` is a link to one shared cargo
target directory, so compiled dependencies are reused; its top-level outputs (binaries) are
removed first, so only this run's build can provide what the runtime stage copies.

Usage: .ci/dockerfile-build-check.py [DOCKERFILE]   (default: the repository's Dockerfile)
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "target" / "dockerfile-check"
SCRATCH = CACHE / "stages"
# DOCKERFILE_CHECK_TARGET_DIR lets CI point the build at its own release target directory, so
# the dependencies compiled for the earlier steps are reused rather than built a second time.
CARGO_TARGET = Path(os.environ.get("DOCKERFILE_CHECK_TARGET_DIR", CACHE / "target")).resolve()
INSTALL_ROOT = CACHE / "cargo-install"
SKIPPED = {"LABEL", "EXPOSE", "USER", "CMD", "ENTRYPOINT", "HEALTHCHECK", "STOPSIGNAL"}


class CheckFailed(Exception):
    pass


def instructions(text):
    """(line number, INSTRUCTION, arguments) per instruction, continuation lines joined."""
    result, buffer, start = [], "", 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):  # comments inside a continuation are dropped
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        buffer += stripped
        keyword, _, arguments = buffer.partition(" ")
        result.append((start, keyword.upper(), arguments.strip()))
        buffer = ""
    return result


def ignore_patterns():
    """`.dockerignore` as (negated, regex) pairs; the last matching pattern decides."""
    path = REPO / ".dockerignore"
    patterns = []
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*")
        patterns.append((negated, re.compile(regex.replace(r"\?", "[^/]") + "$")))
    return patterns


def ignored(relative, patterns):
    """Docker excludes a path when a pattern matches it or one of its parent directories."""
    parts = relative.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for negated, regex in patterns:
        if any(regex.match(c) for c in candidates):
            verdict = not negated
    return verdict


def build_context(destination):
    """The repository as Docker would send it: `.dockerignore` applied, modification times kept."""
    patterns = ignore_patterns()
    for directory, subdirectories, files in os.walk(REPO):
        base = Path(directory).relative_to(REPO).as_posix()
        base = "" if base == "." else base + "/"
        subdirectories[:] = [
            d
            for d in subdirectories
            # This check's own scratch is never part of the context, even without .dockerignore.
            if not ignored(base + d, patterns) and Path(directory) / d != CACHE
        ]
        for name in files:
            if not ignored(base + name, patterns):
                target = destination / (base + name)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(directory) / name, target, follow_symlinks=False)


class Stage:
    def __init__(self, name, root, workdir="/", env=None):
        self.name, self.root, self.workdir = name, root, workdir
        self.env = dict(env or {})
        self.args = {}

    def host(self, container_path):
        """A container path of this stage, on the host."""
        absolute = os.path.normpath(os.path.join(self.workdir, container_path))
        return self.root / absolute.lstrip("/")


def copy(sources_root, sources, destination):
    """COPY semantics: a directory's contents, or files into a directory or onto a path."""
    matches = []
    for source in sources:
        whole = not source.strip("/.")  # `.` or `/`: the whole context or root
        found = [sources_root] if whole else sorted(sources_root.glob(source.lstrip("/")))
        if not found:
            raise CheckFailed(f"COPY source not found: {source}")
        matches += found
    into_directory = len(matches) > 1 or destination.is_dir()
    for match in matches:
        if match.is_dir():
            shutil.copytree(match, destination, symlinks=True, dirs_exist_ok=True)
        else:
            target = destination / match.name if into_directory else destination
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(match, target)


def flags(arguments):
    """`--name=value` options in front of an instruction's arguments, and the rest."""
    words, options = shlex.split(arguments), {}
    while words and words[0].startswith("--"):
        name, _, value = words.pop(0)[2:].partition("=")
        options[name] = value
    return options, words


def run(stage, command):
    workdir = stage.host(".")
    workdir.mkdir(parents=True, exist_ok=True)
    # Cargo's default target directory is the workdir's target/: link it to the shared cache.
    if not (workdir / "target").exists():
        (workdir / "target").symlink_to(CARGO_TARGET)
    # A host's own target directory setting would send the build elsewhere than the image's.
    redirects = ("CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR")
    host = {k: v for k, v in os.environ.items() if k not in redirects}
    env = {**host, **stage.env, **stage.args, "CARGO_INSTALL_ROOT": str(INSTALL_ROOT)}
    env["PATH"] = f"{INSTALL_ROOT / 'bin'}:{env['PATH']}"
    argv = ["bash", "-c", command]
    if command.lstrip().startswith("["):  # exec form: RUN ["program", "arg"]
        argv = json.loads(command)
    print(f"    $ {command}", flush=True)
    status = subprocess.run(argv, cwd=workdir, env=env).returncode
    if status != 0:
        raise CheckFailed(f"RUN exited with status {status}: {command}")


def check(dockerfile):
    steps = instructions(dockerfile.read_text())
    starts = [i for i, (_, keyword, _) in enumerate(steps) if keyword == "FROM"]
    if len(starts) < 2:  # with no build stage, nothing would be checked: refuse to pass
        raise CheckFailed("expected build stages before the runtime stage")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    CARGO_TARGET.mkdir(parents=True, exist_ok=True)
    # Top-level outputs of earlier runs must not stand in for this run's build.
    for profile in CARGO_TARGET.iterdir():
        for output in profile.iterdir() if profile.is_dir() else []:
            if output.is_file():
                output.unlink()
    context = SCRATCH / "context"
    build_context(context)

    stages = {}
    for number, (start, end) in enumerate(zip(starts, starts[1:] + [len(steps)])):
        line, _, arguments = steps[start]
        words = arguments.split()
        image = words[0]
        name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(number)
        runtime = end == len(steps)
        what = "runtime: its COPY --from sources are checked" if runtime else f"FROM {image}"
        print(f"== stage {name} (line {line}): {what}")
        root = SCRATCH / f"stage-{number}"
        if image in stages:
            parent = stages[image]
            shutil.copytree(parent.root, root, symlinks=True)
            stage = Stage(name, root, parent.workdir, parent.env)
        else:
            root.mkdir()
            stage = Stage(name, root)
        for line, keyword, arguments in steps[start + 1 : end]:
            options, words = flags(arguments) if keyword == "COPY" else ({}, [])
            if runtime:
                if keyword == "COPY" and "from" in options:
                    source_stage = stages.get(options["from"])
                    if source_stage is None:
                        raise CheckFailed(f"line {line}: no stage {options['from']}")
                    for source in words[:-1]:
                        if not source_stage.host(source).exists():
                            raise CheckFailed(
                                f"line {line}: stage {options['from']} has no {source}"
                            )
                        print(f"  line {line}: {options['from']} provides {source}")
                continue
            if keyword == "WORKDIR":
                stage.workdir = os.path.normpath(os.path.join(stage.workdir, arguments))
                stage.host(".").mkdir(parents=True, exist_ok=True)
            elif keyword == "ENV":
                pairs = shlex.split(arguments)
                if pairs and "=" not in pairs[0]:  # legacy form: ENV KEY value with spaces
                    stage.env[pairs[0]] = arguments.split(None, 1)[1]
                else:
                    stage.env.update(p.split("=", 1) for p in pairs)
            elif keyword == "ARG":
                arg, _, default = arguments.strip().partition("=")
                if default:
                    stage.args[arg] = default
            elif keyword == "COPY":
                if "from" in options:
                    source_stage = stages.get(options["from"])
                    if source_stage is None:
                        raise CheckFailed(f"line {line}: no stage {options['from']}")
                    sources_root = source_stage.root
                    sources = [
                        source_stage.host(s).relative_to(sources_root).as_posix()
                        for s in words[:-1]
                    ]
                else:
                    sources_root, sources = context, words[:-1]
                destination = stage.host(words[-1])
                if words[-1].endswith("/"):
                    destination.mkdir(parents=True, exist_ok=True)
                print(f"  line {line}: COPY {arguments}")
                copy(sources_root, sources, destination)
            elif keyword == "RUN":
                print(f"  line {line}: RUN", flush=True)
                run(stage, arguments)
            elif keyword in SKIPPED:
                print(f"  line {line}: {keyword} skipped")
            else:
                raise CheckFailed(f"line {line}: {keyword} is not interpreted by this check")
        stages[name] = stage


def main():
    sys.stdout.reconfigure(line_buffering=True)
    dockerfile = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "Dockerfile"
    try:
        check(dockerfile.resolve())
    except CheckFailed as failure:
        print(f"dockerfile build check FAILED: {failure}", file=sys.stderr)
        return 1
    print("dockerfile build check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
