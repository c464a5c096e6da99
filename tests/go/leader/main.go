// A client-go leader-election candidate for the Go/Python handover test: it runs one
// elector on a Lease and prints one JSON line per event ({"e": "leading"}, "stopped",
// "leader" with the new leader's identity, "exit"); the Python harness stamps them as they
// arrive. SIGTERM, SIGINT or the end of its standard input (its parent is gone) cancels its
// context (releasing the Lease with -release).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

var outMu sync.Mutex

func emit(kind string, fields map[string]string) {
	line := map[string]string{"e": kind}
	for k, v := range fields {
		line[k] = v
	}
	data, _ := json.Marshal(line)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(data, '\n'))
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	id := flag.String("id", "", "this candidate's identity")
	lease := flag.String("lease", "candidates", "Lease name")
	namespace := flag.String("namespace", "default", "Lease namespace")
	leaseDuration := flag.Duration("lease-duration", 3*time.Second, "lease duration")
	renewDeadline := flag.Duration("renew-deadline", 2*time.Second, "renew deadline")
	retryPeriod := flag.Duration("retry-period", 250*time.Millisecond, "retry period")
	release := flag.Bool("release", false, "release the Lease when stopped")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		panic(err)
	}
	// JSON: the embedded test server speaks no protobuf (client-go's typed default)
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	client := kubernetes.NewForConfigOrDie(config)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: *lease, Namespace: *namespace},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *id},
	}
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		cancel()
	}()
	go func() { // stdin's only writer is the parent: its end means the parent is gone
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: *release,
		Name:            *lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				emit("leading", nil)
				<-leading.Done()
				emit("stopped", nil)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				emit("leader", map[string]string{"leader": identity})
			},
		},
	})
	emit("exit", nil)
}
