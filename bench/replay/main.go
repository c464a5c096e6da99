// Command replay serves one namespace's pods as a Kubernetes API server would, from files
// written beforehand, at the speed of the socket: a LIST, a watch-list's initial events,
// and a stream of changes that starts when told. Benchmarks use it to measure clients
// with a server that costs nothing (bench/replay.py writes the files and runs it).
//
//	replay -namespace bench -list list.json -initial initial.jsonl -events events.jsonl
//
// It prints its URL (http://127.0.0.1:PORT) on the first line of standard output. Routes:
//
//	GET  /api/v1/namespaces/NS/pods                 the LIST body, whatever the options
//	GET  /api/v1/namespaces/NS/pods?watch=true      with sendInitialEvents=true the initial
//	     events (ending with the bookmark) first; then, on the first watch only, the
//	     change events once /__control/start was called; then nothing until the client
//	     leaves
//	POST /__control/start                           let the change events go
//	GET  /__control/stats                           LISTs, watches and watch-lists served
//	GET  /healthz                                   ok
//
// Only loopback is served; any bearer token is accepted. It exits when its standard input
// ends (the parent holds the pipe: the server never outlives it).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

func main() {
	namespace := flag.String("namespace", "bench", "the namespace served")
	listFile := flag.String("list", "", "the PodList JSON body")
	initialFile := flag.String("initial", "", "watch-list initial event lines, bookmark last")
	eventsFile := flag.String("events", "", "change event lines")
	flag.Parse()

	list := mustRead(*listFile)
	initial := mustRead(*initialFile)
	events := mustRead(*eventsFile)
	start := make(chan struct{})
	var once, streamed sync.Once
	var lists, watches, watchLists atomic.Int64

	path := "/api/v1/namespaces/" + *namespace + "/pods"
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/__control/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"lists":%d,"watches":%d,"watchLists":%d}`,
			lists.Load(), watches.Load(), watchLists.Load())
	})
	mux.HandleFunc("/__control/start", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(start) })
		fmt.Fprint(w, `{"result":"started"}`)
	})
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		if query.Get("watch") != "true" && query.Get("watch") != "1" {
			lists.Add(1)
			w.Write(list)
			return
		}
		watches.Add(1)
		flusher := w.(http.Flusher)
		w.WriteHeader(http.StatusOK)
		if query.Get("sendInitialEvents") == "true" {
			watchLists.Add(1)
			w.Write(initial)
		}
		flusher.Flush()
		first := false
		streamed.Do(func() { first = true })
		if first {
			select {
			case <-start:
				writeChunked(w, flusher, events)
			case <-r.Context().Done():
				return
			}
		}
		<-r.Context().Done() // nothing more: hold the watch until the client leaves
	})

	go func() { // our standard input's only writer is the parent: EOF means it is gone
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "http://%s\n", listener.Addr())
	out.Flush()
	log.Fatal(http.Serve(listener, mux))
}

// writeChunked writes the events in pieces of about 1 MiB, flushing each, so that the
// client reads while the rest is written.
func writeChunked(w http.ResponseWriter, flusher http.Flusher, events []byte) {
	const piece = 1 << 20
	for len(events) > 0 {
		n := piece
		if n > len(events) {
			n = len(events)
		}
		if _, err := w.Write(events[:n]); err != nil {
			return
		}
		flusher.Flush()
		events = events[n:]
	}
}

func mustRead(name string) []byte {
	if name == "" {
		return nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		log.Fatal(err)
	}
	return data
}
