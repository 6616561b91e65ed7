"""vLLM adapter: greatgramma as a structured-output backend of vLLM's V1 engine, installed by a vLLM plugin.

vLLM has no backend registry: ``StructuredOutputsConfig.backend`` is a fixed set of literals,
request validation and ``StructuredOutputManager.grammar_init`` dispatch on fixed names. So
greatgramma registers ``register`` under vLLM's ``vllm.general_plugins`` entry point (vLLM runs
it in every process: the API server, the engine core, the workers); it checks that the installed
vLLM is the supported version and then adds the name ``"greatgramma"`` in those three places
(:mod:`.patches`). A user selects the backend with
``--structured-outputs-config.backend greatgramma`` or
``LLM(..., structured_outputs_config={"backend": "greatgramma"})``.

Nothing here imports vLLM until ``register`` (or ``install``) is called, so ``import greatgramma``
never does; the backend itself is in :mod:`.backend`.
"""

from __future__ import annotations

from importlib import metadata

from ...errors import GreatGrammaError

__all__ = ["BACKEND_NAME", "SUPPORTED_VLLM_VERSIONS", "VllmVersionError", "check_vllm_version", "install", "register"]

BACKEND_NAME = "greatgramma"
"""The value of ``structured_outputs_config.backend`` that selects greatgramma."""

SUPPORTED_VLLM_VERSIONS = ("0.33.0",)
"""The vLLM versions whose internals :mod:`.patches` was written and tested against."""


class VllmVersionError(GreatGrammaError, RuntimeError):
    """The installed vLLM is not a version the backend supports, or its internals moved."""


def check_vllm_version() -> str:
    """The installed vLLM version, read without importing vLLM; VllmVersionError if it is not supported."""
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        raise VllmVersionError("vLLM is not installed (the greatgramma backend supports vllm==0.33.0)") from None
    if version not in SUPPORTED_VLLM_VERSIONS:
        raise VllmVersionError(
            f"greatgramma's vLLM backend supports vllm {' or '.join(SUPPORTED_VLLM_VERSIONS)}, found vllm {version}: "
            f"it patches vLLM internals that change between releases. Install "
            f"vllm=={SUPPORTED_VLLM_VERSIONS[-1]}, or keep vLLM from loading this plugin with "
            f"VLLM_PLUGINS set to the plugins you want (a list without {BACKEND_NAME!r})."
        )
    return version


def install() -> None:
    """Add the ``"greatgramma"`` backend to the running vLLM (idempotent); VllmVersionError on another version."""
    check_vllm_version()
    from .patches import install_patches

    install_patches()


def register() -> None:
    """The ``vllm.general_plugins`` entry point: vLLM calls it once in each of its processes."""
    install()
