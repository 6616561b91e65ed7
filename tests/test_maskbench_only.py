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


def test_instances_whose_label_the_serialization_loses_are_left_out(tmp_path, vocabularies, hf_tokenizers) -> None:
    """``12345.0`` against ``"type": "integer"`` is invalid, but it is written ``12345``, which is valid:
    that instance is left out (for every engine); one the serialization keeps stays, whatever its label."""
    import json

    from eval.maskbench import make_cases, same_json

    schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    tests = [{"valid": False, "data": {"id": 12345.0}}, {"valid": True, "data": {"id": 5}},
             {"valid": False, "data": {"id": 1.5}}, {"valid": True, "data": {"id": 2.0, "x": 1}}]  # fmt: skip
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"schema": schema, "tests": tests}), encoding="utf-8")
    cases, texts, left_out = make_cases([path], hf_tokenizers("llama2"), vocabularies("llama2"))
    assert [d["test"] for d in left_out] == [0] and "valid" in left_out[0]["why"]
    assert [t["valid"] for t in cases[0]["tests"]] == [True, False, True] and len(texts[0]) == 3
    assert same_json({"a": [1, 2.5]}, {"a": [1, 2.5]}) and not same_json({"a": 1}, {"a": 1.0}) and not same_json([1], [1, 2])
