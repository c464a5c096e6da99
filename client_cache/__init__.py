"""client_cache: a faithful, threaded Python port of client-go's ``tools/cache``.

This package re-exports the public API of Go's package ``cache``; the selector languages
live in :mod:`client_cache.labels` and :mod:`client_cache.fields`, object metadata access
in :mod:`client_cache.meta`, and exceptions in :mod:`client_cache.errors`.
"""

from client_cache.errors import (
    ApiStatusError,
    ClientCacheError,
    FIFOClosedError,
    HeapClosedError,
    ObjectNotFoundError,
    RequeueError,
    ZeroLengthDeltasError,
    IndexerConflictError,
    IndexFuncError,
    IndexNotFoundError,
    InvalidKeyError,
    KeyFuncError,
    MetaAccessError,
    SelectorParseError,
)
from client_cache.index import (
    NAMESPACE_INDEX,
    Index,
    Indexer,
    Indexers,
    IndexFunc,
    Indices,
    index_func_to_key_func_adapter,
    meta_namespace_index_func,
)
from client_cache.listers import (
    AppendFunc,
    GenericLister,
    GenericNamespaceLister,
    list_all,
    list_all_by_namespace,
    new_generic_lister,
)
from client_cache.object_names import (
    ObjectName,
    deletion_handling_object_to_name,
    meta_object_to_name,
    namespaced_name_as_object_name,
    new_object_name,
    object_to_name,
    parse_object_name,
)
from client_cache.store import (
    DeletedFinalStateUnknown,
    ExplicitKey,
    KeyFunc,
    KeyGetter,
    KeyLister,
    KeyListerGetter,
    Store,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from client_cache.thread_safe_store import (
    ThreadSafeMap,
    ThreadSafeStore,
    new_thread_safe_store,
)

__version__ = "0.1.0"

__all__ = [
    "NAMESPACE_INDEX",
    "ApiStatusError",
    "FIFOClosedError",
    "HeapClosedError",
    "ObjectNotFoundError",
    "RequeueError",
    "ZeroLengthDeltasError",
    "AppendFunc",
    "ClientCacheError",
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "GenericLister",
    "GenericNamespaceLister",
    "Index",
    "IndexFunc",
    "IndexFuncError",
    "IndexNotFoundError",
    "Indexer",
    "IndexerConflictError",
    "Indexers",
    "Indices",
    "InvalidKeyError",
    "KeyFunc",
    "KeyFuncError",
    "KeyGetter",
    "KeyLister",
    "KeyListerGetter",
    "MetaAccessError",
    "ObjectName",
    "SelectorParseError",
    "Store",
    "ThreadSafeMap",
    "ThreadSafeStore",
    "deletion_handling_meta_namespace_key_func",
    "deletion_handling_object_to_name",
    "index_func_to_key_func_adapter",
    "list_all",
    "list_all_by_namespace",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "meta_object_to_name",
    "namespaced_name_as_object_name",
    "new_generic_lister",
    "new_indexer",
    "new_object_name",
    "new_store",
    "new_thread_safe_store",
    "object_to_name",
    "parse_object_name",
    "split_meta_namespace_key",
]
