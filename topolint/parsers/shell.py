"""Shell and Slurm scripts: NCCL settings and launch options, with the scope they apply to.

The text is split into words and operators by ``topolint.parsers._bash`` as bash splits it
(quotes removed, ``$(..)``/``${..}`` kept whole, ``#`` a comment only where a word starts,
heredoc bodies read after their line), one statement per logical line. What is read:

- ``export A=1``, ``declare -x A=1``, plain ``A=1``: the current scope;
- ``${A:=v}`` / ``${A=v}`` in any word (``: "${NCCL_DEBUG:=INFO}"``): a default in the current scope;
- ``A=1 cmd``, ``env A=1 cmd``, ``srun --export=A=1,...``, ``mpirun -x A=1``, ``-genv A 1``,
  ``docker run -e A=1``: the scope of that one command (``.../step@LINE``);
- ``#SBATCH --export=...`` and other ``#SBATCH`` options before the first command: scope ``job``;
- if/elif/else and case branches are scopes of their own (``file/if@12``, ``file/else@12``);
- launch options: ``--gpus-per-node``, ``--gres=gpu:N``, ``--nodes``, ``--nproc-per-node``,
  ``--cpu-bind``, ``--gpu-bind``, ``--mem-bind``, numactl, taskset, ``CUDA_VISIBLE_DEVICES``.

An unterminated quote or substitution ends the analysis at its line, and heredoc bodies that
are not read are listed with ``--verbose``; they are never an input error.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import sys
from collections.abc import Iterable

from topolint.inputs.source import InputError, SourceFile, read_source
from topolint.model import config as cfg
from topolint.model.config import ConfigFile, EnvSetting, LaunchFact, SkippedLine
from topolint.model.facts import Location, build
from topolint.parsers._bash import Heredoc, Statement, Token, Unterminated, statements, stream
from topolint.parsers._common import ASSIGNMENT, Cursor, shell_value, wanted, written_at
from topolint.parsers._lines import TextLines
from topolint.parsers._reach import Reach
from topolint.parsers._sourced import script_dir
from topolint.parsers.envfile import parse_literal_lines
from topolint.parsers._nccl_pins import PinReader, file_opener, pin_command

_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "|&", ";&", ";;&"}
_LIST_VARS = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG_SUBSYS",
              "NCCL_OOB_NET_IFNAME", "CUDA_VISIBLE_DEVICES"}
_MPI = {"mpirun", "mpiexec", "orterun", "prterun", "oshrun", "mpiexec.hydra"}
_MPI_NOARG = {"--allow-run-as-root", "--oversubscribe", "--report-bindings", "-tag-output", "--tag-output",
              "-genvall", "--display-map", "-v", "--verbose", "-q", "--quiet", "-l", "-prepend-rank",
              "--noprefix", "-wdir", "--timestamp-output", "-bind-to-core", "-genvnone", "--merge-stderr-to-stdout"}
_SRUN_NOARG = {"-l", "--label", "-u", "--unbuffered", "--exclusive", "--overlap", "-v", "--verbose", "-Q",
               "--quiet", "--pty", "-K", "--kill-on-bad-exit", "-X", "--disable-status", "-Z", "--no-allocate",
               "--exact", "-O", "--overcommit", "-s", "--oversubscribe", "--multi-prog", "-E",
               "--preserve-env", "--mpi=pmix", "-H", "--hold", "--contiguous"}
_SLURM_FACTS = {
    "--gpus-per-node": cfg.GPUS_PER_NODE, "--nodes": cfg.NODES, "-N": cfg.NODES,
    "--cpu-bind": cfg.CPU_BIND, "--cpu_bind": cfg.CPU_BIND, "--gpu-bind": cfg.GPU_BIND,
    "--mem-bind": cfg.MEM_BIND, "--mem_bind": cfg.MEM_BIND,
    "--distribution": cfg.DISTRIBUTION, "-m": cfg.DISTRIBUTION,  # the rank order FLEET002 assumes
}


class _ShellParser:
    def __init__(self, source: SourceFile, lines: list[str] | None = None):
        self.path = source.path  # the file being read now: the script, or a file it sources
        self.source = source
        self.including: list[tuple[str, str]] = []  # (display, real) of the files being sourced, innermost last
        self.script_dir_vars: dict[str, str] = {}  # DIR=$(dirname "$0") and the like -> whose folder
        self.text = source.text
        self.lines = lines if lines is not None else TextLines(source.text)  # bash's lines: only LF ends one
        self.config = ConfigFile(path=source.path, format="shell")
        self.stack: list[tuple[str, str, int]] = [("file", "file", 0)]  # (kind, scope, opening line)
        self.ids: set[str] = set()
        self.pending_function: str | None = None
        self.seen_command = False
        self.cursor: Cursor | None = None
        self.line = 0
        self.last_texts: dict[tuple[str, str], str] = {}  # (name, field) -> its last text (_same)
        self.reach = Reach()  # which settings the processes it launches see (ENV009)
        self.standalone = False  # the assignment being read is a statement of its own
        # Lines a script's every statement is looked for in, when its text is not laid out as in the
        # file (a folded or quoted YAML scalar): names are found there, left to right.
        self.span: tuple[int, int] | None = None

    # ---- scopes -------------------------------------------------------------------------------
    @property
    def scope(self) -> str:
        return self.stack[-1][1]

    def _new_id(self, base: str) -> str:
        name, k = base, 1
        while name in self.ids:
            k += 1
            name = f"{base}.{k}"
        self.ids.add(name)
        return name

    def _push(self, kind: str, label: str | None) -> None:
        if len(self.stack) > MAX_NESTING:  # a scope names every block it is in: depth squared to hold
            raise InputError(self.path, self.line, f"blocks (if, case, loops, functions, {{ }}) nested deeper than "
                             f"{MAX_NESTING} levels")
        scope = self.scope if label is None else f"{self.scope}/{self._new_id(label)}"
        self.stack.append((kind, scope, self.line))

    def _pop(self, *kinds: str) -> None:
        if len(self.stack) > 1 and self.stack[-1][0] in kinds:
            self.stack.pop()

    def _replace_branch(self, label: str) -> None:
        if len(self.stack) > 1 and self.stack[-1][0] == "if":
            kind, _, opened = self.stack.pop()
            self.stack.append((kind, f"{self.scope}/{self._new_id(label.format(opened))}", opened))

    # ---- lines --------------------------------------------------------------------------------
    def parse(self) -> ConfigFile:
        found = stream(self.text)  # a statement at a time: the script's tokens are never all held
        head = next(found, None)
        first_command = head.first_line if isinstance(head, Statement) else len(self.lines) + 1
        for number in range(1, min(first_command, len(self.lines) + 1)):
            text = self.lines[number - 1]
            if text.strip().startswith("#SBATCH"):  # Slurm reads directives up to the first command
                self._sbatch(number, text)
        if head is not None:
            self._statements(itertools.chain((head,), found))
        self.config.unreached.extend(self.reach.finish())
        return self.config

    def _statements(self, found: Iterable[Statement | Unterminated]) -> None:
        for statement in found:
            if isinstance(statement, Unterminated):
                self._skip(statement.line,
                           f"unterminated {statement.what}: lines {statement.line}-{len(self.lines)} not analysed")
                break
            first, last = self.span or (statement.first_line, statement.last_line)
            self.line = first
            self.cursor = Cursor(self.lines, first, last)
            self._statement(statement.tokens)
            for heredoc in statement.heredocs:
                self._heredoc_body(heredoc)
                heredoc.body = []  # read: a heredoc's lines are not held past it

    def _skip(self, line: int, reason: str) -> None:
        self.config.skipped.append(SkippedLine(line, reason, None if self.path == self.config.path else self.path))

    def _loc(self, line: int, column: int = 0):
        return build(Location, path=self.path, line=max(line, 1), column=max(column, 0))

    def _env_file(self, value: str) -> None:
        """``docker run --env-file FILE``: docker reads FILE literally (inputs/env_consumers.py)."""
        from topolint.parsers._sourced import resolve

        found = resolve(value, value, [(self.source.path, self.source.real_path), *self.including], {})
        if isinstance(found, tuple):
            self.config.env_files.append(found[0])

    # ---- source / . -----------------------------------------------------------------------------
    def _source(self, argument: str) -> None:
        """Read a sourced file in place, as bash runs it in the current shell and scope."""
        from topolint.parsers._sourced import MAX_DEPTH, resolve

        hint = _shellcheck_hint(self.lines, self.line)
        files = [(self.source.path, self.source.real_path), *self.including]
        found = resolve(argument, hint, files, self.script_dir_vars)
        if isinstance(found, str):
            self._skip(self.line, f"source {argument}: {found}")
            return
        real, display = found
        if real in {path for _, path in self.including} or real == _real(self.source.real_path):
            self._skip(self.line, f"source {argument}: {display} is already being read (a cycle): not read again")
            return
        if len(self.including) >= MAX_DEPTH:
            self._skip(self.line, f"source {argument}: more than {MAX_DEPTH} nested source commands: not followed")
            return
        try:
            sourced = read_source(display, real)
        except InputError as exc:
            self._skip(self.line, f"source {argument}: {exc.message}")
            return
        self.config.included.append(sourced)
        if sourced.bom:
            self.config.bom_kept[display] = bom_reach(sourced.text)
        saved = (self.path, self.lines, self.cursor, self.line)
        self.path, self.lines = display, TextLines(sourced.text)
        self.including.append((display, real))
        try:
            self._statements(stream(sourced.text))
        finally:
            self.including.pop()
            self.path, self.lines, self.cursor, self.line = saved

    def _statement(self, tokens: list[Token]) -> None:
        words: list[str] = []
        heredocs: list[Heredoc] = []  # the heredocs the current command reads
        target: list[str] = []  # where its output goes (> FILE)
        skip_next = False
        for i, token in enumerate(tokens):
            if skip_next:
                skip_next = False
                if target == [""]:
                    target[0] = token
                continue
            if token.op and token in _SEPARATORS | {";;"}:
                if words and token == ")" and len(words) == 1 and self.stack[-1][0] in ("case", "branch"):
                    self._pop("branch")
                    self._push("branch", f"case@{self.stack[-1][2]}:{words[0]}")
                    words = []
                    continue
                if token == "(" and len(words) == 1 and i + 1 < len(tokens) and tokens[i + 1] == ")":
                    self.pending_function = words[0]
                    words = []
                    skip_next = True
                    continue
                self._feeds(heredocs, words, target)
                self._command(words)
                words, heredocs, target = [], [], []
                if token in (";;", ";&", ";;&"):
                    self._pop("branch")
                continue
            if token.op and ("<" in token or ">" in token):  # a redirection and its target
                if token.heredoc is not None:
                    heredocs.append(token.heredoc)
                elif token in (">", ">>", ">|") and not target:
                    target.append("")
                skip_next = True
                continue
            words.append(token)
        self._feeds(heredocs, words, target)
        self._command(words)

    def _feeds(self, heredocs: list[Heredoc], words: list[str], target: list[str]) -> None:
        if not heredocs:
            return
        reader = _reader(words)
        written = _tee(words) if reader == "tee" else (target[0] if target else None)
        if reader is None and written is None:  # bash -c "cat > /etc/nccl.conf" <<EOF: the -c script writes it
            reader, written = _shell_c_writer(words)
        for heredoc in heredocs:
            heredoc.fed = (self.scope, reader, written)

    def _heredoc_body(self, heredoc: Heredoc) -> None:
        """A heredoc as bash uses it: the script of a shell it feeds (``bash <<EOF``), the content
        of an nccl.conf it writes (``cat > /etc/nccl.conf <<EOF``), else data, listed as skipped."""
        if not heredoc.body:
            return
        first, last = heredoc.first_line, heredoc.first_line + len(heredoc.body) - 1
        scope, reader, target = heredoc.fed or (self.scope, None, None)
        if reader in _SHELLS and len(self.stack) < MAX_HEREDOC_NESTING + 1:
            self.stack.append(("sh", f"{scope}/{self._new_id(f'sh@{first}')}", first))
            saved = (self.cursor, self.line)
            try:
                self._statements(stream("\n".join(heredoc.body), first))
            finally:
                self.stack.pop()
                self.cursor, self.line = saved
        elif target and os.path.basename(target) in NCCL_CONF_NAMES:
            parse_literal_lines(heredoc.body, self.config, first, scope=f"nccl.conf:{target}", how="nccl-conf",
                                path=self.path, expanded=not heredoc.literal, loc=self._loc)
        else:
            what = f"input to {reader}" if reader else "not a command's script"
            self._skip(first, f"heredoc body (lines {first}-{last}) is {what}: not analysed")

    # ---- commands -----------------------------------------------------------------------------
    def _command(self, words: list[str]) -> None:
        while words:
            head = words[0]
            if head in ("then", "do", "!", "time", "exec", "command", "nohup", "builtin"):
                words = words[1:]
            elif head == "if":
                self._push("if", f"if@{self.line}")
                return
            elif head == "elif":
                self._replace_branch("elif@" + str(self.line))
                return
            elif head == "else":
                self._replace_branch("else@{}")
                words = words[1:]
            elif head == "fi":
                self._pop("if")
                return
            elif head == "case":
                self._push("case", None)
                return
            elif head == "esac":
                self._pop("branch")
                self._pop("case")
                return
            elif head in ("for", "while", "until", "select"):
                self._push("loop", None)
                return
            elif head == "done":
                self._pop("loop")
                return
            elif head == "function" and len(words) >= 2:
                self.pending_function = words[1].rstrip("()")
                words = words[2:]
            elif head == "{":
                if self.pending_function:
                    self._push("fn", f"fn:{self.pending_function}")
                    self.pending_function = None
                else:
                    self._push("brace", None)
                words = words[1:]
            elif head == "}":
                self._pop("fn", "brace")
                words = words[1:]
            else:
                break
        if not words:
            return
        self.seen_command = True
        self._references(words)
        for word in words:
            self._default_assignments(word)
        self._simple(words, self.scope)

    def _references(self, words: list[str]) -> None:
        """``$NAME`` / ``${NAME...}`` / ``${!PREFIX*}`` in a statement: the value may be passed on
        (``-x NAME=$NAME``), so an unexported NAME set earlier is not reported (ENV009)."""
        for word in words:
            raw = getattr(word, "raw", word)
            if "$" not in raw or not self.reach.unexported:
                continue
            for match in _REFERENCE.finditer(raw):
                if match.group("prefix") is not None:  # ${!NCCL*}: every variable with that prefix
                    for name in [n for n in self.reach.unexported if n.startswith(match.group("prefix"))]:
                        self.reach.referenced(name)
                else:
                    self.reach.referenced(match.group("name"))

    def _default_assignments(self, word: str) -> None:
        """``${VAR:=v}`` / ``${VAR=v}`` in any expanded word (``: "${NCCL_DEBUG:=INFO}"``) sets
        VAR in the current shell when it is unset: a default, like ``VAR=${VAR:-v}``."""
        raw = getattr(word, "raw", word)
        if "=" not in raw or "${" not in raw or raw.startswith("'"):
            return
        assigned = ASSIGNMENT.match(word)
        for match in _ASSIGN_DEFAULT.finditer(raw):
            name = match.group("name")
            if not wanted(name) or (assigned and assigned.group(1) == name and match.start() == len(name) + 1):
                continue  # X=${X:=v} is read as the assignment itself
            value = match.group("value")
            literal = value if not any(c in value for c in "$`") else None
            line, column = _position(word, match.start("name"))
            value_line, value_column = _position(word, match.start("value"))
            name, literal = sys.intern(name), self._same(name, "value", literal)
            self._keep(EnvSetting(name, literal, self._loc(line, column), self.scope,
                                  "assign-default", self.path, raw=self._same(name, "raw", match.group(0)),
                                  default_only=True, value_at=self._loc(value_line, value_column),
                                  value_written=literal or ""))

    def _simple(self, words: list[str], scope: str) -> None:
        i = 0
        while i < len(words) and ASSIGNMENT.match(words[i]):
            name, value = ASSIGNMENT.match(words[i]).groups()
            folder = script_dir(value, self.script_dir_vars)
            if folder is not None and not folder[0]:
                self.script_dir_vars[name] = folder[1]  # DIR="$(cd "$(dirname "$0")" && pwd)"
            i += 1
        assigns, rest = words[:i], words[i:]
        if not rest:
            self.standalone = len(assigns) == 1
            for word in assigns:
                self._assign(word, scope, "assign")
            self.standalone = False
            return
        step = self._step(scope) if assigns else scope
        for word in assigns:
            self._assign(word, step, "command")
        launch = _launch(rest)
        if launch is not None:
            program, passes, shown, drops = launch
            self.reach.launch(self._loc(getattr(program, "line", self.line), getattr(program, "column", 0)),
                              shown, scope, passes, drops)
        self._run(rest, step)

    def _step(self, scope: str) -> str:
        if scope.rsplit("/", 1)[-1].startswith("step@"):
            return scope
        return f"{scope}/{self._new_id(f'step@{self.line}')}"

    def _run(self, words: list[str], scope: str) -> None:
        name = os.path.basename(words[0])
        args = words[1:]
        if pin_command(words):
            self._nccl_pins(words, scope)
        if name in ("export", "declare", "typeset", "readonly", "local"):
            exported = name == "export" or any(a.startswith("-") and "x" in a for a in args)
            for word in args:
                if word.startswith("-"):
                    continue
                if ASSIGNMENT.match(word):
                    self._assign(word, scope, "export" if exported else "declare")
                elif exported and wanted(word):
                    self._passthrough(word, scope, "export")
                    self.config.settings.extend(self.reach.export(word))  # NAME=v earlier, exported now
        elif name == "set":
            for word in args:  # set -a / set -o allexport: every later assignment is exported
                if word in ("-a", "+a") or (word[:1] in "-+" and word[1:].isalpha() and "a" in word[1:]):
                    self.reach.allexport = word.startswith("-")
            for option, value in zip(args, args[1:]):
                if option in ("-o", "+o") and value == "allexport":
                    self.reach.allexport = option == "-o"
        elif name == "env":
            self._env(args, self._step(scope))
        elif name == "srun":
            self._srun(args, self._step(scope))
        elif name in _MPI:
            self._mpirun(args, self._step(scope))
        elif name == "torchrun" or (name.startswith("python") and args[:2] in (["-m", "torch.distributed.run"],
                                                                                ["-m", "torch.distributed.launch"])):
            self._launcher(args, scope, {"--nproc-per-node": cfg.NPROC_PER_NODE, "--nproc_per_node": cfg.NPROC_PER_NODE,
                                         "--nnodes": cfg.NODES})
        elif name == "deepspeed":
            self._launcher(args, scope, {"--num_gpus": cfg.NPROC_PER_NODE, "--num_nodes": cfg.NODES})
        elif name == "numactl":
            self._numactl(args, scope)
        elif name == "taskset":
            self._taskset(args, scope)
        elif name in ("source", ".") and args:
            self._source(args[0])
        elif name in ("docker", "podman") and args[:1] == ["run"]:
            self._docker_run(args[1:], self._step(scope))
        elif name in _PASS_THROUGH:  # xargs CMD, ssh HOST CMD: the command they run
            rest = _after_options(args, _PASS_THROUGH[name], host=name == "ssh")
            if rest:
                self._run(rest, scope)
        elif name == "tmux" and args[:1] and args[0] in _TMUX_NEW:
            self._tmux(args[1:], self._step(scope))

    # ---- settings -----------------------------------------------------------------------------
    def _assign(self, word: str, scope: str, how: str, line: int | None = None, column: int | None = None) -> None:
        name, raw = ASSIGNMENT.match(word).groups()
        if name == "CUDA_VISIBLE_DEVICES":
            where = self.cursor.find(name, assignment=True)
            value, _ = shell_value(name, raw)
            self.config.launch.append(LaunchFact(cfg.CUDA_VISIBLE_DEVICES, value if value is not None else "$",
                                                 self._loc(*where), scope, str(word)))
            return
        if not wanted(name):
            return
        if line is None:
            line, column = self.cursor.find(name, assignment=True)
        value, default = shell_value(name, raw)
        written = self._written(word, line, column + len(name) + 1, name, value)
        # What a setting keeps is plain text: a Token's position and raw text stay with the lexer.
        name, value = sys.intern(name), self._same(name, "value", value)
        self._keep(EnvSetting(name, value, self._loc(line, column), scope, how,
                              self.path, raw=self._same(name, "raw", str(word)), default_only=default,
                              value_at=self._loc(line, written[0]) if written else None,
                              value_written=(value if written[1] == value else self._same(name, "written", written[1]))
                              if written else ""))

    def _same(self, name: str, field: str, text: str | None) -> str | None:
        """``text``, or the equal string the last setting of ``name`` kept there: a script that sets
        a name to one value over and over holds that value once (issue 20)."""
        if text is None:
            return None
        last = self.last_texts.get((name, field))
        if last == text:
            return last
        self.last_texts[(name, field)] = text
        return text

    def _keep(self, setting: EnvSetting) -> None:
        """A setting of the environment, or a shell variable no child process sees (kept for ENV009)."""
        if setting.source in ("assign", "assign-default", "declare") and not self.reach.exports(setting.name):
            self.reach.assigned(setting, standalone=self.standalone and setting.source == "assign")
            return
        self.config.settings.append(setting)
        if setting.source in ("assign", "assign-default", "declare", "export"):
            self.reach.exported_setting(setting)

    def _written(self, word, line: int, column: int, name: str, value: str | None) -> tuple[int, str] | None:
        """Column and text of the value as written from ``line``:``column`` (a word's own text
        when it is one line, else ``value`` found there; in ``NAME=${NAME:-v}``, the default
        ``v``), or None when the file does not hold it there."""
        if column < 1 or not 1 <= line <= len(self.lines) or value is None:
            return None
        text = self.lines[line - 1]
        word_raw = getattr(word, "raw", None)
        if word_raw is None or "\n" in word_raw or "=" not in word_raw:
            written = written_at(text, column - 1, value)
            return (column, written) if written else None
        written = word_raw.split("=", 1)[1]
        if not written or not text.startswith(written, column - 1):
            return None
        default = _SELF_DEFAULT.fullmatch(written) if "${" in written else None
        if default and default.group("name") == name and default.group("value") == value:
            return column + default.start("value"), value  # rewrite the default NCCL reads when unset
        return column, written


    def _passthrough(self, name: str, scope: str, how: str) -> None:
        line, column = self.cursor.find(name)
        name = sys.intern(str(name))
        self.config.settings.append(EnvSetting(name, None, self._loc(line, column), scope, how,
                                               self.path, raw=name, passthrough=True))

    def _nccl_pins(self, words: list[str], scope: str) -> None:
        """Package pins, wheels and modules that set the NCCL of what this script runs."""
        real = self.including[-1][1] if self.including else self.source.real_path
        notes: list[str] = []
        openers = self.__dict__.setdefault("pin_openers", {})  # one per file read: each file is read once
        key = (real, self.path)
        if key not in openers:
            openers[key] = (file_opener(os.path.dirname(real) if real else None, os.path.dirname(self.path),
                                        notes=notes), notes)
        opener, notes = openers[key]
        seen = len(notes)
        PinReader(self.config.nccl_sources, lambda word: self._loc(getattr(word, "line", self.line),
                                                                    getattr(word, "column", 0)),
                  opener, notes).command(words, scope)
        for note in notes[seen:]:
            self._skip(self.line, note)

    def _image(self, reference: str, scope: str) -> None:
        """The image a step runs in (``docker run IMAGE``, ``srun --container-image``)."""
        from topolint.model.nccl_sources import image_source

        line, column = self.cursor.find(reference) if self.cursor else (self.line, 0)
        self.config.nccl_sources.append(image_source(reference.replace("#", "/", 1), self._loc(line, column), scope))

    def _fact(self, kind: str, value: str, scope: str, option: str) -> None:
        line, column = self.cursor.find(option.split("=", 1)[0]) if self.cursor else (self.line, 0)
        self.config.launch.append(LaunchFact(kind, str(value), self._loc(line, column), scope, str(option)))

    def _export_list(self, value: str, scope: str, how: str) -> None:
        """Slurm ``--export=ALL,A=1,B=x,y``: a comma inside a list-valued variable continues it."""
        items: list[str] = []
        for part in value.split(","):
            if items and not ASSIGNMENT.match(part) and ASSIGNMENT.match(items[-1]) \
                    and ASSIGNMENT.match(items[-1]).group(1) in _LIST_VARS and not re.fullmatch(r"[A-Z_][A-Z0-9_]*", part):
                items[-1] += "," + part
            else:
                items.append(part)
        for item in items:
            if ASSIGNMENT.match(item):
                self._assign(item, scope, how)
            elif wanted(item):
                self._passthrough(item, scope, how)

    # ---- #SBATCH ------------------------------------------------------------------------------
    def _sbatch(self, number: int, text: str) -> None:
        body = text.strip()[len("#SBATCH"):]
        try:
            words = shlex.split(body, comments=True)
        except ValueError:
            self.config.skipped.append(SkippedLine(number, "cannot split the #SBATCH line"))
            return
        self.line = number
        self.cursor = Cursor(self.lines, number, number)
        for option, value in _options(words, set()):
            self._slurm_option(option, value, "job", "sbatch-export")

    def _slurm_option(self, option: str, value: str | None, scope: str, how: str) -> None:
        if value is None:
            return
        if option == "--export":
            self.cursor.find("--export")
            self._export_list(value, scope, how)
        elif option == "--container-image":
            self._image(value, scope)
        elif option in _SLURM_FACTS:
            self._fact(_SLURM_FACTS[option], value, scope, option)
        elif option == "--gres":
            match = re.search(r"(?:^|,)gpu(?::[A-Za-z0-9_.-]+)?:(\d+)", value)
            if match:
                self._fact(cfg.GPUS_PER_NODE, match.group(1), scope, option)

    # ---- launchers ----------------------------------------------------------------------------
    def _env(self, args: list[str], scope: str) -> None:
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in ("-u", "--unset", "-C", "--chdir", "-S") else 1
        while i < len(args) and ASSIGNMENT.match(args[i]):
            self._assign(args[i], scope, "env")
            i += 1
        if i < len(args):
            self._run(args[i:], scope)

    def _srun(self, args: list[str], scope: str) -> None:
        i = 0
        while i < len(args) and args[i].startswith("-"):
            word = args[i]
            option, _, value = word.partition("=")
            if not value and word not in _SRUN_NOARG and i + 1 < len(args):
                value = args[i + 1]
                i += 1
            self._slurm_option(option, value or None, scope, "srun-export")
            i += 1
        if i < len(args):
            self._run(args[i:], scope)

    def _mpirun(self, args: list[str], scope: str) -> None:
        i = 0
        while i < len(args) and args[i].startswith("-"):
            word = args[i]
            if word == "-x" and i + 1 < len(args):
                target = args[i + 1]
                if ASSIGNMENT.match(target):
                    self._assign(target, scope, "mpirun-x")
                elif wanted(target):
                    self._passthrough(target, scope, "mpirun-x")
                i += 2
            elif word in ("-genv", "-env", "--env") and i + 1 < len(args):
                target = args[i + 1]
                if ASSIGNMENT.match(target):
                    self._assign(target, scope, "mpirun-genv")
                    i += 2
                elif i + 2 < len(args):
                    if wanted(target):
                        line, column = self.cursor.find(target)
                        value, default = shell_value(target, args[i + 2])
                        self.config.settings.append(EnvSetting(
                            sys.intern(str(target)), None if value is None else str(value), self._loc(line, column), scope, "mpirun-genv", self.path,
                            raw=f"{word} {target} {args[i + 2]}", default_only=default))
                    i += 3
                else:
                    i += 2
            elif word in ("-genvlist", "-envlist") and i + 1 < len(args):  # MPICH/Hydra: pass these names on
                for name in args[i + 1].split(","):
                    if wanted(name):
                        self._passthrough(name, scope, "mpirun-genvlist")
                i += 2
            elif word in ("--mca", "-mca", "--gmca", "-gmca"):
                i += 3
            elif word in ("-np", "-n", "-N", "--npernode", "-npernode", "-ppn") and i + 1 < len(args):
                if word in ("-N", "--npernode", "-npernode", "-ppn"):
                    self._fact(cfg.NPROC_PER_NODE, args[i + 1], scope, word)
                i += 2
            elif word in ("--map-by", "-map-by", "--rank-by", "-rank-by") and i + 1 < len(args):
                self._fact(cfg.MAP_BY if "map" in word else cfg.RANK_BY, args[i + 1], scope, word)  # FLEET002
                i += 2
            elif "=" in word or word in _MPI_NOARG:
                i += 1
            else:
                i += 2
        if i < len(args):
            self._run(args[i:], scope)

    def _launcher(self, args: list[str], scope: str, wanted_options: dict[str, str]) -> None:
        for option, value in _options(args, set()):
            if option in wanted_options and value is not None:
                self._fact(wanted_options[option], value, scope, option)

    def _numactl(self, args: list[str], scope: str) -> None:
        binds: dict[str, str] = {}
        names = {"--cpunodebind": "cpunodebind", "-N": "cpunodebind", "--membind": "membind", "-m": "membind",
                 "--physcpubind": "physcpubind", "-C": "physcpubind", "--preferred": "membind",
                 "-p": "membind", "--interleave": "interleave", "-i": "interleave"}
        i = 0
        first = None
        while i < len(args) and args[i].startswith("-"):
            word = args[i]
            option, eq, value = word.partition("=")
            if not eq and option in names and i + 1 < len(args):
                value = args[i + 1]
                i += 1
            elif not eq and option[:2] in names and len(option) > 2:  # -N0
                option, value = option[:2], option[2:]
            if option in names and value:
                binds[names[option]] = value
                first = first or option
            i += 1
        if binds:
            self._fact(cfg.NUMACTL, ";".join(f"{k}={v}" for k, v in binds.items()), scope, first)
        if i < len(args):
            self._run(args[i:], scope)

    def _taskset(self, args: list[str], scope: str) -> None:
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 1
        if i < len(args):
            self._fact(cfg.TASKSET, args[i], scope, "taskset")
            if i + 1 < len(args):
                self._run(args[i + 1:], scope)

    def _tmux(self, args: list[str], scope: str) -> None:
        """``tmux new-session -e NAME=V ... CMD``: -e sets the new session's environment."""
        i = 0
        while i < len(args) and args[i].startswith("-"):
            option, value = args[i][:2], args[i][2:]
            if option in _TMUX_ARG and not value and i + 1 < len(args):
                value, i = args[i + 1], i + 1
            if option == "-e" and ASSIGNMENT.match(value):
                self._assign(value, scope, "tmux-env")
            i += 1
        if i < len(args):
            self._run(args[i:], scope)

    def _docker_run(self, args: list[str], scope: str) -> None:
        self.config.scopes[scope] = "docker-run"
        i = 0
        while i < len(args) and args[i].startswith("-"):
            option, eq, value = args[i].partition("=")
            takes = option not in ("--privileged", "--rm", "-it", "-i", "-t", "-d", "--detach", "--init")
            if not eq and takes and i + 1 < len(args):
                value = args[i + 1]
                i += 1
            i += 1
            if option in ("-e", "--env") and ASSIGNMENT.match(value):
                self._assign(value, scope, "docker-env")
            elif option in ("-e", "--env") and wanted(value):  # -e NAME: the value of the host's NAME
                self._passthrough(value, scope, "docker-env")
            elif option == "--shm-size":
                self._fact(cfg.SHM_SIZE, value, scope, option)
            elif option == "--ulimit" and value.startswith("memlock"):
                self._fact(cfg.ULIMIT_MEMLOCK, value.split("=", 1)[-1], scope, option)
            elif option == "--device" and "infiniband" in value:
                self._fact(cfg.RDMA_DEVICE, value, scope, option)
            elif option == "--cap-add":
                self._fact(cfg.CAPABILITY, value.upper(), scope, option)
            elif option == "--privileged":
                self._fact(cfg.PRIVILEGED, "true", scope, option)
            elif option == "--ipc" and value == "host":
                self._fact(cfg.IPC_HOST, "true", scope, option)
            elif option == "--gpus":
                self._fact(cfg.GPUS_PER_POD, value, scope, option)
            elif option == "--env-file":
                self._env_file(value)
        if i < len(args) and not args[i].startswith("-"):
            self._image(args[i], scope)


_SHELLS = {"bash", "sh", "dash", "ksh", "zsh"}
# Programs that run a command given after their options (the options that take a value).
_PASS_THROUGH = {"xargs": {"-a", "-I", "-n", "-P", "-d", "-E", "-L", "-s", "--arg-file", "--max-args", "--max-procs",
                           "--delimiter"},
                 "ssh": {"-p", "-o", "-i", "-l", "-F", "-J", "-b", "-c", "-D", "-E", "-e", "-L", "-m", "-O", "-Q",
                         "-R", "-S", "-W", "-w", "-B"}}
_TMUX_NEW = {"new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
             "respawn-window", "respawnw"}
_TMUX_ARG = {"-c", "-e", "-F", "-f", "-n", "-s", "-t", "-x", "-y", "-l"}


def _after_options(args: list[str], takes_value: set[str], host: bool = False) -> list[str]:
    """The words after a program's options (and, for ssh, its host)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        option = args[i].partition("=")[0]
        i += 2 if option in takes_value and "=" not in args[i] and len(args[i]) == len(option) else 1
    return args[i + 1:] if host else args[i:]
_WRAPPERS = {"sudo", "exec", "command", "nohup", "time", "env", "srun", "mpirun", "builtin"}
NCCL_CONF_NAMES = {"nccl.conf", ".nccl.conf"}
MAX_NESTING = 256  # blocks in blocks; 20,000 nested ifs held 1.6 GB of scope names (issue 20)
MAX_HEREDOC_NESTING = 16  # shells fed by heredocs inside heredocs; deeper bodies are listed as skipped


def _reader(words: list[str]) -> str | None:
    """The program a command's standard input goes to: ``srun -N2 bash`` -> bash."""
    i = 0
    while i < len(words) and (ASSIGNMENT.match(words[i]) or os.path.basename(words[i]) in _WRAPPERS
                              or (i and words[i].startswith("-"))):
        i += 1
    if i < len(words) and not any(word == "-c" for word in words[i + 1:]):
        return os.path.basename(words[i])
    return None


def _shell_c_writer(words: list[str]) -> tuple[str | None, str | None]:
    """(cat or tee, the file) when ``words`` are ``bash -c "cat > FILE"`` or ``sh -c 'tee FILE'``:
    the heredoc fed to that shell becomes FILE's content."""
    names = [os.path.basename(w) for w in words]
    if "-c" not in words or not any(n in _SHELLS for n in names[:words.index("-c")]):
        return None, None
    at = words.index("-c") + 1
    if at >= len(words):
        return None, None
    found, _ = statements(words[at])
    tokens = found[0].tokens if len(found) == 1 else []
    if tokens[:1] == ["cat"] and len(tokens) == 3 and tokens[1] in (">", ">>"):
        return "cat", str(tokens[2])
    if tokens[:1] == ["tee"]:
        return "tee", _tee([str(t) for t in tokens])
    return None, None


def _tee(words: list[str]) -> str | None:
    """The file ``tee [-a] FILE`` writes."""
    start = next(i for i, w in enumerate(words) if os.path.basename(w) == "tee") + 1
    return next((w for w in words[start:] if not w.startswith("-")), None)


# Programs that run the job (or a process NCCL may live in); wrappers before them are skipped.
_LAUNCHERS = _MPI | {"srun", "sbatch", "salloc", "torchrun", "deepspeed", "accelerate", "horovodrun", "enroot",
                     "singularity", "apptainer", "nsys", "ncu", "numactl", "taskset", "timeout", "ray",
                     "bash", "sh", "dash", "zsh", "ksh", "docker", "podman", "sudo", "env", "ssh", "xargs",
                     "tmux", "pdsh", "clush"}
_PREFIX_WORDS = {"exec", "nohup", "time", "command", "builtin", "nice", "stdbuf"}
_REFERENCE = re.compile(r"\$(?:\{!(?P<prefix>[A-Za-z_][A-Za-z0-9_]*)[*@]\}|\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*))")


def _launch(words: list[str]) -> tuple[str, set[str] | None, str, str] | None:
    """(program word, the exported names it passes on or None for all, the launch as shown, what
    it drops) when ``words`` start a process that may run NCCL; None for builtins and ordinary tools."""
    i = 0
    while i < len(words) and os.path.basename(words[i]) in _PREFIX_WORDS:
        i += 1
    if i >= len(words):
        return None
    program, name = words[i], os.path.basename(words[i])
    args = words[i + 1:]
    if name == "env":
        cleared = any(a in ("-i", "--ignore-environment", "-") for a in args if a.startswith("-"))
        return program, (set() if cleared else None), "env -i" if cleared else "env", "starts an empty environment"
    if name == "srun":
        for j, word in enumerate(args):
            if word.startswith("--export"):
                value = word.partition("=")[2] or (args[j + 1] if j + 1 < len(args) else "")
                items = [item.split("=", 1)[0] for item in value.split(",")]
                if "ALL" in items or not value:
                    return program, None, "srun", ""
                if items == ["NONE"]:
                    return program, set(), f"srun --export={value}", "passes only SLURM_* variables to the step"
                return program, set(items), f"srun --export={value}", "passes only SLURM_* and the variables it names"
        return program, None, "srun", ""
    if name in ("docker", "podman") and args[:1] in (["run"], ["create"]):
        passes: set[str] = set()
        for j, word in enumerate(args):
            option, eq, value = word.partition("=")
            if option in ("--env-file", "--env-host", "--env-merge"):
                return program, None, f"{name} run", ""
            if option in ("-e", "--env"):
                value = value if eq else (args[j + 1] if j + 1 < len(args) else "")
                passes.add(value.split("=", 1)[0])
        return program, passes, f"{name} run", "gives the container only its -e/--env variables"
    if name in _LAUNCHERS or name.startswith("python") or name.endswith("_perf") or "/" in program:
        return program, None, name, ""
    return None


# The value of NAME=${NAME:-v} (or :=, quoted or not); one pattern for every name, not one each.
_SELF_DEFAULT = re.compile(r'"?\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):?[-=](?P<value>[^}$`"]*)\}"?')
_ASSIGN_DEFAULT = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):?=(?P<value>[^}]*)\}")


def _shellcheck_hint(lines: list[str], line: int) -> str | None:
    """``# shellcheck source=PATH`` on the comment lines right above ``line`` (1-based)."""
    number = line - 2
    while number >= 0 and lines[number].lstrip().startswith("#"):
        match = re.search(r"shellcheck\s+(?:[a-z]+=\S+\s+)*source=(\S+)", lines[number])
        if match:
            return match.group(1)
        number -= 1
    return None


def _real(path) -> str | None:
    return os.path.realpath(path) if path is not None else None


def _position(token: Token, offset: int) -> tuple[int, int]:
    """Line and column of ``offset`` into a token's raw text (which may span lines)."""
    before = token.raw[:offset]
    newlines = before.count("\n")
    if newlines:
        return token.line + newlines, offset - before.rfind("\n")
    return token.line, token.column + offset


def _options(words: list[str], noarg: set[str]):
    """(option, value) pairs of ``--opt=v``, ``--opt v``, ``-o v`` words; stops at nothing."""
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            i += 1
            continue
        option, eq, value = word.partition("=")
        if not eq:
            if word not in noarg and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value = words[i + 1]
                i += 1
            else:
                value = None
        yield option, value
        i += 1


# bash reads a byte-order mark as part of line 1's first word: `\ufeffexport` is a command
# that is not found, `\ufeffNCCL_X=1` no assignment (an identifier is [A-Za-z_][A-Za-z0-9_]*).
BASH_KEEPS_BOM = "bash (it reads the mark as part of the first word: a command that is not found)"


def bom_reach(text: str) -> tuple[str, int]:
    """What a byte-order mark costs a script: line 1's first command fails, up to the first
    ``;``, ``|``, ``&`` or parenthesis (a later command on that line may still run, so its
    settings are not counted as lost; a quoted one cuts short: a miss, never a false alarm)."""
    first = text.split("\n", 1)[0]
    return BASH_KEEPS_BOM, next((i for i, char in enumerate(first) if char in ";|&()"), len(first))


def parse_shell(source: SourceFile) -> ConfigFile:
    parser = _ShellParser(source)
    if source.bom:
        parser.config.bom_kept[source.path] = bom_reach(source.text)
    return parser.parse()


def parse_shell_into(config: ConfigFile, source: SourceFile, lines: list[str], body: list[str], first_line: int,
                     scope: str, span: tuple[int, int] | None = None) -> None:
    """Read ``body`` (lines ``first_line``.. of ``source``, e.g. a Dockerfile ``RUN <<EOF``
    heredoc) as a shell script run in ``scope``, adding what it sets to ``config``. ``span``:
    the file lines the script's text sits in when they are not its lines one for one (a YAML
    scalar folded or quoted over several lines)."""
    parser = _ShellParser(source, lines)
    parser.config = config
    parser.stack = [("file", scope, 0)]
    parser.span = span
    parser._statements(stream("\n".join(body), first_line))
    config.unreached.extend(parser.reach.finish())


def parse_argv_into(config: ConfigFile, source: SourceFile, lines: list[str], argv: list[Token], scope: str) -> None:
    """Read ``argv`` (a container's ``command`` and ``args``, one word each, with their positions)
    as the command it runs: ``mpirun -x NAME=V``, ``srun --export=``, ``torchrun`` and the rest,
    as in a script, adding what it sets to ``config``."""
    if not argv:
        return
    parser = _ShellParser(source, lines)
    parser.config = config
    parser.stack = [("file", scope, 0)]
    parser.line = argv[0].line
    parser.cursor = Cursor(lines, argv[0].line, argv[-1].line)
    parser._command(list(argv))
    config.unreached.extend(parser.reach.finish())
