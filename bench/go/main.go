// Command clientgo-bench runs the client_cache comparison scenarios with client-go itself:
// a SharedIndexInformer on pods (namespace index, counting handlers) against the API
// server given by -server, printing one JSON line per scenario, as bench/contenders.py does
// for the Python contenders.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

func rssKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, field+":") {
			parts := strings.Fields(line)
			v, _ := strconv.ParseInt(parts[1], 10, 64)
			return v
		}
	}
	return -1
}

func main() {
	server := flag.String("server", "", "API server URL")
	token := flag.String("token", "embedded-token", "bearer token")
	namespace := flag.String("namespace", "", "namespace to inform")
	expect := flag.Int("expect", 0, "objects in the namespace at start")
	events := flag.Int("events", 0, "watch scenario: events to wait for after the sync")
	handlers := flag.Int("handlers", 1, "counting handlers")
	transform := flag.Bool("transform", false, "drop managedFields before caching")
	latencyEvents := flag.Int("latency-events", 0, "latency scenario: events after the throughput")
	mode := flag.String("mode", "inform", "inform, s4 (indexer and lister) or s5 (workqueue)")
	objects := flag.Int("objects", 100000, "s4: cached pods")
	seconds := flag.Float64("seconds", 1, "s4: seconds per lookup kind")
	keys := flag.Int("keys", 100000, "s5: keys")
	syncPath := flag.String("sync", "list", "initial sync: list (resourceVersion 0), "+
		"watch-list (sendInitialEvents) or paged (resourceVersion \"\", limit 500)")
	protobuf := flag.Bool("protobuf", false, "protobuf (real API servers only); default JSON")
	caFile := flag.String("ca-file", "", "the server's CA (https servers)")
	flag.Parse()
	// client-go reads its feature gates from the environment on first use: the
	// WatchListClient gate (on by default since v0.35) picks the initial-sync path.
	watchList := "false"
	if *syncPath == "watch-list" {
		watchList = "true"
	} else if *syncPath != "list" && *syncPath != "paged" {
		fmt.Fprintln(os.Stderr, "unknown -sync", *syncPath)
		os.Exit(2)
	}
	os.Setenv("KUBE_FEATURE_WatchListClient", watchList)
	printJSON := func(out map[string]interface{}) {
		line, _ := json.Marshal(out)
		fmt.Println(string(line))
	}
	switch *mode {
	case "s4":
		printJSON(s4(*objects, *seconds))
		return
	case "s5":
		printJSON(s5(*keys))
		return
	}

	runtime.GC()
	baseline := rssKB("VmRSS")
	cfg := &rest.Config{Host: *server, BearerToken: *token, QPS: 1000, Burst: 1000}
	cfg.TLSClientConfig.CAFile = *caFile
	// The typed clients ask for protobuf when nothing is set: say which, either way.
	if *protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	options := []informers.SharedInformerOption{informers.WithNamespace(*namespace)}
	if *syncPath == "paged" {
		// The tweak runs on watches too, before the client sets Watch: the reflector's
		// watches are the requests that allow bookmarks, and they keep their resourceVersion
		// (a watch from "" would first replay every pod as ADDED).
		options = append(options, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if !o.Watch && !o.AllowWatchBookmarks {
				o.ResourceVersion = ""
				o.Limit = 500
			}
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, options...)
	informer := factory.Core().V1().Pods().Informer()
	if *transform {
		_ = informer.SetTransform(func(obj interface{}) (interface{}, error) {
			if pod, ok := obj.(*corev1.Pod); ok {
				pod.ManagedFields = nil
			}
			return obj, nil
		})
	}
	var count atomic.Int64
	var last atomic.Int64
	// the handler stamps when the count reaches mark, so a poll that wakes late cannot
	// shorten the measured span
	var mark, marked atomic.Int64
	mark.Store(-1)
	var mu sync.Mutex
	var delays []float64
	recording := atomic.Bool{}
	bump := func(obj interface{}) {
		if recording.Load() {
			if pod, ok := obj.(*corev1.Pod); ok {
				if written, err := strconv.ParseFloat(
					pod.Annotations["bench.client-cache.io/written-at"], 64); err == nil {
					now := float64(time.Now().UnixNano()) / 1e9
					mu.Lock()
					delays = append(delays, now-written)
					mu.Unlock()
				}
			}
		}
		now := time.Now().UnixNano()
		last.Store(now) // before the count, which the main thread waits on
		n := count.Add(1)
		if n == mark.Load() {
			marked.Store(now)
		}
	}
	for i := 0; i < *handlers; i++ {
		informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { bump(obj) },
			UpdateFunc: func(old, obj interface{}) { bump(obj) },
			DeleteFunc: func(obj interface{}) { bump(obj) },
		})
	}
	stop := make(chan struct{})
	start := time.Now()
	factory.Start(stop)
	cache.WaitForCacheSync(stop, informer.HasSynced)
	want := int64(*expect * *handlers)
	for count.Load() < want {
		time.Sleep(time.Millisecond)
	}
	synced := time.Since(start).Seconds()
	peak := rssKB("VmHWM")
	runtime.GC()
	debug.FreeOSMemory()
	rss := rssKB("VmRSS")
	cached := len(informer.GetStore().ListKeys())
	printJSON(map[string]interface{}{
		"scenario": "sync", "seconds": synced, "objects": cached,
		"rss_kb": rss, "peak_rss_kb": peak, "baseline_rss_kb": baseline,
	})
	seen := want
	if *events > 0 {
		if extra := count.Load() - seen; extra > 0 { // the mark would never be hit
			fmt.Fprintln(os.Stderr, extra, "handler calls more than the sync's before the throughput phase")
			os.Exit(1)
		}
		mark.Store(seen + 1)
		fmt.Println("READY throughput")
		seen += int64(*events * *handlers)
		for count.Load() < seen {
			time.Sleep(time.Millisecond)
		}
		elapsed := float64(last.Load()-marked.Load()) / 1e9
		printJSON(map[string]interface{}{"scenario": "throughput", "events": *events,
			"seconds": elapsed, "events_per_second": float64(*events) / elapsed})
	}
	if *latencyEvents > 0 {
		recording.Store(true)
		fmt.Println("READY latency")
		seen += int64(*latencyEvents * *handlers)
		for count.Load() < seen {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		sort.Float64s(delays)
		printJSON(map[string]interface{}{"scenario": "latency", "events": len(delays),
			"latency_p50_ms": delays[len(delays)/2] * 1000,
			"latency_p99_ms": delays[len(delays)*99/100] * 1000})
		mu.Unlock()
	}
	close(stop)
}
