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
	latency := flag.Bool("latency", false, "report the delay from the server's write")
	transform := flag.Bool("transform", false, "drop managedFields before caching")
	flag.Parse()

	runtime.GC()
	baseline := rssKB("VmRSS")
	cfg := &rest.Config{Host: *server, BearerToken: *token, QPS: 1000, Burst: 1000}
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(*namespace))
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
	var mu sync.Mutex
	var delays []float64
	recording := atomic.Bool{}
	bump := func(obj interface{}) {
		if *latency && recording.Load() {
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
		count.Add(1)
		last.Store(time.Now().UnixNano())
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
	objects := len(informer.GetStore().ListKeys())
	out := map[string]interface{}{
		"scenario": "sync", "seconds": synced, "objects": objects,
		"rss_kb": rss, "peak_rss_kb": peak, "baseline_rss_kb": baseline,
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	if *events > 0 {
		recording.Store(true)
		fmt.Println("SYNCED")
		total := want + int64(*events**handlers)
		var first time.Time
		for count.Load() == want {
			time.Sleep(100 * time.Microsecond)
		}
		first = time.Now()
		for count.Load() < total {
			time.Sleep(time.Millisecond)
		}
		elapsed := float64(last.Load()-first.UnixNano()) / 1e9
		out = map[string]interface{}{"scenario": "watch", "events": *events,
			"seconds": elapsed, "events_per_second": float64(*events) / elapsed}
		if *latency {
			mu.Lock()
			sort.Float64s(delays)
			out["latency_p50_ms"] = delays[len(delays)/2] * 1000
			out["latency_p99_ms"] = delays[len(delays)*99/100] * 1000
			mu.Unlock()
		}
		line, _ = json.Marshal(out)
		fmt.Println(string(line))
	}
	close(stop)
}
