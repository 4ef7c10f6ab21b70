"""`topolint completion SHELL`: a completion script for bash, zsh or fish, generated from the
argument parser itself, so it never falls behind the commands and flags."""

from __future__ import annotations

import argparse
import sys

from topolint.commands import EXIT_CLEAN


def _flags(parser: argparse.ArgumentParser) -> list[tuple[list[str], list[str], bool]]:
    """(option strings, choices, takes a value) for each optional argument."""
    rows = []
    for action in parser._actions:  # argparse has no public accessor for its actions
        if action.option_strings:
            choices = [str(c) for c in action.choices or []]
            rows.append((list(action.option_strings), choices, action.nargs != 0))
    return rows


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return dict(getattr(parser, "commands", {}))


def bash_script(parser: argparse.ArgumentParser) -> str:
    commands = _commands(parser)
    cases = []
    for name, sub in commands.items():
        flags = [option for options, _, _ in _flags(sub) for option in options]
        value_cases = [f'            {"|".join(options)}) COMPREPLY=($(compgen -W "{" ".join(choices)}" -- "$cur")); return;;'
                       for options, choices, _ in _flags(sub) if choices]
        positional = [a for a in sub._actions if not a.option_strings and a.choices]
        words = " ".join(str(c) for a in positional for c in a.choices)
        fallback = f'COMPREPLY=($(compgen -W "{words}" -- "$cur"))' if words else 'COMPREPLY=($(compgen -f -- "$cur"))'
        cases.append(
            f"        {name})\n"
            f'            case "$prev" in\n' + "".join(line + "\n" for line in value_cases) +
            "            esac\n"
            f'            if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "{" ".join(flags)}" -- "$cur")); '
            f"else {fallback}; fi;;\n"
        )
    return (
        "# bash completion for topolint: eval \"$(topolint completion bash)\"\n"
        "_topolint() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" command="" word\n'
        '    for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do\n'
        f'        case "$word" in {"|".join(commands)}) command="$word"; break;; esac\n'
        "    done\n"
        '    case "$command" in\n'
        f'        "") COMPREPLY=($(compgen -W "{" ".join(commands)} --help --version" -- "$cur"));;\n'
        + "".join(cases) +
        "    esac\n"
        "}\n"
        "complete -o default -F _topolint topolint\n"
    )


def zsh_script(parser: argparse.ArgumentParser) -> str:
    return ("#compdef topolint\n# zsh completion for topolint: eval \"$(topolint completion zsh)\"\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser).split("\n", 1)[1])


def fish_script(parser: argparse.ArgumentParser) -> str:
    commands = _commands(parser)
    lines = ["# fish completion for topolint: topolint completion fish | source",
             "complete -c topolint -f",
             f"complete -c topolint -n '__fish_use_subcommand' -a '{' '.join(commands)}'"]
    for name, sub in commands.items():
        condition = f"__fish_seen_subcommand_from {name}"
        for options, choices, takes_value in _flags(sub):
            spec = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}" for o in options)
            value = f" -x -a '{' '.join(choices)}'" if choices else (" -r -F" if takes_value else "")
            lines.append(f"complete -c topolint -n '{condition}' {spec}{value}")
        positional = [c for a in sub._actions if not a.option_strings and a.choices for c in a.choices]
        lines.append(f"complete -c topolint -n '{condition}' " +
                     (f"-a '{' '.join(map(str, positional))}'" if positional else "-F"))
    return "\n".join(lines) + "\n"


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def cli(args) -> int:
    from topolint.cli import build_parser

    sys.stdout.write(SCRIPTS[args.shell](build_parser()))
    return EXIT_CLEAN
