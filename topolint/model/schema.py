"""Typed models whose pydantic schema is built on first validation, not on import.

A run that only reads (parsers ``build()`` facts, rules are constructed, defaults apply) never
imports pydantic: that import is a quarter of a config-only check. A class is declared as a
pydantic model would be (annotations, ``Field(...)`` defaults, ``model_config``); the first
``Model(**values)``, ``model_validate``, ``model_json_schema`` builds an equivalent pydantic model
(``pydantic_model()``, nested models mapped to theirs) that validates, and the result is copied
back into an instance of the declared class. Errors are pydantic's own ``ValidationError``.

The API is the part of pydantic's that topolint uses: ``model_fields`` (``is_required``,
``get_default``, ``description``, ``annotation``), ``model_construct``, ``model_validate``,
``model_copy``, ``model_dump``, ``model_dump_json``, ``model_json_schema``; equality by value.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
import sys
import types
import typing
from typing import Any

_MISSING = object()
ConfigDict = dict  # pydantic's ConfigDict is a TypedDict: a plain dict of the same keys


class FieldSpec:
    """What ``Field(...)`` declares: a default (or factory) and pydantic's other keywords."""

    def __init__(self, default: Any = _MISSING, *, default_factory=None, **kwargs: Any):
        self.default = default
        self.default_factory = default_factory
        self.kwargs = kwargs


def Field(default: Any = _MISSING, **kwargs: Any) -> Any:  # noqa: N802 - pydantic's name
    return FieldSpec(default, **kwargs)


class FieldInfo:
    """A declared field, as ``model_fields`` gives it (without pydantic)."""

    def __init__(self, name: str, annotation: Any, spec: FieldSpec):
        self.name = name
        self.annotation = annotation
        self.default = spec.default
        self.default_factory = spec.default_factory
        self.description = spec.kwargs.get("description")
        self.spec = spec

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def get_default(self, call_default_factory: bool = False) -> Any:
        if self.default_factory is not None:
            return self.default_factory() if call_default_factory else None
        if self.default is _MISSING:
            return None
        return copy.deepcopy(self.default) if isinstance(self.default, (list, dict, set)) else self.default


class _ClassProperty:
    def __init__(self, getter):
        self.getter = getter

    def __get__(self, instance, owner):
        return self.getter(owner)


def _state(obj) -> dict[str, Any]:
    """The values an instance holds: its ``__dict__``, or its slots' for a class with ``__slots__``
    (model/facts.py Location: the commonest fact, a third of the size without a dict). A slotted
    class that keeps a field in other slots (a ``loc`` as a path and one int, facts.packed_loc)
    names its fields in ``_state_names``; _fill sets them back through their properties."""
    try:
        return obj.__dict__
    except AttributeError:
        cls = type(obj)
        return {name: getattr(obj, name) for name in getattr(cls, "_state_names", cls.__slots__) if hasattr(obj, name)}


def _fill(obj, values: dict[str, Any]) -> None:
    if hasattr(obj, "__dict__"):
        object.__setattr__(obj, "__dict__", values)
    else:
        for name, value in values.items():
            object.__setattr__(obj, name, value)


class Model:
    __slots__ = ()  # subclasses have a __dict__ unless they declare __slots__ (then _field_specs)
    model_config: dict = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = None
        cls._pydantic = None
        cls.model_config = {**getattr(cls.__mro__[1], "model_config", {}), **cls.__dict__.get("model_config", {})}

    # --- declaration -----------------------------------------------------------------------

    @classmethod
    def _declared(cls) -> dict[str, FieldInfo]:
        if cls.__dict__.get("_fields") is None:
            hints = typing.get_type_hints(cls)
            fields: dict[str, FieldInfo] = {}
            for klass in reversed(cls.__mro__):
                for name in getattr(klass, "__annotations__", {}):
                    if name.startswith("_") or name == "model_config" or name not in hints \
                            or typing.get_origin(hints[name]) is typing.ClassVar:
                        continue
                    raw = klass.__dict__.get("_field_specs", {}).get(name, klass.__dict__.get(name, _MISSING))
                    if isinstance(raw, types.MemberDescriptorType):  # a slot without a default
                        raw = _MISSING
                    spec = raw if isinstance(raw, FieldSpec) else FieldSpec(raw)
                    fields[name] = FieldInfo(name, hints[name], spec)
            cls._fields = fields
        return cls._fields

    model_fields = _ClassProperty(lambda cls: cls._declared())

    # --- without validation ------------------------------------------------------------------

    @classmethod
    def model_construct(cls, **values: Any):
        obj = cls.__new__(cls)
        data = {name: info.get_default(call_default_factory=True)
                for name, info in cls._declared().items() if name not in values and not info.is_required()}
        data.update(values)
        _fill(obj, data)
        return obj

    @classmethod
    def model_validate_plain(cls, values: dict[str, Any]):
        """An instance of ``values`` where pydantic would take them as they are, without building its
        model (a quarter of a second): every value is of exactly the type its field declares (bool,
        int, float, str), with no constraint on the field nor a config that transforms values, and
        every required field is given. None otherwise: then ``cls(**values)`` validates (an int
        for a float field is converted, a constraint checked, an error worded by pydantic)."""
        if set(cls.model_config) - {"extra", "defer_build", "frozen"}:
            return None
        fields = cls._declared()
        for name, value in values.items():
            info = fields.get(name)
            if info is None or info.annotation not in (bool, int, float, str) or type(value) is not info.annotation \
                    or set(info.spec.kwargs) - {"description", "title"}:
                return None
        if any(info.is_required() and name not in values for name, info in fields.items()):
            return None
        return cls.model_construct(**values)

    # --- with validation: the pydantic model, built once ---------------------------------------

    @classmethod
    def pydantic_model(cls):
        if cls.__dict__.get("_pydantic") is None:
            import pydantic

            definitions = {}
            for name, info in cls._declared().items():
                kwargs = dict(info.spec.kwargs)
                if info.default_factory is not None:
                    kwargs["default_factory"] = info.default_factory
                elif info.default is not _MISSING:
                    kwargs["default"] = info.default
                definitions[name] = (_to_pydantic_type(info.annotation), pydantic.Field(**kwargs))
            config = {k: v for k, v in cls.model_config.items() if k != "defer_build"}
            shadow = pydantic.create_model(cls.__name__, __config__=pydantic.ConfigDict(**config),
                                           __doc__=cls.__doc__, __module__=cls.__module__, **definitions)
            shadow._declared_model = cls
            cls._pydantic = shadow
        return cls._pydantic

    def __init__(self, **values: Any):
        validated = type(self).pydantic_model()(**{k: _as_pydantic(v) for k, v in values.items()})
        _fill(self, _state(_from_pydantic(validated)))

    @classmethod
    def model_validate(cls, obj: Any):
        if isinstance(obj, cls):
            obj = obj.model_dump()
        return _from_pydantic(cls.pydantic_model().model_validate(_as_pydantic(obj)))

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict:
        return cls.pydantic_model().model_json_schema(**kwargs)

    # --- instances ---------------------------------------------------------------------------

    def model_dump(self, **kwargs: Any) -> dict:
        if kwargs:
            return self._as_pydantic().model_dump(**kwargs)
        state = _state(self)
        return {name: _dump(state[name]) for name in type(self)._declared() if name in state}

    def model_dump_json(self, **kwargs: Any) -> str:
        return self._as_pydantic().model_dump_json(**kwargs)

    def _as_pydantic(self):
        return type(self).pydantic_model().model_construct(**{k: _as_pydantic(v) for k, v in _state(self).items()
                                                              if k in type(self)._declared()})

    def model_copy(self, update: dict | None = None, deep: bool = False):
        obj = type(self).__new__(type(self))
        data = copy.deepcopy(_state(self)) if deep else dict(_state(self))
        data.update(update or {})
        _fill(obj, data)
        return obj

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names = type(self)._declared()
        return {k: v for k, v in _state(self).items() if k in names} == \
            {k: v for k, v in _state(other).items() if k in names}

    __hash__ = None  # like a pydantic model that is not frozen

    def __repr__(self) -> str:
        state = _state(self)
        shown = ", ".join(f"{name}={state[name]!r}" for name in type(self)._declared() if name in state)
        return f"{type(self).__name__}({shown})"


def _to_pydantic_type(annotation: Any) -> Any:
    """The annotation with every Model class replaced by its pydantic model."""
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return annotation.pydantic_model()
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if not args or origin is typing.Literal:
        return annotation
    if origin is typing.Annotated:
        return typing.Annotated[(_to_pydantic_type(args[0]), *annotation.__metadata__)]
    mapped = tuple(_to_pydantic_type(a) for a in args)
    if origin is typing.Union:
        return typing.Union[mapped]
    if hasattr(annotation, "copy_with"):  # typing.List[...] and friends
        return annotation.copy_with(mapped)
    if sys.version_info >= (3, 10):
        import types

        if isinstance(annotation, types.UnionType):
            return typing.Union[mapped]
    return origin[mapped if len(mapped) > 1 else mapped[0]]


def _walk(value: Any, convert) -> Any:
    """``value`` with ``convert`` applied to each model in it, through lists, tuples and dicts
    (``convert`` returns _MISSING for what is not a model)."""
    converted = convert(value)
    if converted is not _MISSING:
        return converted
    if isinstance(value, list) or isinstance(value, Sequence) and not isinstance(value, (str, bytes, tuple)):
        return [_walk(v, convert) for v in value]  # a lazy sequence (model/hostlist.py Hosts) as its list
    if isinstance(value, tuple):
        return tuple(_walk(v, convert) for v in value)
    if isinstance(value, dict):
        return {k: _walk(v, convert) for k, v in value.items()}
    return value


def _declared_instance(value: Any) -> Any:
    declared = getattr(type(value), "_declared_model", None)
    if declared is None:
        return _MISSING
    obj = declared.__new__(declared)
    _fill(obj, {k: _from_pydantic(v) for k, v in value.__dict__.items()})
    return obj


def _from_pydantic(value: Any) -> Any:
    return _walk(value, _declared_instance)


def _as_pydantic(value: Any) -> Any:
    return _walk(value, lambda v: v._as_pydantic() if isinstance(v, Model) else _MISSING)


def _dump(value: Any) -> Any:
    return _walk(value, lambda v: v.model_dump() if isinstance(v, Model) else _MISSING)
