"""Adapters to generation libraries; each submodule imports its library only when it is imported."""
