"""Which settings of a shell script reach the processes it launches.

bash passes a child process its *exported* variables only: ``NCCL_IB_HCA=mlx5_0`` alone sets a
shell variable that ``srun`` or ``python`` never sees, unless the name is exported before or
after (``export NCCL_IB_HCA``, ``declare -x``), ``set -a`` is on, or the assignment prefixes the
command (``NCCL_IB_HCA=mlx5_0 python``). And some launchers pass on none of the exported ones:
``srun --export=NONE`` (only ``SLURM_*``), ``srun --export=A,B`` without ``ALL`` (only those),
``docker run`` (only ``-e``/``--env`` and ``--env-file``), ``env -i``.

The parser tells this tracker, statement by statement in the order bash runs them, what is
assigned, exported, referenced and launched; ``finish`` gives the settings no launch sees.
A later reference to a variable (``-x NCCL_IB_HCA=$NCCL_IB_HCA``, ``echo $NCCL_IB_HCA``) may pass
its value on, so it clears the variable: a miss rather than a false alarm. Launches and settings
on different branches (``if``/``else``) are not on one path and do not meet. Every setting and
launch is looked at once per scope it waits in, so the work is linear in the script for
straight-line code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topolint.model.config import DROPPED, NOT_EXPORTED, EnvSetting, Unreached, on_one_path
from topolint.model.facts import Location


@dataclass(slots=True)
class _Waiting:
    setting: EnvSetting
    why: str  # NOT_EXPORTED or DROPPED, should no launch see it
    launch: tuple[Location, str] | None = None  # the first launch after it (unexported) or dropping it
    done: bool = False  # exported later, referenced, or reached by a launch that passes it
    standalone: bool = False


@dataclass
class Reach:
    exported: set[str] = field(default_factory=set)  # names bash exports from here on
    allexport: bool = False  # set -a
    unexported: dict[str, list[_Waiting]] = field(default_factory=dict)  # name -> assignments not exported
    live: dict[str, list[_Waiting]] = field(default_factory=dict)  # scope -> exported, no launch passed them yet
    idle: dict[str, list[_Waiting]] = field(default_factory=dict)  # scope -> unexported, no launch after yet
    found: list[_Waiting] = field(default_factory=list)
    compact_at: int = 64  # len(found) at which the done ones are dropped from it (_found)

    def exports(self, name: str) -> bool:
        return self.allexport or name in self.exported

    def assigned(self, setting: EnvSetting, standalone: bool = False) -> None:
        """A plain assignment bash does not export (``standalone``: the whole statement)."""
        waiting = _Waiting(setting, NOT_EXPORTED, standalone=standalone)
        self.unexported.setdefault(setting.name, []).append(waiting)
        self.idle.setdefault(setting.scope, []).append(waiting)
        self._found(waiting)

    def exported_setting(self, setting: EnvSetting) -> None:
        """A setting in the environment from here on (``export A=1``, an assignment to an exported name)."""
        self.exported.add(setting.name)
        waiting = _Waiting(setting, DROPPED)
        self.live.setdefault(setting.scope, []).append(waiting)
        self._found(waiting)

    def _found(self, waiting: _Waiting) -> None:
        """Keep ``waiting`` for ``finish``; a done one is never reported, so those are dropped
        whenever the list doubles (linear in all, and not every setting held to the end)."""
        self.found.append(waiting)
        if len(self.found) >= self.compact_at:
            self.found = [w for w in self.found if not w.done]
            self.compact_at = max(64, 2 * len(self.found))

    def export(self, name: str) -> list[EnvSetting]:
        """``export NAME``: the earlier assignments of NAME become settings (returned)."""
        self.exported.add(name)
        promoted = [w for w in self.unexported.pop(name, []) if not w.done]
        for waiting in promoted:
            waiting.done = True
        for waiting in promoted:
            self.exported_setting(waiting.setting)
        return [w.setting for w in promoted]

    def referenced(self, name: str) -> None:
        for waiting in self.unexported.pop(name, []):
            waiting.done = True

    def launch(self, at: Location, command: str, scope: str, passes: set[str] | None, drops: str = "") -> None:
        """A process starts in ``scope``; ``passes``: the exported names it hands on (None: all),
        ``drops`` says which."""
        for waiting_scope in [s for s in self.idle if on_one_path(s, scope)]:
            for waiting in self.idle.pop(waiting_scope):
                if not waiting.done and waiting.launch is None:
                    waiting.launch = (at, command)
        for waiting_scope in [s for s in self.live if on_one_path(s, scope)]:
            kept = []
            for waiting in self.live[waiting_scope]:
                if passes is None or waiting.setting.name in passes:
                    waiting.done = True
                else:
                    waiting.launch = waiting.launch or (at, f"{command} {drops}".strip())
                    kept.append(waiting)
            if kept:
                self.live[waiting_scope] = kept
            else:
                del self.live[waiting_scope]  # scopes with nothing waiting are not looked at again

    def finish(self) -> list[Unreached]:
        out = []
        for waiting in self.found:
            if waiting.done or waiting.launch is None:
                continue
            out.append(Unreached(waiting.setting, waiting.why, *waiting.launch, standalone=waiting.standalone))
        return out
