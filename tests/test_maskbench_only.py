"""eval.maskbench --only: the named schema files, in the order given, and a clear exit for a missing one."""

from __future__ import annotations

import pytest

from eval.maskbench import only


def test_only_picks_named_files(tmp_path) -> None:
    for name in ("a.json", "b.json", "c.json"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    assert [p.name for p in only(tmp_path, "c.json, a")] == ["c.json", "a.json"]
    with pytest.raises(SystemExit, match="missing.json"):
        only(tmp_path, "a.json,missing.json")
