"""The package's one C extension, the string-sharing walker (client_cache/sharing.py);
everything else is in pyproject.toml. The extension is optional: where no C compiler is
found the package installs without it, and objects keep their own strings."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("client_cache._sharing", ["client_cache/_sharing.c"],
                             optional=True)])
