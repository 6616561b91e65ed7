"""The vLLM backend (greatgramma.integrations.vllm) against the real vllm==0.33.0, on the CPU, with Llama-3's tokenizer.

Every mask the backend writes is compared with a ``gg.Matcher`` compiled apart from it. The
vLLM objects are real (ModelConfig from a config.json with no weights, VllmConfig,
StructuredOutputManager, Request, SamplingParams); nothing is stubbed. vllm is not in the core
test environment: these tests skip there, and run in their own venv
(``bash eval/serving/setup_vllm.sh``, then the command it prints).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tokenizer and config come from a temp folder
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from helpers import require_tokenizer  # noqa: E402

import greatgramma as gg  # noqa: E402
from greatgramma.matcher import RollbackError  # noqa: E402

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
NO_VLLM = "vllm is not installed: run these in the vllm venv (bash eval/serving/setup_vllm.sh)"
needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason=NO_VLLM)

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
LARK = 'start: stmt+\nstmt: NAME "=" NUMBER ";"\nNAME: /[a-z]+/\nNUMBER: /[0-9]+/\n%ignore " "\n'
# (request kind, vLLM's grammar_spec, an output the grammar accepts)
REQUESTS = {
    "json": ("JSON", json.dumps(SCHEMA), '{"name": "Ada", "age": 36}'),
    "json_object": ("JSON_OBJECT", "", '{"a": [1, 2.5, null], "b": {"c": true}}'),
    "regex": ("REGEX", r"\d{3}-[a-z]+", "123-abc"),
    "choice": ("CHOICE", json.dumps(["yes", "no", "maybe"]), "maybe"),
    "grammar": ("GRAMMAR", LARK, "x = 1; yy = 22;"),
}
NUM_SPECULATIVE_TOKENS = 3


def test_import_does_not_import_vllm() -> None:
    """The core suite runs without vllm: importing greatgramma and the adapter package never imports it."""
    code = "import sys, greatgramma, greatgramma.integrations.vllm; assert 'vllm' not in sys.modules, 'vllm imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


@pytest.mark.skipif(HAVE_VLLM, reason="checks the error raised where vllm is absent")
def test_without_vllm_the_plugin_says_so() -> None:
    from greatgramma.integrations.vllm import VllmVersionError, check_vllm_version

    with pytest.raises(VllmVersionError, match="vLLM is not installed"):
        check_vllm_version()


# ------------------------------------------------------------------ real vLLM objects


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Llama-3 tokenizer files and a tiny Llama config.json: enough for vLLM's ModelConfig (no weights)."""
    import gzip
    import shutil

    src = require_tokenizer("llama3")
    d = tmp_path_factory.mktemp("llama3-model")
    (d / "tokenizer.json").write_bytes(gzip.decompress((src / "tokenizer.json.gz").read_bytes()))
    shutil.copy(src / "tokenizer_config.json", d / "tokenizer_config.json")
    config = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 128256, "hidden_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 128,
        "max_position_embeddings": 256, "bos_token_id": 128000, "eos_token_id": 128001, "torch_dtype": "float32",
    }
    (d / "config.json").write_text(json.dumps(config))
    return d


@pytest.fixture(scope="module")
def vllm_env(model_dir: Path):
    """vLLM with the plugins loaded as its processes load them, and the model's config."""
    pytest.importorskip("vllm", reason=NO_VLLM)
    from vllm.config import ModelConfig
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # runs greatgramma's entry point, as in every vLLM process
    return ModelConfig(model=str(model_dir), tokenizer=str(model_dir), dtype="float32", max_model_len=256)


def make_vllm_config(model_config, *, speculative: bool = False, **structured):
    from vllm.config import DeviceConfig, ParallelConfig, SpeculativeConfig, StructuredOutputsConfig, VllmConfig

    spec = None
    if speculative:
        spec = SpeculativeConfig(
            method="ngram", num_speculative_tokens=NUM_SPECULATIVE_TOKENS, prompt_lookup_max=3, prompt_lookup_min=1,
            target_model_config=model_config, target_parallel_config=ParallelConfig(),
        )
    return VllmConfig(
        model_config=model_config, speculative_config=spec, device_config=DeviceConfig(device="cpu"),
        structured_outputs_config=StructuredOutputsConfig(backend="greatgramma", **structured),
    )


@pytest.fixture(scope="module")
def tokenizer(vllm_env):
    from vllm.tokenizers import cached_tokenizer_from_config

    return cached_tokenizer_from_config(model_config=vllm_env)


def make_backend(vllm_env, tokenizer, **options):
    from greatgramma.integrations.vllm.backend import GreatGrammaBackend

    config = make_vllm_config(vllm_env, **options)
    return GreatGrammaBackend(config, tokenizer=tokenizer, vocab_size=vllm_env.get_vocab_size())


@pytest.fixture(scope="module")
def backend(vllm_env, tokenizer):
    b = make_backend(vllm_env, tokenizer, speculative=True)
    yield b
    b.destroy()


@pytest.fixture(scope="module")
def reference_vocab(model_dir: Path, vllm_env) -> gg.Vocabulary:
    return gg.Vocabulary.from_file(model_dir, vocab_size=vllm_env.get_vocab_size())


def kind_of(name: str):
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    return StructuredOutputOptions[name]


def reference_matcher(kind: str, spec: str, vocab: gg.Vocabulary, **options) -> gg.Matcher:
    """A Matcher compiled apart from the backend (no cache, its own Vocabulary read from the file)."""
    from greatgramma.integrations.vllm.backend import grammar_for_request

    return gg.Matcher(gg.compile(grammar_for_request(kind_of(kind), spec, **options), vocab))


def encode(tokenizer, text: str) -> list[int]:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text
    return ids


def assert_row(bitmask, row: int, reference: gg.Matcher) -> None:
    np.testing.assert_array_equal(np.asarray(bitmask[row]), reference.next_token_mask())


# ------------------------------------------------------------------ install and selection


@needs_vllm
def test_plugin_adds_the_backend_name(vllm_env) -> None:
    from vllm.config import StructuredOutputsConfig
    from vllm.engine.arg_utils import get_kwargs

    from greatgramma.integrations.vllm import SUPPORTED_VLLM_VERSIONS, check_vllm_version

    assert check_vllm_version() in SUPPORTED_VLLM_VERSIONS
    choices = get_kwargs(StructuredOutputsConfig)["backend"]["choices"]  # of --structured-outputs-config.backend
    assert "greatgramma" in choices
    config = StructuredOutputsConfig(
        backend="greatgramma", disable_any_whitespace=True, disable_additional_properties=True
    )
    assert config.backend == "greatgramma"
    with pytest.raises(ValueError, match="disable_any_whitespace"):
        StructuredOutputsConfig(backend="outlines", disable_any_whitespace=True)  # vLLM's own check still holds
    with pytest.raises(ValueError):
        StructuredOutputsConfig(backend="greatgrama")


@needs_vllm
def test_vllm_internals_are_where_the_patches_expect(vllm_env) -> None:
    """Breaks when vLLM's structured-output internals move (check_anchors names what moved)."""
    from greatgramma.integrations.vllm.patches import check_anchors

    check_anchors()


@needs_vllm
def test_another_vllm_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    import greatgramma.integrations.vllm as plugin

    monkeypatch.setattr(metadata, "version", lambda name: "0.34.0")
    with pytest.raises(plugin.VllmVersionError, match=r"supports vllm 0\.33\.0, found vllm 0\.34\.0.*VLLM_PLUGINS"):
        plugin.register()


@needs_vllm
def test_vocabulary_is_the_tokenizer_file(backend, reference_vocab) -> None:
    assert backend.vocab.fingerprint() == reference_vocab.fingerprint()
    assert backend.vocab.vocab_size == backend.vocab_size == 128256


# ------------------------------------------------------------------ the backend against gg.Matcher


@needs_vllm
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_walk_matches_matcher(name: str, backend, tokenizer, reference_vocab) -> None:
    """Compile each request kind, walk an accepted output to EOS: every fill_bitmask equals gg.Matcher's mask."""
    kind, spec, text = REQUESTS[name]
    grammar = backend.compile_grammar(kind_of(kind), spec)
    reference = reference_matcher(kind, spec, reference_vocab)
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.shape == (4, (128256 + 31) // 32)
    eos = reference_vocab.eos_token_ids[0]
    for token in [*encode(tokenizer, text), eos]:
        assert not grammar.is_terminated()
        grammar.fill_bitmask(bitmask, 2)
        assert_row(bitmask, 2, reference)
        assert (bitmask[2, token >> 5].item() >> (token & 31)) & 1, f"token {token} refused in {text!r}"
        assert grammar.validate_tokens([token]) == [token]
        assert grammar.accept_tokens("req-0", [token])
        assert reference.accept_token(token)
    assert grammar.is_terminated()
    assert grammar.accept_tokens("req-0", [eos])  # tokens after termination are ignored, as xgrammar's
    grammar.reset()
    assert not grammar.is_terminated() and grammar.validate_tokens([eos]) == []


@needs_vllm
def test_validate_accept_rollback(backend, tokenizer, reference_vocab) -> None:
    kind, spec, text = REQUESTS["json"]
    grammar = backend.compile_grammar(kind_of(kind), spec)
    reference = reference_matcher(kind, spec, reference_vocab)
    ids = encode(tokenizer, text)
    bad = encode(tokenizer, "}")
    assert grammar.validate_tokens(ids[:3] + bad + ids[3:]) == ids[:3]  # {"name": then }
    assert grammar.validate_tokens(ids) == ids and grammar.matcher.num_rollback_tokens == 0
    assert grammar.accept_tokens("req-1", ids[:2])
    reference.accept_tokens(ids[:2])
    bitmask = backend.allocate_token_bitmask(1)
    assert grammar.accept_tokens("req-1", ids[2 : 2 + NUM_SPECULATIVE_TOKENS])
    grammar.rollback(NUM_SPECULATIVE_TOKENS)  # what vLLM does after filling the speculative rows
    grammar.fill_bitmask(bitmask, 0)
    assert_row(bitmask, 0, reference)
    assert not grammar.accept_tokens("req-1", bad)
    with pytest.raises(RollbackError):
        grammar.rollback(NUM_SPECULATIVE_TOKENS + 1)  # history is bounded by num_speculative_tokens


@needs_vllm
def test_stop_token_ids_end_the_output_where_eos_may(backend, tokenizer, reference_vocab) -> None:
    """vLLM passes the request's EOS and stop ids: each is allowed exactly where EOS is, and ends the output."""
    kind, spec, text = REQUESTS["choice"]
    eot, bang = 128009, encode(tokenizer, "!")[0]  # <|eot_id|>, and a stop id that is a text token
    grammar = backend.compile_grammar(kind_of(kind), spec, stop_token_ids={eot, bang})
    bitmask = backend.allocate_token_bitmask(1)

    def allowed(token: int) -> bool:
        grammar.fill_bitmask(bitmask, 0)
        return bool((bitmask[0, token >> 5].item() >> (token & 31)) & 1)

    ids = encode(tokenizer, "no")
    assert not allowed(eot) and not allowed(bang)
    assert grammar.validate_tokens([bang]) == []
    assert grammar.accept_tokens("req-2", ids)
    assert allowed(eot) and allowed(bang) and not allowed(128001)  # 128001 is the vocabulary's EOS, not a stop here
    assert grammar.validate_tokens([128001]) == []
    assert grammar.validate_tokens([bang, eot]) == [bang]
    assert grammar.accept_tokens("req-2", [bang]) and grammar.is_terminated()
    grammar.rollback(1)
    assert not grammar.is_terminated() and grammar.accept_tokens("req-2", [eot]) and grammar.is_terminated()


@needs_vllm
def test_disable_any_whitespace_and_additional_properties(vllm_env, tokenizer, reference_vocab) -> None:
    compact = make_backend(vllm_env, tokenizer, disable_any_whitespace=True, disable_additional_properties=True)
    try:
        kind, spec, _ = REQUESTS["json"]
        grammar = compact.compile_grammar(kind_of(kind), spec)
        spaced, tight = encode(tokenizer, '{"name": "Ada"'), encode(tokenizer, '{"name":"Ada","age":36}')
        assert len(grammar.validate_tokens(spaced)) < len(spaced)
        assert grammar.validate_tokens(tight) == tight
        extra = encode(tokenizer, '{"name":"Ada","age":36,"x":1}')
        assert len(grammar.validate_tokens(extra)) < len(extra)
        reference = reference_matcher(kind, spec, reference_vocab, whitespace="compact", additional_properties=False)
        bitmask = compact.allocate_token_bitmask(1)
        for token in tight:
            grammar.fill_bitmask(bitmask, 0)
            assert_row(bitmask, 0, reference)
            assert grammar.accept_tokens("req-3", [token]) and reference.accept_token(token)
    finally:
        compact.destroy()


@needs_vllm
def test_unsupported_requests_name_their_kind(backend) -> None:
    from greatgramma.integrations.vllm.backend import UnsupportedRequestError

    with pytest.raises(UnsupportedRequestError, match="STRUCTURAL_TAG"):
        backend.compile_grammar(kind_of("STRUCTURAL_TAG"), '{"type": "structural_tag"}')
    with pytest.raises(UnsupportedRequestError, match="EBNF/GBNF"):
        backend.compile_grammar(kind_of("GRAMMAR"), 'root ::= "yes" | "no"')
    with pytest.raises(gg.GrammarError):
        backend.compile_grammar(kind_of("REGEX"), r"(?<=a)b")


# ------------------------------------------------------------------ through vLLM's own request path


def structured_params(**constraint):
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams

    return SamplingParams(structured_outputs=StructuredOutputsParams(**constraint), max_tokens=16)


@needs_vllm
def test_request_validation_selects_greatgramma(vllm_env, tokenizer) -> None:
    from vllm.exceptions import VLLMValidationError

    config = make_vllm_config(vllm_env).structured_outputs_config
    params = structured_params(json=SCHEMA)
    params._validate_structured_outputs(vllm_env, config, tokenizer)
    assert params.structured_outputs._backend == "greatgramma"
    for constraint, message in (
        ({"regex": r"(?<=a)b"}, "REGEX request"),
        ({"structural_tag": '{"type": "structural_tag"}'}, "STRUCTURAL_TAG"),
        ({"json": {"type": "object", "not": {}}}, "not"),
    ):
        with pytest.raises(VLLMValidationError, match=message):
            structured_params(**constraint)._validate_structured_outputs(vllm_env, config, tokenizer)


@needs_vllm
def test_manager_fills_speculative_rows(vllm_env, tokenizer, reference_vocab) -> None:
    """vLLM's StructuredOutputManager creates the backend for the request, fills one row per draft
    token plus the bonus row, rolls back, then accepts the scheduler's tokens."""
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager

    from greatgramma.integrations.vllm.backend import GreatGrammaBackend, GreatGrammaGrammar

    vllm_config = make_vllm_config(vllm_env, speculative=True)
    manager = StructuredOutputManager(vllm_config)
    kind, spec, text = REQUESTS["json"]
    params = structured_params(json=SCHEMA)
    params._validate_structured_outputs(vllm_env, vllm_config.structured_outputs_config, tokenizer)
    request = Request("req-4", [128000, 1, 2], params, None)
    manager.grammar_init(request)
    assert isinstance(manager.backend, GreatGrammaBackend) and manager.backend_name == "greatgramma"
    deadline = time.monotonic() + 60
    while not request.structured_output_request.is_grammar_ready and time.monotonic() < deadline:
        time.sleep(0.05)  # vLLM compiles on its own thread; the scheduler polls like this
    grammar = request.structured_output_request.grammar
    assert isinstance(grammar, GreatGrammaGrammar)

    reference = reference_matcher(kind, spec, reference_vocab)
    ids = encode(tokenizer, text)
    drafts = ids[:NUM_SPECULATIVE_TOKENS]
    rows = manager.grammar_bitmask({"req-4": request}, ["req-4"], {"req-4": drafts})
    assert rows.shape[0] == NUM_SPECULATIVE_TOKENS + 1
    for i in range(NUM_SPECULATIVE_TOKENS + 1):
        assert_row(rows, i, reference)
        if i < len(drafts):
            reference.accept_token(drafts[i])
    assert grammar.matcher.num_rollback_tokens == 0  # the manager rolled the drafts back
    assert manager.accept_tokens(request, ids[:2])
    assert grammar.matcher.num_rollback_tokens == 2
    manager.clear_backend()
