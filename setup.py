"""The package's C extensions: the string-sharing walker (client_cache/sharing.py) and
the work queue's core operations (client_cache/workqueue/queue.py); everything else is in
pyproject.toml. Both are optional: where no C compiler is found the package installs
without them, objects keep their own strings and the work queue runs its Python code."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("client_cache._sharing",
              ["client_cache/_sharing.c", "client_cache/_shapes.c", "client_cache/_listscan.c",
               "client_cache/_decode.c", "client_cache/_values.c",
               "client_cache/_protobuf.c"],
              depends=["client_cache/_shapes.h", "client_cache/_listscan.h",
                       "client_cache/_decode.h", "client_cache/_sharing.h",
                       "client_cache/_values.h", "client_cache/_protobuf.h"], optional=True),
    Extension("client_cache._workqueue", ["client_cache/_workqueue.c"], optional=True),
])
