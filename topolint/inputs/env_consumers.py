"""Who reads a `.env` file decides how it is read: after every input is parsed, a `.env` that a
shell script passes to ``docker run --env-file`` is read literally (docker keeps quotes and
``# text``), one a script sources is shell (the script already read it, in its own scope), and
one a compose service names in ``env_file`` is that service's (compose.py read it there), and one
with no other consumer stays as docker compose reads it, which ``--verbose`` says."""

from __future__ import annotations

import os

from topolint.parsers.envfile import COMPOSE_NOTE, parse_docker_env_file


def settle(result) -> None:
    """Re-read or drop the ``envfile`` configs of a collection by their consumer, in place."""
    consumers: dict[str, str] = {}
    for config in result.configs:
        for real in config.env_files:
            consumers[real] = "docker-run"
        for sourced in config.included:
            if sourced.real_path is not None:
                consumers.setdefault(os.path.realpath(sourced.real_path), "compose" if config.format == "compose" else "shell")
    sources = {path: source for node in result.nodes for path, source in node.sources.items()}
    kept = []
    for config in result.configs:
        source = sources.get(config.path)
        if config.format != "envfile" or source is None:
            kept.append(config)
            continue
        consumer = consumers.get(os.path.realpath(source.real_path)) if source.real_path is not None else None
        if consumer == "docker-run":
            kept.append(parse_docker_env_file(source))
            result.notes.append(f"{config.path}: read as docker run --env-file reads it (values as written)")
        elif consumer == "shell":
            result.notes.append(f"{config.path}: sourced by a shell script: read as shell there, not on its own")
        elif consumer == "compose":
            result.notes.append(f"{config.path}: the env_file of a docker compose service: read as that service's "
                                "environment there, not on its own")
        else:
            kept.append(config)
            result.notes.append(f"{config.path}: {COMPOSE_NOTE}")
    result.configs[:] = kept
