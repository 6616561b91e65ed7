"""The three places vLLM 0.33.0 names its structured-output backends, each taught the name ``"greatgramma"``.

1. ``StructuredOutputsConfig.backend`` is a ``Literal`` checked by pydantic (and turned into the
   CLI's choices): the literal gains the name and the dataclass is rebuilt (with VllmConfig,
   which holds it); its validator, which
   allows ``disable_any_whitespace`` only for xgrammar and guidance, passes greatgramma through
   (the backend honours both ``disable_*`` options).
2. ``SamplingParams._validate_structured_outputs`` (the API server, before a request is queued)
   picks a backend per request: with greatgramma configured it builds the request's grammar, so
   a schema or pattern greatgramma refuses is a 400 naming the cause, and sets ``_backend``.
3. ``StructuredOutputManager.grammar_init`` (the engine core) creates the backend on the first
   request: for greatgramma it is created here before vLLM's dispatch, which then finds it set.

Every anchor is checked before anything is changed; a missing one raises VllmVersionError.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic.dataclasses import rebuild_dataclass
from vllm.config import StructuredOutputsConfig, VllmConfig
from vllm.config import structured_outputs as config_module
from vllm.exceptions import VLLMValidationError
from vllm.sampling_params import SamplingParams
from vllm.v1.structured_output import StructuredOutputManager
from vllm.v1.structured_output.backend_types import StructuredOutputBackend, StructuredOutputGrammar
from vllm.v1.structured_output.request import get_structured_output_key

from ...errors import GreatGrammaError
from . import BACKEND_NAME, VllmVersionError
from .backend import GreatGrammaBackend, GreatGrammaGrammar, grammar_for_request

__all__ = ["install_patches"]

_VALIDATOR = "_validate_structured_output_config"
_installed = False


def install_patches() -> None:
    """Check the anchors, then patch the three places (once per process)."""
    global _installed
    if _installed:
        return
    check_anchors()
    _extend_config()
    _wrap(SamplingParams, "_validate_structured_outputs", _validate_request)
    _wrap(StructuredOutputManager, "grammar_init", _grammar_init)
    _installed = True


def check_anchors() -> None:
    """VllmVersionError naming what moved, if vLLM's internals are not as this module expects."""
    problems = []
    literal = typing.get_args(config_module.StructuredOutputsBackend)
    if "xgrammar" not in literal:
        problems.append(f"StructuredOutputsBackend is {literal!r}, not a Literal of backend names")
    if _VALIDATOR not in StructuredOutputsConfig.__pydantic_decorators__.model_validators:
        problems.append(f"StructuredOutputsConfig has no model validator {_VALIDATOR}")
    validate = ["self", "model_config", "structured_outputs_config", "tokenizer"]
    _expect_params(problems, SamplingParams, "_validate_structured_outputs", validate)
    _expect_params(problems, StructuredOutputManager, "grammar_init", ["self", "request"])
    compile_params = ["self", "request_type", "grammar_spec", "stop_token_ids"]
    _expect_params(problems, StructuredOutputBackend, "compile_grammar", compile_params)
    for base, ours in ((StructuredOutputBackend, GreatGrammaBackend), (StructuredOutputGrammar, GreatGrammaGrammar)):
        if ours.__abstractmethods__:
            problems.append(f"{base.__name__} has abstract methods {sorted(ours.__abstractmethods__)} we lack")
    if {f.name for f in dataclasses.fields(StructuredOutputBackend)} != {"vllm_config", "tokenizer", "vocab_size"}:
        problems.append("StructuredOutputBackend's fields are no longer (vllm_config, tokenizer, vocab_size)")
    if problems:
        raise VllmVersionError("vLLM's structured-output internals moved: " + "; ".join(problems))


def _expect_params(problems: list[str], owner: type, name: str, expected: list[str]) -> None:
    method = getattr(owner, name, None)
    if method is None:
        problems.append(f"{owner.__name__}.{name} is gone")
    elif list(inspect.signature(method).parameters) != expected:
        problems.append(f"{owner.__name__}.{name}{inspect.signature(method)} no longer takes {expected[1:]}")


def _extend_config() -> None:
    """Add the name to the backend Literal and let the validator pass greatgramma's options."""
    names = typing.get_args(config_module.StructuredOutputsBackend)
    if BACKEND_NAME not in names:
        extended = typing.Literal[(*names, BACKEND_NAME)]  # type: ignore[valid-type]
        config_module.StructuredOutputsBackend = extended  # type: ignore[misc]
        StructuredOutputsConfig.__annotations__["backend"] = extended
        next(f for f in dataclasses.fields(StructuredOutputsConfig) if f.name == "backend").type = extended
    validators = StructuredOutputsConfig.__pydantic_decorators__.model_validators
    original = validators[_VALIDATOR].func

    def validate(self: StructuredOutputsConfig) -> StructuredOutputsConfig:
        return self if self.backend == BACKEND_NAME else original(self)

    validators[_VALIDATOR] = dataclasses.replace(validators[_VALIDATOR], func=validate)
    rebuild_dataclass(StructuredOutputsConfig, force=True)
    rebuild_dataclass(VllmConfig, force=True)  # it holds a copy of the config's schema


def _wrap(owner: type, name: str, replacement: Callable[..., Any]) -> None:
    """``owner.name(*args)`` becomes ``replacement(original, *args)`` (keyword arguments bound to positions)."""
    original = getattr(owner, name)
    signature = inspect.signature(original)

    @functools.wraps(original)
    def method(*args: Any, **kwargs: Any) -> Any:
        return replacement(original, *signature.bind(*args, **kwargs).args)

    setattr(owner, name, method)


def _validate_request(
    original: Callable[..., None], params: SamplingParams, model_config: Any, config: Any, tokenizer: Any
) -> None:
    """SamplingParams._validate_structured_outputs with greatgramma configured: build the request's grammar."""
    request = params.structured_outputs
    if config is None or config.backend != BACKEND_NAME or request is None:
        return original(params, model_config, config, tokenizer)
    if request._backend not in (None, BACKEND_NAME):
        raise VLLMValidationError(
            f"Request-level structured output backend selection is not supported: the request names "
            f"{request._backend!r}, vLLM was started with {BACKEND_NAME!r}"
        )
    if model_config.is_diffusion:
        raise VLLMValidationError("structured outputs are not supported for diffusion language models")
    if tokenizer is None:
        raise VLLMValidationError("structured outputs need a tokenizer: they cannot be used with skip_tokenizer_init")
    kind, spec = get_structured_output_key(request)
    try:
        grammar_for_request(
            kind, spec, whitespace="compact" if config.disable_any_whitespace else "json",
            additional_properties=not config.disable_additional_properties,
        )
    except (GreatGrammaError, ValueError) as exc:  # GrammarError, UnsupportedRequestError, a bad JSON text
        raise VLLMValidationError(f"greatgramma cannot take this {kind.name} request: {exc}") from exc
    request._backend = BACKEND_NAME
    request.__post_init__()


def _grammar_init(original: Callable[..., None], manager: StructuredOutputManager, request: Any) -> None:
    """StructuredOutputManager.grammar_init: create the greatgramma backend before vLLM's dispatch needs it."""
    params = getattr(request, "sampling_params", None)
    wanted = getattr(getattr(params, "structured_outputs", None), "_backend", None)
    if request.structured_output_request is not None and wanted == BACKEND_NAME and manager.backend is None:
        manager.backend = GreatGrammaBackend(
            manager.vllm_config,
            tokenizer=manager.tokenizer,
            vocab_size=manager.vllm_config.model_config.get_vocab_size(),
        )
        manager.backend_name = BACKEND_NAME
    original(manager, request)
