"""Write ``docs/mapping.md``: every public name client_cache exports and its Go counterpart.

Run ``python tools/gen_mapping.py`` after adding an export (``tests/test_docs.py`` fails until
the table covers it). Go names follow the naming rules (``new_delta_fifo`` ->
``NewDeltaFIFO``, ``NAMESPACE_INDEX`` -> ``NamespaceIndex``); ``OVERRIDES`` holds the names
that do not follow them and the names that exist only in this port, by bare name or, where
two modules export different objects of one name, by qualified name
(``client_cache.runtime.Controller``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import client_cache

CLIENT_GO = "k8s.io/client-go"
APIMACHINERY = "k8s.io/apimachinery/pkg"
PACKAGES = {
    "client_cache": f"{CLIENT_GO}/tools/cache",
    "client_cache.codec._wire": "(port only: JSON decoding of wire bodies)",
    "client_cache.util.gc_policy": "(port only: the collector's full passes while caches run)",
    "client_cache.util.features": f"{CLIENT_GO}/features",
    "client_cache.api.sharding": f"{APIMACHINERY}/sharding, k8s.io/apiserver/pkg/sharding",
    "client_cache.testing.apiserver.gates": "(port only: test server)",
    "client_cache.util._native": "(port only: loading the native parts built from the sources "
                                "beside them)",
    "client_cache.util._server_answers": "(port only: a reflector's backoff ends when its "
                                        "server answers anyone again)",
    "client_cache.codec._sharing": "(port only: one copy of each repeated string in cached "
                                   "objects; decoded objects out of the cyclic collector's sight)",
    "client_cache.api.lists": f"{APIMACHINERY}/apis/meta/v1, {APIMACHINERY}/api/meta",
    "client_cache.errors": f"{APIMACHINERY}/api/errors, {CLIENT_GO}/tools/cache",
    "client_cache.cache_errors": f"{CLIENT_GO}/tools/cache (its error values)",
    "client_cache.api.errors": f"{APIMACHINERY}/api/errors",
    "client_cache.api.fields": f"{APIMACHINERY}/fields",
    "client_cache.api.labels": f"{APIMACHINERY}/labels",
    "client_cache.api.meta": f"{APIMACHINERY}/api/meta, {APIMACHINERY}/apis/meta/v1",
    "client_cache.api.schema": f"{APIMACHINERY}/runtime/schema",
    "client_cache.api.watch": f"{APIMACHINERY}/watch, {CLIENT_GO}/rest/watch",
    "client_cache.informers": f"{CLIENT_GO}/informers, {CLIENT_GO}/dynamic/dynamicinformer",
    "client_cache.informers.factory": f"{CLIENT_GO}/informers, "
                                      f"{CLIENT_GO}/dynamic/dynamicinformer",
    "client_cache.informers.metadata": f"{CLIENT_GO}/metadata/metadatainformer, "
                                       f"{CLIENT_GO}/metadata/metadatalister",
    "client_cache.client.pager": f"{CLIENT_GO}/tools/pager",
    "client_cache._synctrack": f"{CLIENT_GO}/tools/cache/synctrack",
    "client_cache.testing.fake_controller_source": f"{CLIENT_GO}/tools/cache/testing",
    "client_cache.testing.apiserver": "(port only: test server)",
    "client_cache.testing.apiserver.server": "(port only: test server)",
    "client_cache.testing.apiserver.handlers": "(port only: test server)",
    "client_cache.testing.apiserver.faults": "(port only: test server)",
    "client_cache.testing.apiserver.encoding": "(port only: test server)",
    "client_cache.testing.apiserver.load": "(port only: test server)",
    "client_cache.testing.apiserver.process": "(port only: test server)",
    "client_cache.testing.apiserver.store": "(port only: test server)",
    "client_cache.testing.apiserver.managed_fields": "(port only: test server; "
                                                     "kube-apiserver's fieldmanager)",
    "client_cache.testing.apiserver.schema_validation": "(port only: test server)",
    "client_cache.testing.apiserver.resources": "(port only: test server)",
    "client_cache.testing.apiserver.watchers": "(port only: test server)",
    "client_cache.testing.consistency": "(port only: test helper)",
    "client_cache.testing.envtest": "(port only: controller-runtime's envtest idea)",
    "client_cache.testing.envtest_build": "(port only: controller-runtime's envtest idea)",
    "client_cache.util.chan": "Go channels and select (the language)",
    "client_cache.util.clock": "k8s.io/utils/clock, k8s.io/utils/clock/testing",
    "client_cache.util.runtime": f"{APIMACHINERY}/util/runtime",
    "client_cache.util.stop": "Go stop channels / context cancellation (the language)",
    "client_cache.util._parking": "a goroutine parked on a channel (the language)",
    "client_cache.client.transport": f"{CLIENT_GO}/rest, net/http (the transport under a request)",
    "client_cache.util.wait": f"{APIMACHINERY}/util/wait",
    "client_cache.util._env": "os.Getenv + strconv.ParseBool (the language)",
    "client_cache.workqueue": f"{CLIENT_GO}/util/workqueue",
    "client_cache.util.flowcontrol": f"{CLIENT_GO}/util/flowcontrol",
    "client_cache.leaderelection": f"{CLIENT_GO}/tools/leaderelection, "
                                   f"{CLIENT_GO}/tools/leaderelection/resourcelock",
    "client_cache.client.rest": f"{CLIENT_GO}/rest (URL paths, headers and the few writes "
                                "the library makes)",
    "client_cache.client.discovery": f"{CLIENT_GO}/discovery (the resources of a group "
                                     "version)",
    "client_cache.client.lister_watcher": f"{CLIENT_GO}/tools/cache (NewListWatchFromClient's "
                                          "REST-client half)",
    "client_cache.client": f"{CLIENT_GO}/rest, {CLIENT_GO}/discovery",
    "client_cache.api": f"{APIMACHINERY}",
    "client_cache.util._sync_signal": "(port only: wait_for_cache_sync woken instead of "
                                     "polling)",
    "client_cache.util._moved": "(port only: old module names of moved modules)",
    "client_cache.record": f"{CLIENT_GO}/tools/record",
    "client_cache.record.broadcast": f"{CLIENT_GO}/tools/record, {APIMACHINERY}/watch "
                                     "(what both event APIs share)",
    "client_cache.events": f"{CLIENT_GO}/tools/events",
    "client_cache.health": "(port only: informer health; controller-runtime's healthz probes)",
    "client_cache.aio": "(port only: the asyncio bridge)",
    "client_cache.aio.latency": "(port only: event-loop latency during a sync)",
    "client_cache.codec.structs": "(port only: msgspec structs shaped like the models)",
    "client_cache.reflector_status": "(port only: informer health and the reflector's log lines)",
    "client_cache.health.server": "sigs.k8s.io/controller-runtime/pkg/healthz (probe format)",
    "client_cache.metrics": "(port only: metric exporters)",
    "client_cache.util.provider": "(port only: a process-wide provider slot)",
    "client_cache.workqueue.pythonic": "(port only: iterating and processing a work queue)",
    "client_cache.informers.generic": f"{CLIENT_GO}/informers (GenericInformer)",
    "client_cache.field_index": "sigs.k8s.io/controller-runtime/pkg/cache (IndexField)",
    "client_cache.codec.objects": "(port only: wire dicts <-> kubernetes.client models)",
    "client_cache.informers.accessors": f"{CLIENT_GO}/informers (the typed group versions)",
    "client_cache.informers.typed": f"{CLIENT_GO}/informers (generated accessors)",
    "client_cache.metrics.prometheus": "k8s.io/component-base/metrics/prometheus/workqueue, "
                                       "controller-runtime pkg/metrics",
    "client_cache.leaderelection.metrics": f"{CLIENT_GO}/tools/leaderelection/metrics.go",
    "client_cache.testing.apiserver.validation": "(port only: test server)",
    "client_cache.util.timestamps": f"{APIMACHINERY}/apis/meta/v1 (Time, MicroTime)",
    "client_cache.testing.leader": "(port only: leader-election candidates for tests)",
    "client_cache.testing.shard_worker": "(port only: sharded members for tests and "
                                         "benchmarks)",
    "client_cache.testing.child": "(port only: child processes of the tests)",
    "client_cache.testing.proxy": "(port only: a black-hole TCP proxy for tests)",
    "client_cache.subscription": "(kube-rs kube::runtime::reflector::store subscribers)",
    "client_cache.runtime": "(kube-rs kube::runtime::controller; Go names where "
                            "controller-runtime has them)",
    "client_cache.runtime.finalizer": "(kube-rs kube::runtime::finalizer)",
    "client_cache.runtime.predicates": "(kube-rs kube::runtime::predicates; "
                                       "controller-runtime pkg/predicate)",
    "client_cache.crd": "(kube-rs kube-derive CustomResource; controller-gen's CRD output)",
    "client_cache.sharding": "(port only: client-go, controller-runtime and kube-rs have no "
                             "sharding; the design of timebertt/kubernetes-controller-sharding)",
    "client_cache.sharding.config": "(port only: sharding)",
    "client_cache.sharding._sharder": "(timebertt/kubernetes-controller-sharding's sharder)",
    "client_cache.runtime.sharded": "(port only: the runtime's use of sharding)",
    "client_cache.runtime.metrics": "(controller-runtime pkg/internal/controller/metrics)",
    "client_cache.runtime.retry": "(controller-runtime controller.Options.RateLimiter)",
    "client_cache.client.stream_watcher": f"{APIMACHINERY}/watch (streamwatcher.go)",
    "client_cache.codec._list_body": "(port only: a LIST body read item by item as it arrives)",
    "client_cache.codec.protobuf": f"{APIMACHINERY}/runtime/serializer/protobuf, the types' "
                             "generated Unmarshal and MarshalJSON",
    "client_cache.codec._protobuf_schema": "(port only: k8s.io/api's protobuf tags, compiled)",
    "client_cache.codec._protobuf_structs": "(port only: protobuf decoded straight into struct "
                                     "mode's classes)",
    "client_cache.codec._decoding": "(port only: what turns a server's answers into a "
                             "lister-watcher's objects; Go's codecs)",
    "client_cache.codec.skip_paths": "(port only: members left out while decoding; Go: a "
                               "transform after it)",
}
ACRONYMS = {"fifo": "FIFO", "ttl": "TTL", "pv": "PV", "pvc": "PVC", "lru": "LRU",
            "api": "API", "id": "ID", "url": "URL", "json": "JSON"}
GO_KEYWORDS = {"select"}
# Python name -> Go name ("—" when there is none) and an optional remark.
OVERRIDES: dict[str, tuple[str, str]] = {
    "FULL_RANGE_END": ("—", "2^64, the exclusive end Go writes as '0x10000000000000000'"),
    "SHARD_KEYS": ("—", "the paths Go's parser accepts"),
    "hash_value": ("—", "HashField's hash as an integer"),
    "parse_shard_selector": ("Parse", "in k8s.io/apiserver/pkg/sharding"),
    "shard_range_selector": ("—", "writes what Selector.String writes"),
    "shard_ranges": ("—", "equal contiguous ranges of the hash space"),
    "ShardSelector": ("Selector", ""),
    "ShardSelectorError": ("(Parse's error)", ""),
    "compare_resource_versions": ("CompareResourceVersion", "KEP-5504"),
    "list_shard_selector": ("ListMeta.ShardInfo.Selector", ""),
    "SyncChecker": ("—", "the DoneChecker behind has_synced_checker()"),
    "QueueMetrics": ("fifoMetrics", ""),
    "StoreMetrics": ("storeMetrics", ""),
    "reset_informer_metrics_provider_for_tests": ("—", "tests only"),
    "kube_server": ("—", "pytest fixture: the embedded server (controller-runtime envtest's "
                    "Environment, kopf's KopfRunner)"),
    "kube_control_plane": ("—", "pytest fixture: envtest.Environment.Start, for the session"),
    "kube_cluster": ("—", "pytest fixture: the embedded server, then the real one"),
    "kube_api": ("—", "pytest fixture: the API client of kube_cluster"),
    "run_controller": ("—", "pytest fixture: the manager's Start on a goroutine, stopped "
                       "after the test"),
    "RunningController": ("—", "what run_controller starts"),
    "STOP_WITHIN": ("—", "the 1 s a controller under test has to stop"),
    "BACKEND": ("—", "which JSON decoder is in use (orjson or the standard library)"),
    "WatchReconnectRequested": ("—", "port addition: what ends a watch Reflector.reconnect "
                                "re-establishes"),
    "DEFAULT_MAX_BACKOFF": ("—", "client-go's reflector backoff cap, a literal 30 s there; "
                            "lowered by the port's max_backoff option"),
    "loads": ("—", "decodes JSON with orjson when installed"),
    "GC_PAUSE_THRESHOLD": ("—", "bodies this long decode with the garbage collector paused"),
    "gc_paused": ("—", "keeps the garbage collector off for a block (nestable)"),
    "keep_alive": ("—", "TCP keepalive on a response's connection (client-go's timings)"),
    "KEEPALIVE_IDLE": ("—", "seconds idle before the first keepalive probe (30, as Go)"),
    "KEEPALIVE_INTERVAL": ("—", "seconds between keepalive probes (15, as Go)"),
    "KEEPALIVE_PROBES": ("—", "unanswered probes before the connection drops (9, as Go)"),
    "WATCH_HEADER_TIMEOUT": ("—", "how long a WATCH waits for its response headers"),
    "sample_object": ("—", "load generator: the i-th pod or configmap it writes"),
    "ListOptions": ("metav1.ListOptions", "`continue_` for `Continue`"),
    "NotAListError": ("meta.errNotList", ""),
    "list_continue": ("meta.ListAccessor(obj).GetContinue", ""),
    "list_items": ("meta.ExtractList", "wire dicts and list models"),
    "list_remaining_item_count": ("meta.ListAccessor(obj).GetRemainingItemCount", ""),
    "list_resource_version": ("meta.ListAccessor(obj).GetResourceVersion", ""),
    "INITIAL_EVENTS_ANNOTATION_KEY": ("metav1.InitialEventsAnnotationKey", ""),
    "RESOURCE_VERSION_MATCH_EXACT": ("metav1.ResourceVersionMatchExact", ""),
    "RESOURCE_VERSION_MATCH_NOT_OLDER_THAN": ("metav1.ResourceVersionMatchNotOlderThan", ""),
    "ApiStatusError": ("apierrors.StatusError", "carries code, reason, message, details"),
    "ClientCacheError": ("—", "base class of every exception raised on purpose"),
    "FIFOClosedError": ("ErrFIFOClosed", ""),
    "HeapClosedError": ("the heap's \"closed\" error", ""),
    "ObjectNotFoundError": ("the heap's \"object not found\" error", ""),
    "RequeueError": ("ErrRequeue", ""),
    "ZeroLengthDeltasError": ("ErrZeroLengthDeltasObject", ""),
    "IndexFuncError": ("(IndexFunc's error)", "the store is left unchanged"),
    "IndexNotFoundError": ("\"Index with name %s does not exist\"", ""),
    "IndexerConflictError": ("\"indexer conflict\"", ""),
    "InvalidKeyError": ("\"unexpected key format\"", ""),
    "KeyFuncError": ("KeyError", ""),
    "MetaAccessError": ("meta.Accessor's error", ""),
    "SelectorParseError": ("labels.Parse / fields.ParseSelector errors", ""),
    "from_api_exception": ("—", "a kubernetes ApiException as a StatusError"),
    "from_status": ("apierrors.FromObject", ""),
    "is_too_large_resource_version": ("apierrors.IsTooLargeResourceVersionError", ""),
    "is_connection_refused": ("utilnet.IsConnectionRefused", ""),
    "new_too_large_resource_version": ("apierrors.NewTooLargeResourceVersionError", ""),
    "new_status_error": ("&apierrors.StatusError{...}", ""),
    "Selector": ("Selector", ""),
    "accessor": ("meta.Accessor", "wire dicts, models, dynamic objects"),
    "type_meta": ("meta.TypeAccessor", ""),
    "namespace_and_name": ("(ObjectMeta GetNamespace, GetName)", ""),
    "same_resource_version": ("—", "two objects' resourceVersions compared (port addition)"),
    "ObjectMetaAccessor": ("metav1.Object", ""),
    "OwnerReference": ("metav1.OwnerReference", ""),
    "decode_error_status": ("watch: decoding an ERROR event's Status", ""),
    "StreamWatcher": ("watch.StreamWatcher (rest/watch)", "HTTP chunked JSON lines"),
    "model_decoder": ("—", "builds kubernetes models from wire dicts"),
    "resource_path": ("—", "the REST path of a resource"),
    "ClientListerWatcher": ("(the ListWatch NewListWatchFromClient returns)", ""),
    "new_filtered_list_watch_from_client": ("NewFilteredListWatchFromClient", ""),
    "new_list_watch_from_client": ("NewListWatchFromClient", ""),
    "NewInformerFunc": ("internalinterfaces.NewInformerFunc", ""),
    "TweakListOptionsFunc": ("internalinterfaces.TweakListOptionsFunc", ""),
    "SharedInformerFactoryOptions": ("SharedInformerOption (as one dataclass)", ""),
    "GenericInformer": ("informers.GenericInformer", ""),
    "SharedInformerFactory": ("informers.SharedInformerFactory", ""),
    "StopRequestedError": ("errorStopRequested", "also the pager's ctx.Err()"),
    "new_controller": ("New", "cache.New (the one Go name too short to keep)"),
    "QueueBase": ("—", "lock and sync accounting shared by the FIFOs"),
    "DEFAULT_REQUEST_TIMEOUT": ("—", "LIST/WATCH request timeout (60 s, the server's own)"),
    "LIST_READ_SIZE": ("—", "bytes of a LIST body read at a time, its items decoded between"),
    "ListBodyReader": ("—", "a LIST body, JSON or protobuf, decoded as it arrives"),
    "PROTOBUF_ACCEPT": ("rest.Config.AcceptContentTypes", "protobuf, then JSON"),
    "answers_protobuf": ("—", "the test server's content negotiation"),
    "body_bytes": ("—", "a wire dict as the test server's protobuf body"),
    "watch_bytes": ("—", "JSON watch lines as the test server's protobuf frames"),
    "GARBLED_FRAME": ("—", "a protobuf frame that is no watch event (fault injection)"),
    "CONTENT_TYPE": ("runtime.ContentTypeProtobuf", ""),
    "WATCH_CONTENT_TYPE": ("—", "the protobuf watch stream's content type"),
    "MAGIC": ("protobuf.serializer's prefix", "k8s and a zero byte"),
    "MAX_FRAME": ("—", "the longest watch frame read"),
    "unwrap": ("runtime.Unknown", "the envelope's apiVersion, kind and object span"),
    "decode": ("protobuf.Serializer.Decode", "into the dict the object's JSON gives"),
    "encode": ("protobuf.Serializer.Encode", "from a wire dict"),
    "decode_watch_event": ("metav1.WatchEvent (protobuf)", "type and object"),
    "encode_watch_event": ("metav1.WatchEvent (protobuf)", "one length-prefixed frame"),
    "FrameReader": ("framer.NewLengthDelimitedFrameReader", ""),
    "ListReader": ("—", "a protobuf LIST body decoded item by item as it arrives"),
    "Schema": ("—", "the protobuf schema of the built-in kinds, compiled"),
    "schema": ("—", "the package's schema, read once"),
    "SCHEMA_FILE": ("—", "generated by tools/protoschema from k8s.io/api"),
    "bookmark_object": ("—", "a bookmark's object as kind, apiVersion and metadata"),
    "EVENT_TYPES": ("—", "each watch event type by its name on the wire"),
    "LinesDecoder": ("—", "a StreamWatcher's decoder of a chunk's whole lines in one call"),
    "BurstTake": ("—", "one take of a StreamWatcher's stream in the caller's thread"),
    "ListerWatcherWithContext": ("ListerWatcherWithContext", "the stop event plays ctx"),
    "to_lister_watcher_with_context": ("ToListerWatcherWithContext", ""),
    "Transport": ("—", "interruptible GETs on a pool of its own (Go: http.Transport)"),
    "socket_of": ("—", "the socket under a response"),
    "request_headers": ("—", "the headers the kubernetes client would send"),
    "served_resources": ("discovery.ServerResourcesForGroupVersion", "names only"),
    "UnknownResourceError": ("\"no informer found for\" error", ""),
    "PARTIAL_OBJECT_METADATA": ("—", "the apiVersion/kind metadata informers check"),
    "PartialObjectMetadata": ("metav1.PartialObjectMetadata", "metadata a V1ObjectMeta"),
    "MetadataSharedInformerFactory": ("metadatainformer.SharedInformerFactory", ""),
    "new_metadata_shared_informer_factory": ("metadatainformer.NewSharedInformerFactory", ""),
    "new_filtered_metadata_shared_informer_factory": (
        "metadatainformer.NewFilteredSharedInformerFactory", ""),
    "new_metadata_lister": ("metadatalister.New", ""),
    "METADATA_LIST_ACCEPT": ("metadata client's list Accept header", "JSON only"),
    "METADATA_WATCH_ACCEPT": ("metadata client's watch Accept header", "JSON only"),
    "META_API_VERSION": ("—", "meta.k8s.io/v1"),
    "partial_object_metadata": ("—", "the server's metadata-only form of an object"),
    "describe": ("klog.KObj", "kind namespace/name (resourceVersion), never contents"),
    "on_stop": ("—", "run a callback when a stop event is set (Go: <-stopCh in a goroutine)"),
    "SignalRelay": ("signal.Notify", "a signal any thread took, relayed to a thread of its own"),
    "stop_callbacks": ("—", "how many callbacks wait for a stop event (tests)"),
    "Parker": ("—", "one sleeper, woken by a lock release that never waits (port addition)"),
    "simple_page_func": ("SimplePageFunc", ""),
    "new_list_pager": ("New", "pager.New"),
    "DataInconsistencyError": ("(watch-list consistency check failure)", ""),
    "ListFailedError": ("\"failed to list\" error", ""),
    "VeryShortWatchError": ("VeryShortWatchError", ""),
    "WatchStalledError": ("—", "a watch idle past its timeout (port addition)"),
    "ReadyIndexer": ("—", "an Indexer with kube-rs Store readiness and subscriptions"),
    "format_micro_time": ("metav1.MicroTime.MarshalJSON", "RFC 3339, microseconds, UTC"),
    "parse_micro_time": ("metav1.MicroTime.UnmarshalJSON", ""),
    "LeaderElectionError": ("(NewLeaderElector's and Check's errors)", ""),
    "LockError": ("—", "reading or writing the lock failed"),
    "LockConflictError": ("—", "a 409 on the lock: a lost race"),
    "LockNotFoundError": ("—", "the lock does not exist yet"),
    "Interface": ("resourcelock.Interface", ""),
    "request_json": ("rest.Request (Do, Into)", "JSON through the client's REST client"),
    "RestError": ("—", "a request that could not be sent or read"),
    "JSON_MERGE_PATCH": ("types.MergePatchType", ""),
    "EventSinkError": ("—", "a failed event write; retry says if trying again may help"),
    "CorrelateResult": ("EventCorrelateResult", ""),
    "MAX_QUEUED_EVENTS": ("maxQueuedEvents", ""),
    "MAX_TRIES_PER_EVENT": ("maxTriesPerEvent", ""),
    "EVENT_TYPE_NORMAL": ("v1.EventTypeNormal", ""),
    "EVENT_TYPE_WARNING": ("v1.EventTypeWarning", ""),
    "CoreV1EventSink": ("typedcorev1.EventSinkImpl", "core/v1 Events"),
    "get_event_key": ("getEventKey", ""),
    "EventFanout": ("watch.Broadcaster", "DropIfChannelFull mode, a thread per watcher"),
    "EventNamer": ("util.GenerateEventName", "names kept strictly increasing"),
    "RestEventSink": ("—", "the REST call under both sinks"),
    "BroadcasterBase": ("—", "what both broadcasters share"),
    "describe_regarding": ("—", "Kind namespace/name of an event's object, for logs"),
    "regarding_reference": ("reference.GetReference", "logged and None instead of an error"),
    "object_reference": ("reference.GetReference", ""),
    "write_with_retries": ("attemptRecording", "the loop both APIs use"),
    "EventsV1Sink": ("events.EventSinkImpl", "events.k8s.io/v1 Events"),
    "FINISH_TIME": ("finishTime", ""),
    "REFRESH_TIME": ("refreshTime", ""),
    "isomorphic_key": ("getKey", ""),
    "RecorderLike": ("events.EventRecorder", "the interface both adapter recorders meet"),
    "EventRecorderAdapter": ("record.EventRecorderAdapter", "drops related and action"),
    "format_time": ("metav1.Time.MarshalJSON", "RFC 3339, seconds, UTC"),
    "InformerHealth": ("—", "an informer's health snapshot"),
    "ReflectorStatus": ("—", "what a reflector did, for health and logs"),
    "DEFAULT_FAILING_AFTER": ("—", "60 s of failures make an informer unhealthy"),
    "SLOW_LIST_SECONDS": ("—", "a LIST slower than this logs a WARNING (10 s)"),
    "describe_failure": ("—", "an error for a log line, without response bodies"),
    "display_resource": ("—", "pods, apps/v1 deployments, foos.example.com"),
    "HealthServer": ("healthz.InstallHandler", "controller-runtime's probe endpoints"),
    "Check": ("healthz.Checker", ""),
    "serve": ("—", "a started HealthServer with the standard checks"),
    "informers_check": ("—", "liveness: no informer unhealthy"),
    "caches_synced_check": ("—", "readiness: every informer started and synced"),
    "controller_ready_check": ("—", "readiness: a runtime controller running, synced, "
                                    "its shard membership ready"),
    "UnfitObject": ("—", "an object that does not fit its class, kept out of the cache"),
    "UNFIT_SHOWN": ("—", "how many unfit objects health names"),
    "FailureEpisodes": ("—", "rate-limited ERROR lines of repeated failures"),
    "Repeat": ("—", "what FailureEpisodes decided for one failure"),
    "FAILURE_REPEAT_SECONDS": ("—", "how often a repeated failure is said again"),
    "MAX_LEASE_DURATION": ("—", "the longest member lease"),
    "MAX_VIRTUAL_NODES": ("—", "the most ring points a member may have"),
    "builtin_group": ("—", "whether a group is built in (no CRD can add to it)"),
    "checked_type_info": ("—", "msgspec's type info, a refused type naming its field"),
    "protected_group": ("—", "a group reserved to Kubernetes (its CRDs need approval)"),
    "APPROVAL_ANNOTATION": ("KubeAPIApprovedAnnotation", "the approval a protected group's "
                                                         "CRD carries"),
    "server_unreachable": ("—", "an error saying the server is not serving (no answer, "
                                "429, 5xx)"),
    "answered": ("—", "a server answered: wake who waits for it"),
    "on_answer": ("—", "call back when a server answers again"),
    "claim_probe": ("—", "take this period's turn to probe a silent server"),
    "busy": ("—", "a fixed amount of pure-Python work (a benchmark reconcile's)"),
    "client_cache.util._server_answers.Registration": ("—", "an on_answer callback, to "
                                                           "cancel"),
    "builtin_kind": ("—", "a built-in resource's kind and scope, without a server"),
    "leader_election_check": ("leaderelection.HealthzAdaptor.Check", ""),
    "ProviderSlot": ("—", "a process-wide replaceable provider"),
    "WatchIteration": ("—", "for event in watch; with watch: (stop at the end)"),
    "GroupVersion": ("—", "base of the generated <Group><Version> accessor classes"),
    "ALL_NAMESPACES_KEY": ("allNamespacesNamespace", "controller-runtime"),
    "field_index_name": ("FieldIndexName", "controller-runtime"),
    "index_field": ("FieldIndexer.IndexField", "controller-runtime"),
    "list_by_field": ("MatchingFields", "controller-runtime's List option"),
    "field_values": ("—", "the values at a dotted field path"),
    "to_wire": ("—", "a model or struct as the server's JSON (sanitize_for_serialization)"),
    "to_model": ("—", "a wire dict or struct as a kubernetes.client model"),
    "TypedResource": ("—", "plural, singular, model and scope of a typed resource"),
    "TypedGroups": ("informers.SharedInformerFactory's group methods", "generated"),
    "GENERATED_FROM": ("—", "the kubernetes package the accessors were generated from"),
    "QueueIteration": ("—", "for key in queue; with queue.processing(key):"),
    "AsyncHandler": ("—", "an event handler of coroutine functions, run on a loop"),
    "CallCancelledError": ("—", "a coroutine run from a thread was cancelled"),
    "events": ("—", "async for over an informer's notifications"),
    "EventsOverflowError": ("—", "an events() consumer fell too far behind"),
    "InformerEvent": ("—", "one notification of events()"),
    "is_async_callable": ("—", "an async def function"),
    "LoopCaller": ("—", "runs coroutines on a loop for library threads"),
    "Overflow": ("—", "events()' overflow policy: wait or fail"),
    "wait_for_cache_sync_async": ("—", "wait_for_cache_sync for a coroutine"),
    "on_sync_changed": ("—", "a callback at every sync change (for the asyncio bridge)"),
    "AddNotification": ("addNotification", "unexported in Go"),
    "UpdateNotification": ("updateNotification", "unexported in Go"),
    "DeleteNotification": ("deleteNotification", "unexported in Go"),
    "SharedProcessor": ("sharedProcessor", "unexported in Go"),
    "determine_resync_period": ("determineResyncPeriod", "unexported in Go"),
    "handler_name": ("—", "how logs name a handler"),
    "WireObject": ("—", "the type of an object in wire form: Mapping[str, Any]"),
    "IndexQueries": ("—", "the index methods Go declares on both Indexer and ThreadSafeStore"),
    "Reconciler": ("—", "reconcile(obj, ctx) -> Action, plain or async"),
    "ErrorPolicy": ("—", "error_policy(obj, err, ctx) -> Action, plain or async"),
    "register": ("—", "every provider and the informer collector in one call"),
    "WorkqueueProvider": ("workqueue.prometheusMetricsProvider", ""),
    "ReflectorProvider": ("cache.MetricsProvider", "reflector metrics in Prometheus"),
    "ControllerProvider": ("—", "controller-runtime's reconcile metrics"),
    "LeaderProvider": ("leaderelection.leaderMetricsAdapter", "Prometheus gauge"),
    "InformerCollector": ("—", "informer health read at scrape time"),
    "WORKQUEUE_BUCKETS": ("—", "client-go's ExponentialBuckets(10e-9, 10, 10)"),
    "LeaderMetricsProvider": ("leaderelection.MetricsProvider", ""),
    "NoopLeaderMetricsProvider": ("leaderelection.noopMetricsProvider", ""),
    "set_leader_metrics_provider": ("leaderelection.SetProvider", ""),
    "get_leader_metrics_provider": ("—", ""),
    "CacheSyncTimeoutError": ("—", "wait_for_cache_sync(timeout=) ran out"),
    "unsynced_details": ("—", "what did not sync and its last error"),
    "find_api_error": ("errors.As", "the API error in an exception's chain"),
    "is_forbidden": ("errors.IsForbidden", ""),
    "is_unauthorized": ("errors.IsUnauthorized", ""),
    "get_spam_key": ("getSpamKey", ""),
    "Timing": ("—", "an elector's durations"),
    "CandidateProcess": ("—", "a candidate in a child process"),
    "TcpProxy": ("—", "a loopback proxy that can swallow all traffic"),
    "NOOP_METRIC": ("—", "a metric that does nothing, for no-op providers"),
    "describe_error": ("—", "an error as a log line: API errors by code and reason only"),
    "discover": ("discovery.ServerResourcesForGroupVersion", "the resources list"),
    "resource_kind": ("RESTMapper.KindFor", "kind and scope by discovery"),
    "throttle_client": ("rest.Config.RateLimiter", "on a kubernetes ApiClient"),
    "Action": ("—", "kube-rs Action (requeue, await_change)"),
    "Context": ("—", "kube-rs Arc<Context>: the user's data plus the request"),
    "client_cache.runtime.Controller": ("—", "kube-rs Controller"),
    "ReconcileTimeoutError": ("context.DeadlineExceeded",
                              "a reconcile past ControllerConfig.reconcile_timeout"),
    "Predicate": ("predicate.Funcs", "kube-rs Predicate; &, or and ~ are And, Or, Not"),
    "predicates": ("pkg/predicate", "the module: kube-rs kube::runtime::predicates"),
    "client_cache.runtime.predicates.changed": ("—", "kube-rs predicate_filter with a closure"),
    "client_cache.runtime.predicates.when": ("predicate.NewPredicateFuncs", "kopf when="),
    "client_cache.runtime.predicates.labelled": ("predicate.LabelSelectorPredicate",
                    "kopf labels="),
    "client_cache.runtime.predicates.generation": ("predicate.GenerationChangedPredicate",
                      "kube-rs predicates::generation"),
    "client_cache.runtime.predicates.resource_version": (
        "predicate.ResourceVersionChangedPredicate", "kube-rs predicates::resource_version"),
    "client_cache.runtime.predicates.labels": ("predicate.LabelChangedPredicate",
                  "kube-rs predicates::labels"),
    "client_cache.runtime.predicates.annotations": (
        "predicate.AnnotationChangedPredicate", "kube-rs predicates::annotations"),
    "client_cache.runtime.predicates.finalizers": ("—", "kube-rs predicates::finalizers"),
    "client_cache.runtime.retry.BASE_DELAY": ("—", "the 5 ms of the default limiter"),
    "client_cache.runtime.retry.MAX_DELAY": ("—", "the 1000 s of the default limiter"),
    "client_cache.runtime.retry.RateLimiterFactory": ("—", "makes a run's rate limiter"),
    "client_cache.runtime.retry.default_rate_limiter": (
        "—", "client-go's NewTypedItemExponentialFailureRateLimiter(5ms, 1000s)"),
    "run_workers": ("—", "N worker threads over a queue (sample-controller's loop)"),
    "ControllerConfig": ("—", "kube-rs controller::Config plus controller-runtime options"),
    "ControllerMetricsProvider": ("—", "controller-runtime reconcile metrics"),
    "ControllerMetrics": ("—", "one controller's reconcile metrics"),
    "NoopControllerMetricsProvider": ("—", "the default: no metrics"),
    "get_controller_metrics_provider": ("—", ""),
    "set_controller_metrics_provider": ("—", ""),
    "reset_controller_metrics_provider_for_tests": ("—", "test helper"),
    "RECONCILE_RESULTS": ("—", "controller-runtime's result labels"),
    "controller_owner_ref": ("metav1.NewControllerRef", "kube-rs controller_owner_ref"),
    "set_controller_reference": ("controllerutil.SetControllerReference", ""),
    "OwnerConflictError": ("controllerutil.AlreadyOwnedError", ""),
    "deep_copy": ("DeepCopy", "obj.DeepCopy()"),
    "finalizer": ("—", "kube-rs finalizer()"),
    "FinalizerError": ("—", "kube-rs finalizer::Error"),
    "finalizers_of": ("GetFinalizers", "metav1.Object"),
    "Mapper": ("—", "kube-rs watches() mapper"),
    "object_ref": ("—", "kube-rs ObjectRef::from_obj"),
    "ObjectRef": ("—", "kube-rs ObjectRef"),
    "ReasonKind": ("—", "the variants of kube-rs ReconcileReason"),
    "ReconcileReason": ("—", "kube-rs ReconcileReason"),
    "ReconcileRequest": ("—", "kube-rs ReconcileRequest"),
    "RunSummary": ("—", "what run() did (port addition)"),
    "low_latency_sync": ("—", "collector paused for a sync, then frozen (port addition)"),
    "spaced_full_collections": ("—", "full collections spaced out while a reflector runs"),
    "SPACING": ("—", "the factor on the collector's third threshold"),
    "MAX_SPACING": ("—", "the most the factor grows to while full passes find little"),
    "FEW_COLLECTED": ("—", "a full pass freeing fewer objects doubles the factor"),
    "factor": ("—", "the current factor (adapts to what full passes free)"),
    "set_enabled": ("—", "turn the spacing of full collections on or off"),
    "client_cache.util.gc_policy.enabled": ("—", "is the spacing of full collections on?"),
    "client_cache.util._native.enabled": ("—", "are the native parts on (CLIENT_CACHE_NATIVE)?"),
    "client_cache.util.features.env_var_name": ("—", "KUBE_FEATURE_<Name>, the variable of a gate"),
    "client_cache.util.features.KNOWN_FEATURES": ("defaultVersionedKubernetesFeatureGates",
                                                  "the gates at v0.36"),
    "client_cache.util.features.CLIENTS_ALLOW_CBOR": ("ClientsAllowCBOR", "no effect here"),
    "client_cache.util.features.CLIENTS_PREFER_CBOR": ("ClientsPreferCBOR", "no effect here"),
    "client_cache.util.features.feature_gates": ("FeatureGates()", ""),
    "client_cache.util.features.FeatureGates": ("envVarFeatureGates", ""),
    "client_cache.reflector.WatchListSemanticsUnsupported": (
        "watchlist.unSupportedWatchListSemantics", ""),
    "client_cache.reflector.does_client_not_support_watch_list_semantics": (
        "watchlist.DoesClientNotSupportWatchListSemantics", ""),
    "active": ("—", "how many spacing blocks run (one per reflector)"),
    "AVAILABLE": ("—", "is the C string-sharing walker installed?"),
    "SHARE_STRINGS_ENV": ("—", "CLIENT_CACHE_SHARE_STRINGS=0 turns sharing off"),
    "share": ("—", "repeated short strings of a decoded object, one copy each"),
    "shared_by_default": ("—", "do list-watches share strings unless told not to?"),
    "split_list": ("—", "a LIST body's envelope and each item's JSON"),
    "ListSplitter": ("—", "a LIST body's items as the body arrives, piece by piece"),
    "table_stats": ("—", "the sharing tables' counters: strings, key tables, values"),
    "decoder": ("—", "a JSON decoder doing the walk while it parses (C), as a list-watch does"),
    "line_decoder": ("—", "a buffer of JSON watch lines to their events in one call (C)"),
    "LineDecoder": ("—", "what line_decoder gives: (data, pos) to (events, pos, stuck)"),
    "clear_table": ("—", "forget the strings and key tables the sharing tables hold"),
    "COMPACT_DICTS_ENV": ("—", "CLIENT_CACHE_COMPACT_DICTS=0 leaves decoded dicts their own keys"),
    "compact": ("—", "a decoded object's dicts sharing key tables with their likes"),
    "compacted_by_default": ("—", "do list-watches compact cached dicts unless told not to?"),
    "REUSE_UNCHANGED_ENV": ("—", "CLIENT_CACHE_REUSE_UNCHANGED=0: events build every part"),
    "reused_by_default": ("—", "do informers' events take unchanged parts of cached objects?"),
    "reuse_cached": ("—", "lend an informer's cache to its lister-watcher's events and LISTs"),
    "C_CORE_AVAILABLE": ("—", "is the work queue's C core installed?"),
    "C_CORE_ENV": ("—", "CLIENT_CACHE_WORKQUEUE_C=0 runs work queues on the Python code"),
    "UNTRACK_ENV": ("—", "CLIENT_CACHE_UNTRACK=0 leaves decoded objects to the collector"),
    "untrack": ("—", "a decoded object's containers out of the cyclic collector's sight"),
    "untracked_by_default": ("—", "do list-watches untrack what they decode unless told not to?"),
    "walker": ("—", "share strings, untrack and compact in one walk, as a list-watch does"),
    "DEFAULT_SKIP": ("—", "the wire paths struct types leave out"),
    "to_struct": ("—", "a wire dict, JSON or a model as a struct"),
    "struct_to_wire": ("—", "a struct as a wire dict (objects.to_wire calls it)"),
    "is_struct_type": ("—", "a msgspec Struct class?"),
    "struct_type": ("—", "the (frozen) struct class for a kubernetes model class"),
    "StructCodec": ("—", "LIST bodies and watch events straight into structs"),
    "model_of": ("—", "the kubernetes model a struct class was made from"),
    "StructPlans": ("—", "how the C decoder reads a message into a struct class"),
    "plans": ("—", "the compiled plans for a message and a struct class"),
    "root_message": ("—", "the protobuf message of a struct class's kind"),
    "DictPlans": ("—", "how the C decoder reads a message into dicts, members left out"),
    "dict_plans": ("—", "the compiled plans leaving a skip tree's members out of dicts"),
    "ObjectDecoding": ("—", "a lister-watcher's decoders: LIST items and bodies, events"),
    "Loads": ("—", "a JSON decoder: bytes to a document"),
    "dropped": ("—", "a decoder followed by the drop of a skip tree's members"),
    "walked": ("—", "a decoder followed by the sharing walk"),
    "walked_events": ("—", "an event decoder followed by the walk of the object"),
    "SkipPath": ("—", "a dotted path, or its keys"),
    "SkipTree": ("—", "the paths as the decoders take them"),
    "Tree": ("—", "a node of a skip tree"),
    "drop_members": ("—", "delete a skip tree's members from a decoded object"),
    "skip_tree": ("—", "the skip tree of some paths, or None"),
    "Scheduler": ("—", "kube-rs debounced_scheduler + hold_unless"),
    "replace_all": ("processReplacedAllInfo", "applies a ReplacedAll delta"),
    "REPLACED_ALL_KEY": ("—", "queue key of a ReplacedAllInfo"),
    "Subscription": ("—", "kube-rs Store::subscribe (shared store subscriber)"),
    "SubscriberLaggedError": ("—", "tokio broadcast's Lagged: events were dropped"),
    "DEFAULT_SUBSCRIBER_BUFFER": ("—", "a subscriber's buffer (1024 events)"),
    "InitialEventsEndBookmarkTicker": ("initialEventsEndBookmarkTicker", ""),
    "handle_watch": ("handleAnyWatch", ""),
    "random_watch_timeout": ("—", "the timeoutSeconds Go's ListAndWatch draws inline"),
    "watch_list": ("Reflector.watchList", ""),
    "TypeCheck": ("—", "the expectedType/expectedGVK checks of Go's reflector, as one object"),
    "check_watch_list_consistency_if_requested": (
        "checkWatchListDataConsistencyIfRequested", ""),
    "env_true": ("—", "a variable read with strconv.ParseBool"),
    "env_bool": ("—", "a variable read with strconv.ParseBool, a default when unset"),
    "BATCH_PROCESS_GATE": ("features.InOrderInformersBatchProcess",
                           "the feature gate's environment variable; on unless set false"),
    "process_deltas_in_batch": ("processDeltasInBatch", ""),
    "parse_bool": ("strconv.ParseBool", "the true spellings; errors count as false"),
    "ResourceVersionUpdater": ("ResourceVersionUpdater", ""),
    "default_watch_error_handler": ("DefaultWatchErrorHandler", ""),
    "reset_reflector_metrics_provider_for_tests": ("—", "test helper"),
    "CounterMetric": ("CounterMetric", ""),
    "LRUExpireCache": ("utilcache.LRUExpireCache", "k8s.io/apimachinery/pkg/util/cache"),
    "CacheMutationError": ("(the detector's panic)", "raised or reported"),
    "mutation_detection_enabled": ("(KUBE_CACHE_MUTATION_DETECTOR)", ""),
    "NamespacedName": ("types.NamespacedName", ""),
    "namespaced_name_as_object_name": ("NamespacedNameAsObjectName", ""),
    "check_indexer_consistency": ("—", "test helper: indices match the items"),
    "EmbeddedApiServer": ("—", "Kubernetes HTTP protocol on loopback, fault injection"),
    "EmbeddedApiServerProcess": ("—", "the embedded server in a child process"),
    "client_cache.testing.apiserver.main": ("—", "the embedded server's command line"),
    "client_cache.testing.envtest.main": ("—", "the envtest command line (build the real "
                                         "server, print its paths)"),
    "client_cache.testing.leader.main": ("—", "one leader-election candidate process"),
    "client_cache.testing.shard_worker.main": ("—", "one sharded member process"),
    "client_cache.testing.child.LineProcess": ("—", "a child printing JSON lines"),
    "client_cache.testing.child.emit": ("—", "print one JSON line (in the child)"),
    "client_cache.testing.child.add_lease_arguments": ("—", "a Lease holder's flags"),
    "client_cache.testing.shard_worker.ShardWorkerProcess": ("—", "a member in a child "
                                                             "process"),
    "WRITTEN_AT_ANNOTATION": ("—", "load generator: when an object was written"),
    "ApiStore": ("—", "the embedded server's storage"),
    "BUILTIN_RESOURCES": ("—", "resources the embedded server serves"),
    "ResourceType": ("—", "a resource the embedded server serves"),
    "CRD_KEY": ("—", "(group, plural) of CustomResourceDefinitions"),
    "crd_resource_type": ("—", "the resource a CustomResourceDefinition defines"),
    "Change": ("—", "one write in the embedded server's history"),
    "encode_event": ("—", "one watch stream line"),
    "field_set": ("—", "the fields a field selector may name"),
    "GO_MINIMUM": ("—", "envtest: the oldest Go that builds the pinned Kubernetes"),
    "Binaries": ("—", "envtest: built kube-apiserver, etcd, keygen"),
    "ControlPlane": ("—", "envtest: etcd + kube-apiserver processes"),
    "ETCD_VERSION": ("—", "envtest: pinned etcd"),
    "EnvtestError": ("—", "envtest: build or start failed"),
    "KUBERNETES_VERSION": ("—", "envtest: pinned kube-apiserver"),
    "build": ("—", "envtest: build the binaries"),
    "cache_dir": ("—", "envtest: where the binaries live"),
    "find_binaries": ("—", "envtest: the built binaries or None"),
    "find_go": ("—", "envtest: the go command, or None"),
    "CLOSED": ("(closed channel receive)", "`recv` returns (None, False)"),
    "Chan": ("chan T", ""),
    "ChanClosedError": ("panic: send on closed channel", ""),
    "DoneChan": ("<-chan struct{}", "a stop channel"),
    "NEVER_STOP": ("wait.NeverStop", ""),
    "STOPPED": ("(select: the stop channel fired)", ""),
    "TIMED_OUT": ("(select: the timeout fired)", ""),
    "UnbufferedChan": ("make(chan T)", ""),
    "select": ("select { ... }", ""),
    "select_or_stop": ("select { case <-ch: ... case <-stopCh: ... }", ""),
    "stop_chan": ("(a threading.Event as a channel)", ""),
    "REAL_CLOCK": ("clock.RealClock{}", ""),
    "ERROR_HANDLERS": ("ErrorHandlers", ""),
    "PANIC_HANDLERS": ("PanicHandlers", ""),
    "REALLY_CRASH": ("ReallyCrash", ""),
    "reset_for_tests": ("—", "test helper"),
    "FOREVER_TEST_TIMEOUT": ("ForeverTestTimeout", ""),
    "WaitTimeoutError": ("wait.ErrWaitTimeout", ""),
    "interrupted": ("wait.Interrupted", ""),
    "DoWorkPieceFunc": ("workqueue.DoWorkPieceFunc", ""),
    "HEARTBEAT": ("maxWait (heartbeat)", "10 s"),
    "WAITING_FOR_ADD_CAPACITY": ("waitingForAddCh capacity", "1000"),
    "METRIC_NAMES": ("(workqueue metric names)", ""),
    "get_provider": ("(global metrics provider)", ""),
    "reset_provider_for_tests": ("—", "test helper"),
    "UNFINISHED_WORK_UPDATE_PERIOD": ("unfinishedWorkUpdatePeriod", "500 ms"),
    "new": ("workqueue.New", ""),
    "new_named": ("workqueue.NewNamed", ""),
    "new_with_config": ("workqueue.NewWithConfig", ""),
    "default_queue": ("DefaultQueue", ""),
    "pop": ("Pop", "the package-level helper"),
    "ENV_VAR": ("(KUBE_CACHE_MUTATION_DETECTOR)", ""),
    "DEFAULT_EXPECTED_TYPE_NAME": ("defaultExpectedTypeName", ""),
    "DEFAULT_MIN_WATCH_TIMEOUT": ("minWatchTimeout", "5 min"),
    "DEFAULT_BATCH_SIZE": ("(RealFIFO batch size)", ""),
    "SYNCED_POLL_PERIOD": ("syncedPollPeriod", "100 ms"),
    "MINIMUM_RESYNC_PERIOD": ("minimumResyncPeriod", "1 s"),
    "NAMESPACE_ALL": ("metav1.NamespaceAll", ""),
    "notify_sync_changed": ("—", "wakes wait_for_cache_sync when something synced"),
    "wait_sync_changed": ("—", "waits for notify_sync_changed (or a timeout)"),
    "TokenBucket": ("rate.Limiter (golang.org/x/time/rate)", "token bucket with reserve"),
    "load": ("—", "a C part, or None when not built or built from other sources"),
    "matches_sources": ("—", "was a C part built from the sources beside it?"),
    "source_hash": ("—", "the hash setup.py compiles into a C part"),
    "SOURCES": ("—", "each C part's sources and headers"),
    # client_cache.crd: kube-rs's derive, not client-go
    "client_cache.crd.crd": ("—", "kube-rs CustomResourceExt::crd()"),
    "client_cache.crd.custom_resource": ("—", "kube-rs #[derive(CustomResource)] and #[kube(...)]"),
    "client_cache.crd.install_crd": ("—", "create or update a CRD, wait until Established"),
    "client_cache.crd.CRDNotEstablishedError": ("—", "install_crd's timeout"),
    "client_cache.crd.PrinterColumn": ("—", "kube-rs #[kube(printcolumn)]"),
    "client_cache.crd.ScaleSubresource": ("—", "kube-rs #[kube(scale)]"),
    "client_cache.crd.ResourceInfo": ("—", "what #[kube(...)] records: group, version, kind..."),
    "client_cache.crd.resource_info": ("—", "kube-rs Resource::group/version/kind/plural"),
    "client_cache.crd.structural_schema": ("—", "kube-rs's schemars-derived structural schema"),
    "client_cache.crd.UnsupportedSchemaError": ("—", "a type with no structural schema"),
    "client_cache.crd.version_schema": ("—", "one version's openAPIV3Schema"),
    "client_cache.crd.CustomResource": ("—", "the base of a declared resource (kube-rs: the "
                                        "struct #[derive(CustomResource)] generates)"),
    "client_cache.crd.ObjectMeta": ("—", "struct mode's V1ObjectMeta (kube-rs ObjectMeta)"),
    "client_cache.crd.from_wire": ("—", "serde_json::from_value"),
    "client_cache.crd.generate": ("—", "kube-rs kopium"),
    "client_cache.crd.Generated": ("—", "generate's module source and what it could not "
                                   "express"),
    "client_cache.crd.patch_status": ("—", "kube-rs Api::patch_status; client-go "
                                      "UpdateStatus"),
    # client_cache.sharding: no upstream library has it (timebertt's design, rebuilt)
    "sharding_check": ("—", "liveness: the membership Lease is being renewed"),
    "ShardingProvider": ("—", "Prometheus shard_* metrics"),
    "client_cache.runtime.sharded.ShardGate": ("—", "a controller's membership and "
                                               "handovers"),
    "client_cache.sharding.DEFAULT_VIRTUAL_NODES": ("—", "points per member on the ring"),
    "client_cache.sharding.HashRing": ("—", "sharding's consistent-hash ring "
                                       "(timebertt's ring package)"),
    "client_cache.sharding.key_hash": ("—", "a key's place on the ring"),
    "client_cache.sharding.RING_LABEL": ("—", "the label of a ring's membership Leases"),
    "client_cache.sharding.VIEW_ANNOTATION": ("—", "the members a Lease's holder acts on"),
    "client_cache.sharding.ShardingConfig": ("—", "beside LeaderElectionConfig"),
    "client_cache.sharding.ShardingConfigError": ("—", "a configuration that cannot work"),
    "client_cache.sharding.ShardingError": ("—", "a failed membership health check"),
    "client_cache.sharding.ShardMember": ("—", "one replica's membership Lease and claims"),
    "client_cache.sharding.shard_key": ("—", "the controller owner's key, else the object's"),
    "client_cache.sharding.WorkerGroup": ("—", "N supervised worker processes"),
    "client_cache.sharding.run_workers": ("—", "WorkerGroup until SIGINT/SIGTERM"),
    "client_cache.sharding.ShardingMetricsProvider": ("—", "as leaderelection.MetricsProvider"),
    "client_cache.sharding.NoopShardingMetricsProvider": ("—", "the default provider"),
    "client_cache.sharding.get_sharding_metrics_provider": ("—", ""),
    "client_cache.sharding.set_sharding_metrics_provider": ("—", ""),
    "client_cache.sharding.config.MODES": ("—", "hash or labels"),
    "client_cache.sharding._sharder.Sharder": ("—", "timebertt's sharder: labels objects, "
                                              "drains them"),
    "client_cache.sharding._sharder.release_patch": ("—", "the merge patch letting an "
                                                    "object go"),
}


def override(name: str, where: str) -> tuple[str, str] | None:
    """The OVERRIDES row of ``name`` exported from module ``where``: its qualified name's
    (``client_cache.runtime.Controller``) before its bare name's, so that two names alike
    in two modules (client-go's ``Controller``, kube-rs's) each get their own."""
    return OVERRIDES.get(f"{where}.{name}", OVERRIDES.get(name))


def go_name(name: str, where: str = "") -> str:
    found = override(name, where)
    if found is not None:
        return found[0]
    if name[:1].isupper() and not name.isupper():
        return name  # classes keep their Go name
    parts = name.lower().split("_")
    return "".join(ACRONYMS.get(p, p.capitalize()) for p in parts if p)


def exports() -> dict[tuple[str, str], tuple[str, str]]:
    """(name, identity) -> (module whose section lists it, shortest module exporting it).
    A class or function is one row wherever it is re-exported (its identity is the
    module defining it); two objects of one name are two rows."""
    modules = ["client_cache", *sorted(
        m.name for m in pkgutil.walk_packages(client_cache.__path__, "client_cache.")
        # importing __main__ would run it; an underscored module is machinery, not API
        if not any(part.startswith("_") for part in m.name.split(".")))]
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            defined = inspect.isclass(obj) or inspect.isfunction(obj)
            home = getattr(obj, "__module__", "") if defined else ""
            key = (name, home)
            # tools/cache names share one section, as they share one Go package
            if home not in PACKAGES and not home.startswith("client_cache.workqueue"):
                home = module_name
            if key in found:  # import it from the shortest module that exports it
                first, shortest = found[key]
                found[key] = (first, min(shortest, module_name, key=len))
            else:
                found[key] = (home, module_name)
    return found


def group(module: str) -> str:
    if module.startswith("client_cache.workqueue"):
        return "client_cache.workqueue"
    return module


def render() -> str:
    rows: dict[str, list[tuple[str, str, str, str]]] = {}
    for (name, _), (home, where) in exports().items():
        remark = (override(name, where) or ("", ""))[1]
        go = go_name(name, where)
        if re.fullmatch(r"[a-z][A-Za-z0-9]*", go.split(" (")[0]) and go not in GO_KEYWORDS:
            remark = "; ".join(r for r in ("unexported in Go", remark) if r)
        rows.setdefault(group(home), []).append((name, go, where, remark))
    out = [
        "# client-go -> client_cache: every exported name",
        "",
        "Generated by `python tools/gen_mapping.py`; `tests/test_docs.py` checks that it covers",
        "every name in `client_cache.__all__` and in each submodule's `__all__`. Go names",
        "are given without their package where the section's package says it; `—` marks",
        "names that exist only in this port. The naming rules (snake_case for functions and",
        "methods, UPPER_CASE constants, exceptions for error returns, float seconds for",
        "durations, `threading.Event` for stop channels) are in [Differences from",
        "Go](concepts/differences.md). A Go name marked \"unexported in Go\" is internal",
        "there (lowercase): this port exposes it. The Go names are client-go v0.36's",
        "(and apimachinery's and apiserver's of Kubernetes v1.36); what of v0.36 is not",
        "ported yet is listed in [Differences from Go](concepts/differences.md).",
        "",
    ]
    for module in sorted(rows, key=lambda m: (m != "client_cache", m)):
        package = PACKAGES.get(module, f"{CLIENT_GO}/tools/cache")
        out += [f"## `{module}`", "", f"Go: `{package}`", "",
                "| Python | import from | Go | Notes |", "|---|---|---|---|"]
        for name, go, where, remark in sorted(rows[module], key=lambda r: r[0].lower()):
            go_cell = go if go == "—" else f"`{go}`"
            out.append(f"| `{name}` | `{where}` | {go_cell} | {remark} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    target = Path(__file__).resolve().parent.parent / "docs" / "mapping.md"
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if target.read_text(encoding="utf-8") == text else 1)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
