"""Every profile by name: the built-in ones (rules/profiles/*.toml, in the wheel
topolint/_rules/profiles/) and a site's (``profile-dirs`` in the configuration), with
``extends`` resolved.

Built-in profiles are read without validation (start-up stays fast: the project's tests validate
every one, tests/test_profiles.py); a site's are validated as they load (``load_profile_file``),
like site rules: a bad file is a usage error naming the file and the key.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from topolint.profiles.model import Profile, ProfileError, ProfileValue, check_profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_EXTENDS = 8


def builtin_profiles_dir() -> Path:
    from topolint.engine.rule import builtin_rules_dir

    return builtin_rules_dir() / "profiles"


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot be read: {exc}") from None
    raw["path"] = str(path)
    return raw


def _constructed(raw: dict) -> Profile:
    values = {name: ProfileValue.model_construct(**value) for name, value in raw.get("values", {}).items()}
    return Profile.model_construct(**{**raw, "values": values})


def load_profile_file(path: Path) -> Profile:
    """One profile file, validated: ProfileError names the file and the key."""
    from pydantic import ValidationError

    raw = _read(path)
    try:
        profile = Profile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(file)'}: {e['msg']}" for e in exc.errors()[:5])
        raise ProfileError(f"{path}: {problems}") from None
    check_profile(profile, str(path))
    if path.stem != profile.name:
        raise ProfileError(f"{path}: name: {profile.name!r} differs from the file's name {path.stem!r}")
    return profile


class Library:
    """Profiles by name, each with the values it inherits (``resolved``)."""

    def __init__(self, profiles: dict[str, Profile]):
        self.raw = profiles
        self._resolved: dict[str, Profile] = {}

    def names(self) -> list[str]:
        return sorted(self.raw)

    def get(self, name: str) -> Profile | None:
        if name not in self.raw:
            return None
        found = self._resolved.get(name)
        if found is None:
            found = self._resolved[name] = self._resolve(name, ())
        return found

    def _resolve(self, name: str, chain: tuple[str, ...]) -> Profile:
        profile = self.raw[name]
        if profile.extends is None:
            return profile
        if profile.extends in chain or len(chain) >= MAX_EXTENDS:
            raise ProfileError(f"{profile.path}: extends: {profile.extends} extends {name} again (a cycle)")
        if profile.extends not in self.raw:
            raise ProfileError(f"{profile.path}: extends: no profile named {profile.extends!r}")
        base = self._resolve(profile.extends, (*chain, name))
        values = {**base.values, **profile.values}
        sources = {**base.sources, **profile.sources}
        unknown = {k: v for k, v in {**base.unknown, **profile.unknown}.items() if k not in values}
        return profile.model_copy(update={"values": values, "sources": sources, "unknown": unknown})

    def matchable(self) -> list[Profile]:
        """The profiles a node can be matched to by what it reveals, by name."""
        return [self.get(name) for name in self.names() if self.raw[name].match]


def _read_dir(folder: Path, validate: bool) -> dict[str, Profile]:
    found = {}
    for path in sorted(folder.glob("*.toml")):
        profile = load_profile_file(path) if validate else _constructed(_read(path))
        found[profile.name] = profile
    return found


@lru_cache(maxsize=1)
def _builtin() -> dict[str, Profile]:
    return _read_dir(builtin_profiles_dir(), validate=False)


def library(extra_dirs: tuple[Path, ...] = (), validate_builtin: bool = False) -> Library:
    """The built-in profiles and those of ``extra_dirs`` (validated); a site profile may not reuse a
    built-in name (ProfileError)."""
    profiles = dict(_read_dir(builtin_profiles_dir(), validate=True) if validate_builtin else _builtin())
    for folder in extra_dirs:
        for name, profile in _read_dir(folder, validate=True).items():
            if name in profiles:
                raise ProfileError(f"{profile.path}: profile {name} is already defined in {profiles[name].path}")
            profiles[name] = profile
    found = Library(profiles)
    if extra_dirs or validate_builtin:
        for name in found.names():  # extends resolved, match keys stated (inherited or own)
            resolved = found.get(name)
            for key in [*resolved.match, *resolved.also]:
                if key not in resolved.values:
                    raise ProfileError(f"{resolved.path}: match: {key} is not one of its values")
    return found
