"""EnvSetting holds what it cannot derive (issue 20); what it shows is what it was made with."""

from __future__ import annotations

import copy
import pickle

from topolint.model.config import ConfigFile, EnvSetting


def test_derived_fields_read_back_as_made_and_survive_pickling():
    config = ConfigFile(path="a.env", format="envfile")
    made = [
        EnvSetting("NCCL_A", "1", config.loc(3, 1), "file", "envfile", "a.env", raw="NCCL_A=1",
                   value_at=config.loc(3, 8), value_written="1"),
        EnvSetting("NCCL_B", "x", config.loc(4, 2), "file", "envfile", "a.env", raw='NCCL_B = "x"  ',
                   value_at=config.loc(5, 1), value_written='"x"'),
        EnvSetting("NCCL_C", None, config.loc(6, 0), "job", "export", "b.sh", passthrough=True),
    ]
    a, b, c = made
    assert (a.raw, a.value_written, a.value_at) == ("NCCL_A=1", "1", config.loc(3, 8))
    assert (b.raw, b.value_written, b.value_at) == ('NCCL_B = "x"  ', '"x"', config.loc(5, 1))
    assert (c.raw, c.value_written, c.value_at, c.loc) == ("", "", None, config.loc(6, 0))
    kept = pickle.loads(pickle.dumps(made))
    assert kept == made == copy.deepcopy(made)
    assert repr(a).startswith("EnvSetting(name='NCCL_A', value='1', loc=Location(path='a.env', line=3, column=1)")
    a.scope = "service:x"
    assert a != kept[0] and kept[0].scope == "file"


_SLICED_INPUTS = {
    "nccl-conf": "# c\nNCCL_DEBUG=INFO\n  export NCCL_IB_HCA = mlx5_0 \r\nNCCL_X=\nNCCL_BAD\nOTHER=1\nNCCL_Q=\"a b\"\n",
    "deepspeed-env": "NCCL_SOCKET_IFNAME=eth0\nNCCL_ALGO=Ring\n",
    "dockerfile": ("FROM base AS b\nENV NCCL_A=1 NCCL_B=\"x y\" \\\n    # note\n    NCCL_C='q' NCCL_D=${NCCL_D:-2}\n"
                   "ENV NCCL_LEGACY some value\nENV NCCL_E=\"unclosed\nENV \\\n NCCL_F=é\n"),
    "envfile": "NCCL_A=1\nexport NCCL_B='two'\nNCCL_C=\"x\\ny\" # c\nNCCL_D=${NCCL_A}\nNCCL_E\n",
    "python": ("import os\nos.environ['NCCL_P'] = \"1\"\nos.environ.setdefault(\"NCCL_Q\", 'x')\n"
               "os.environ[\"NCCL_R\"] = f\"{y}\"\nos.environ[\"NCCL_S\"] = \"é\"\nos.environ[\"NCCL_T\"] = 2\n"),
}


def test_settings_cut_from_the_text_read_as_plain_ones(monkeypatch):
    from topolint.inputs.source import SourceFile
    from topolint.model import config as model
    from topolint.parsers.registry import parse

    for fmt, text in _SLICED_INPUTS.items():
        sliced = parse(fmt, SourceFile(path="f", text=text)).settings
        assert any(type(s) is model._Sliced for s in sliced), fmt
        with monkeypatch.context() as patch:
            patch.setattr(model._Sliced, "_slice", staticmethod(lambda *args: False))
            plain = parse(fmt, SourceFile(path="f", text=text)).settings
        assert all(type(s) is EnvSetting for s in plain)
        assert [s._fields() for s in sliced] == [s._fields() for s in plain] and sliced == plain, fmt
        assert pickle.loads(pickle.dumps(sliced)) == plain
    setting = sliced[0]
    setting.scope, setting.source = "service:x", "compose-env-file"
    assert (setting.scope, setting.source, setting.name) == ("service:x", "compose-env-file", "NCCL_P")
    setting.value_at = None
    assert type(setting) is EnvSetting and setting.value_at is None and setting.value == "1"
