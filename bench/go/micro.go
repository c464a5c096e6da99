package main

// S4 (indexer and lister) and S5 (workqueue) of the comparison, with client-go's own
// cache.Indexer, PodLister and workqueue, mirroring bench/contenders.py's s4 and s5.

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// samplePod is the Go twin of the load generator's pod: 100 namespaces, nodes
// node-{i%500}, labels app=web-{i%10}.
func samplePod(i int) *corev1.Pod {
	env := make([]corev1.EnvVar, 12)
	for k := range env {
		env[k] = corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", k), Value: fmt.Sprintf("value-%d-%d", k, i)}
	}
	yes := true
	conditions := []corev1.PodCondition{}
	for _, t := range []corev1.PodConditionType{"Initialized", "Ready", "ContainersReady", "PodScheduled"} {
		conditions = append(conditions, corev1.PodCondition{Type: t, Status: "True"})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%d", i), Namespace: fmt.Sprintf("ns-%d", i%100),
			UID: types.UID("uid-" + strconv.Itoa(i)), ResourceVersion: strconv.Itoa(i + 1),
			Labels: map[string]string{"app": fmt.Sprintf("web-%d", i%10), "tier": "frontend",
				"pod-template-hash": "7d9f8c6b5d", "load": "true"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: "web-7d9f8c6b5d", UID: "8b7c6d5e-1111-2222", Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%500),
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/web:1.25.3",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: "TCP"}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("256Mi")},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: "Running", PodIP: fmt.Sprintf("10.0.%d.%d", i%250, i%200),
			Conditions: conditions},
	}
}

// measure calls op with random picks from values for at least seconds; calls per second.
func measure(op func(string), values []string, seconds float64) float64 {
	rng := rand.New(rand.NewSource(7))
	calls := 0
	started := time.Now()
	for {
		for j := 0; j < 50; j++ {
			op(values[rng.Intn(len(values))])
		}
		calls += 50
		if elapsed := time.Since(started).Seconds(); elapsed >= seconds {
			return float64(calls) / elapsed
		}
	}
}

func s4(count int, seconds float64) map[string]interface{} {
	pods := make([]*corev1.Pod, count)
	again := make([]*corev1.Pod, count)
	for i := range pods {
		pods[i] = samplePod(i)
		changed := *pods[i]
		changed.ResourceVersion = strconv.Itoa(count + i + 1)
		again[i] = &changed
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node": func(obj interface{}) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		},
	})
	started := time.Now()
	for _, p := range pods {
		_ = indexer.Add(p)
	}
	adds := float64(count) / time.Since(started).Seconds()
	started = time.Now()
	for _, p := range again {
		_ = indexer.Update(p)
	}
	updates := float64(count) / time.Since(started).Seconds()
	namespaces := make([]string, 100)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("ns-%d", i)
	}
	nodes := make([]string, 500)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%d", i)
	}
	lister := listersv1.NewPodLister(indexer)
	selector := labels.SelectorFromSet(labels.Set{"app": "web-3"})
	if got, _ := indexer.ByIndex(cache.NamespaceIndex, "ns-3"); len(got) != count/100 {
		panic(fmt.Sprintf("namespace index: %d objects", len(got)))
	}
	return map[string]interface{}{
		"scenario": "s4", "objects": count, "add_per_second": adds, "update_per_second": updates,
		"namespace_lookups_per_second": measure(func(ns string) {
			_, _ = indexer.ByIndex(cache.NamespaceIndex, ns)
		}, namespaces, seconds),
		"index_lookups_per_second": measure(func(node string) {
			_, _ = indexer.ByIndex("node", node)
		}, nodes, seconds),
		"selector_lists_per_second": measure(func(ns string) {
			_, _ = lister.Pods(ns).List(selector)
		}, namespaces, seconds),
	}
}

// runPool sends keys distinct keys through add, get, done with workers goroutines.
func runPool(keys, workers int) float64 {
	queue := workqueue.NewTyped[string]()
	var wg sync.WaitGroup
	var mu sync.Mutex
	remaining := keys
	finished := make(chan struct{})
	started := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				item, shutdown := queue.Get()
				if shutdown {
					return
				}
				queue.Done(item)
				mu.Lock()
				remaining--
				if remaining == 0 {
					close(finished)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < keys; i++ {
		queue.Add("ns/key-" + strconv.Itoa(i))
	}
	<-finished
	elapsed := time.Since(started).Seconds()
	queue.ShutDown()
	wg.Wait()
	return float64(keys) / elapsed
}

func s5(keys int) map[string]interface{} {
	return map[string]interface{}{"scenario": "s5", "keys": keys,
		"workers_1_per_second": runPool(keys, 1), "workers_8_per_second": runPool(keys, 8)}
}
