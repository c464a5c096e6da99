pytest_plugins = ["client_cache.testing.pytest_plugin"]
