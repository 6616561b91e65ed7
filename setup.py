"""The one compiled module, greatgramma/_munch.c; optional: without a C compiler the package installs
and runs its numpy loops instead (greatgramma/munch.py)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("greatgramma._munch", ["greatgramma/_munch.c"], optional=True, extra_compile_args=["-O2"])])
