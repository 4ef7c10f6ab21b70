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
