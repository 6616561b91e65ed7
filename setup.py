"""The one compiled module, greatgramma/_native.c; optional: without a C compiler the package installs
and runs its numpy loops instead (greatgramma/native.py)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("greatgramma._native", ["greatgramma/_native.c"], optional=True, extra_compile_args=["-O2"])])
