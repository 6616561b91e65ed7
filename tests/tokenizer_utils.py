"""Test helpers for walking a text token by token (re-exported from the library)."""

from greatgramma.tokenize import encode_exact, load_tokenizer

__all__ = ["encode_exact", "load_tokenizer"]
